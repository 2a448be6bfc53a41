// The AllocWatcher's side of the incremental sync against a scripted server
// (a real HTTP server on loopback, told what to answer next): what it pulls
// and which jobs it says it holds, what it takes from an indexes answer
// that brings the changed allocations (and that a server answering without
// them is pulled from, as before), that it hands on no list older than one
// seen (a stale indexes answer, a pull answered from older state), and that
// a server older than the agent (no such route) is read whole.

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, it } from 'node:test';
import { eventually } from '../../../test/support/eventually.js';
import type { Allocation, Job } from '../../structs/index.js';
import { AllocWatcher, type AllocUpdate } from './alloc-watcher.js';
import { ServerApi } from './server-api.js';

const NODE = 'node-1';
const FAST = { maxAttempts: Infinity, initialDelayMs: 5, maxDelayMs: 20, multiplier: 2, jitter: 0 };

/** One scripted answer: status, X-Nomad-Index, body. */
interface Answer {
  status?: number;
  index: number;
  body: unknown;
}

/**
 * A server whose answers to each route come from a script (each request
 * takes the next answer; the last one is repeated; a blocking read at the
 * index of the answer it would get waits for a new script), and which
 * records every request.
 */
class ScriptedServer {
  readonly requests: Array<{ method: string; path: string; query: URLSearchParams; body: unknown }> = [];
  readonly #queues = new Map<string, Answer[]>();
  readonly #parked: Array<() => void> = [];
  readonly #server = http.createServer((req, res) => void this.#answer(req, res));

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Replaces the answers to `route` (`GET indexes`, `POST pull`, `GET list`) and wakes parked blocking reads. */
  script(route: string, ...answers: Answer[]): void {
    this.#queues.set(route, answers);
    for (const wake of this.#parked.splice(0)) wake();
  }

  async stop(): Promise<void> {
    for (const wake of this.#parked.splice(0)) wake();
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  async #answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? '/', 'http://x');
    const text = Buffer.concat(chunks).toString('utf8');
    this.requests.push({ method: req.method ?? '', path: url.pathname, query: url.searchParams, body: text ? JSON.parse(text) : undefined });
    const route = url.pathname.endsWith('/allocation-indexes') ? 'GET indexes' : url.pathname.endsWith('/pull') ? 'POST pull' : 'GET list';
    const after = url.searchParams.get('index');
    for (;;) {
      const queue = this.#queues.get(route) ?? [];
      const next = queue.length > 1 ? queue.shift() : queue[0];
      if (next && (after === null || next.index !== Number(after))) {
        res.writeHead(next.status ?? 200, { 'content-type': 'application/json', 'x-nomad-index': String(next.index) });
        res.end(JSON.stringify(next.body));
        return;
      }
      if (queue.length > 0 && queue[0] !== next) continue;
      // A blocking read at the index of the last answer: wait for a new script (or the end).
      await new Promise<void>((resolve) => this.#parked.push(resolve));
      if (!this.#server.listening) return void res.destroy();
    }
  }
}

function job(version: number): Job {
  return { namespace: 'default', id: 'web', version, createIndex: 3, modifyIndex: 3 + version, groups: [] } as unknown as Job;
}

function alloc(id: string, modifyIndex: number, extra: Partial<Allocation> = {}): Allocation {
  return { id, namespace: 'default', jobId: 'web', nodeId: NODE, desiredStatus: 'run', clientStatus: 'pending', modifyIndex, createIndex: 1, ...extra } as Allocation;
}

let server: ScriptedServer;
let watcher: AllocWatcher;
let api: ServerApi;

async function startWatcher(opts: { minIndex?: number } = {}): Promise<Array<{ index: number; update: AllocUpdate }>> {
  server = new ScriptedServer();
  api = new ServerApi({ address: await server.start(), token: 'node-token' });
  const seen: Array<{ index: number; update: AllocUpdate }> = [];
  watcher = new AllocWatcher({ api, nodeId: NODE, waitMs: 30_000, backoff: FAST, ...opts, onAllocations: (_all, index, update) => void seen.push({ index, update }) });
  watcher.start();
  return seen;
}

/** Resolves once `seen` holds more than `n` changes. */
async function changes(seen: readonly unknown[], n: number): Promise<void> {
  await eventually(`change #${n + 1} handed on`, () => seen.length > n);
}

/** How many requests of `route` the server got. */
function count(route: (r: { path: string }) => boolean): number {
  return server.requests.filter(route).length;
}

/** Resolves once the watcher sent `n` more requests of `route` than `from`: it has dealt with the answer before. */
async function moreRequests(route: (r: { path: string }) => boolean, from: number, n: number): Promise<void> {
  await eventually(`${n} more requests`, () => count(route) >= from + n);
}

const isPull = (r: { path: string }): boolean => r.path.endsWith('/pull');
const isIndexes = (r: { path: string }): boolean => r.path.endsWith('/allocation-indexes');

afterEach(async () => {
  await watcher?.stop();
  api?.close();
  await server?.stop();
});

describe('AllocWatcher (incremental sync)', () => {
  it('pulls new and changed allocations only, naming the jobs it holds, and hands on removals', async () => {
    const seen = await startWatcher();
    server.script('GET indexes', { index: 10, body: { allocations: { a: 10, b: 10 } } });
    server.script('POST pull', { index: 10, body: { allocations: [alloc('a', 10), alloc('b', 10)], allocModifyIndex: { a: 10, b: 10 }, jobs: [job(0)] } });
    await changes(seen, 0);
    assert.deepEqual(seen[0]!.update.changed.map((a) => [a.id, a.job?.version]), [['a', 0], ['b', 0]]);
    assert.deepEqual((server.requests.find(isPull)!.body as { ids: string[]; heldJobs: unknown[] }).heldJobs, [], 'nothing held yet');

    // b moves to job version 1; a is unchanged (its index is the same); c is new; the pull asks for b and c, holding web@0.
    server.script('POST pull', { index: 14, body: { allocations: [alloc('b', 14, { jobVersion: 1 }), alloc('c', 12)], allocModifyIndex: { b: 14, c: 12 }, jobs: [job(1)] } });
    server.script('GET indexes', { index: 14, body: { allocations: { a: 10, b: 14, c: 12 } } });
    await changes(seen, 1);
    const pull = server.requests.filter(isPull)[1]!.body as { ids: string[]; minIndex: number; heldJobs: unknown[] };
    assert.deepEqual(pull, { ids: ['b', 'c'], minIndex: 14, heldJobs: [{ namespace: 'default', id: 'web', createIndex: 3, version: 0 }] });
    const u = seen[1]!.update;
    assert.deepEqual(u.changed.map((a) => [a.id, a.job?.version]), [['b', 1], ['c', 1]]);
    assert.deepEqual([...u.current.keys()], ['a', 'b', 'c']);
    assert.equal(u.current.get('a')?.job?.version, 0, 'a keeps the job it came with');

    // Only the node's own report moved the index: nothing pulled, an empty change handed on (its index is kept). Then a is collected.
    server.script('GET indexes', { index: 15, body: { allocations: { a: 10, b: 14, c: 12 } } });
    await changes(seen, 2);
    assert.deepEqual([seen[2]!.index, seen[2]!.update.changed, seen[2]!.update.removed, seen[2]!.update.current.size], [15, [], [], 3]);
    server.script('GET indexes', { index: 16, body: { allocations: { b: 14, c: 12 } } });
    await changes(seen, 3);
    assert.equal(server.requests.filter(isPull).length, 2);
    assert.deepEqual(seen[3], { index: 16, update: { changed: [], removed: ['a'], current: seen[3]!.update.current } });
    assert.deepEqual([...seen[3]!.update.current.keys()], ['b', 'c']);
    assert.equal(watcher.lists, 4);
  });

  it('takes the changed allocations an indexes answer brings, naming what it holds (since, heldJobs), and pulls only what the answer left out', async () => {
    const seen = await startWatcher();
    server.script('GET indexes', { index: 10, body: { allocations: { a: 10, b: 10 }, pulled: { allocations: [alloc('a', 10), alloc('b', 10)], jobs: [job(0)] } } });
    await changes(seen, 0);
    assert.deepEqual(seen[0]!.update.changed.map((a) => [a.id, a.job?.version]), [['a', 0], ['b', 0]]);
    const first = server.requests.find(isIndexes)!.query;
    assert.deepEqual([first.get('since'), first.get('heldJobs')], ['0', null], 'holding nothing, it asks for everything');
    assert.equal(count(isPull), 0);
    assert.deepEqual(watcher.counts, { reads: 1, inlined: 1, pulls: 0, allocations: 2, jobs: 1 });

    // b moves to job version 1 and c is new, but the answer brings only b (and web@1): c is pulled, naming web@1 as held.
    server.script('POST pull', { index: 14, body: { allocations: [alloc('c', 12)], allocModifyIndex: { c: 12 }, jobs: [] } });
    server.script('GET indexes', { index: 14, body: { allocations: { a: 10, b: 14, c: 12 }, pulled: { allocations: [alloc('b', 14, { jobVersion: 1 })], jobs: [job(1)] } } });
    await changes(seen, 1);
    const second = server.requests.find((r) => isIndexes(r) && r.query.get('index') === '10')!.query;
    assert.deepEqual([second.get('since'), second.get('heldJobs')], ['10', '[["default","web",3,0]]'], 'what it holds: the list at 10, web@0');
    assert.deepEqual(server.requests.find(isPull)!.body, { ids: ['c'], minIndex: 14, heldJobs: [{ namespace: 'default', id: 'web', createIndex: 3, version: 1 }] });
    const u = seen[1]!.update;
    assert.deepEqual(u.changed.map((a) => [a.id, a.job?.version]), [['b', 1], ['c', 1]]);
    assert.deepEqual([...u.current.keys()], ['a', 'b', 'c']);

    // The node's own report moved the index: the answer brings nothing, nothing is pulled; then b is stopped and comes alone.
    server.script('GET indexes', { index: 15, body: { allocations: { a: 10, b: 14, c: 12 }, pulled: { allocations: [], jobs: [] } } });
    await changes(seen, 2);
    assert.deepEqual(seen[2]!.update.changed, []);
    server.script('GET indexes', { index: 17, body: { allocations: { a: 10, b: 17, c: 12 }, pulled: { allocations: [alloc('b', 17, { jobVersion: 1, desiredStatus: 'stop' })], jobs: [] } } });
    await changes(seen, 3);
    assert.deepEqual(seen[3]!.update.changed.map((a) => [a.id, a.desiredStatus, a.job?.version]), [['b', 'stop', 1]]);
    assert.equal(count(isPull), 1);
  });

  it('names every job it holds when it pulls a new allocation, and gives it the held job when the server sends none', async () => {
    const seen = await startWatcher();
    server.script('GET indexes', { index: 10, body: { allocations: { a: 10 } } });
    server.script('POST pull', { index: 10, body: { allocations: [alloc('a', 10)], allocModifyIndex: { a: 10 }, jobs: [job(0)] } });
    await changes(seen, 0);
    // Only c is new (a is unchanged): the node still says it holds web@0, and the server, seeing that, sends no job.
    server.script('POST pull', { index: 12, body: { allocations: [alloc('c', 12)], allocModifyIndex: { c: 12 }, jobs: [] } });
    server.script('GET indexes', { index: 12, body: { allocations: { a: 10, c: 12 } } });
    await changes(seen, 1);
    const pull = server.requests.filter(isPull)[1]!.body as { ids: string[]; heldJobs: unknown[] };
    assert.deepEqual(pull, { ids: ['c'], minIndex: 12, heldJobs: [{ namespace: 'default', id: 'web', createIndex: 3, version: 0 }] });
    assert.deepEqual(seen[1]!.update.changed.map((a) => [a.id, a.job?.version]), [['c', 0]], 'c runs the job the node held');
  });

  it('hands on no list older than one seen: a stale indexes answer, or a pull answered from older state', async () => {
    const seen = await startWatcher({ minIndex: 20 });
    // A server behind what the agent acted on before its restart (it never heard of a): ignored.
    server.script('GET indexes', { index: 15, body: { allocations: {} } });
    await moreRequests(isIndexes, 0, 2);
    assert.equal(seen.length, 0);
    assert.equal(server.requests.filter(isPull).length, 0);

    // Caught up; but the pull is answered by state older than the indexes (another server, behind): retried.
    server.script('POST pull', { index: 18, body: { allocations: [], allocModifyIndex: {}, jobs: [] } }, { index: 21, body: { allocations: [alloc('a', 21)], allocModifyIndex: { a: 21 }, jobs: [job(0)] } });
    server.script('GET indexes', { index: 21, body: { allocations: { a: 21 } } });
    await changes(seen, 0);
    assert.equal(server.requests.filter(isPull).length, 2);
    assert.deepEqual(seen[0]!.update.changed.map((a) => a.id), ['a']);
    assert.equal(seen[0]!.index, 21);

    // Then a stale server answers without a: never handed on, a stays.
    const reads = count(isIndexes);
    server.script('GET indexes', { index: 19, body: { allocations: {} } });
    await moreRequests(isIndexes, reads, 2);
    assert.equal(watcher.index, 21);
    server.script('GET indexes', { index: 22, body: { allocations: { a: 21 } } });
    await changes(seen, 1);
    assert.deepEqual([seen[1]!.index, seen[1]!.update.changed, seen[1]!.update.removed], [22, [], []], 'the stale lists were never handed on');
  });

  it('reads whole lists from a server older than the agent, handing on what changed', async () => {
    const seen = await startWatcher();
    server.script('GET indexes', { status: 404, index: 0, body: { code: 'NOT_FOUND', message: 'no route GET /v1/node/node-1/allocation-indexes', details: {} } });
    server.script('GET list', { index: 7, body: [{ ...alloc('a', 5), job: job(0) }, { ...alloc('b', 7), job: job(0) }] });
    await changes(seen, 0);
    assert.deepEqual(seen[0]!.update.changed.map((a) => a.id), ['a', 'b']);
    server.script('GET list', { index: 9, body: [{ ...alloc('b', 9, { desiredStatus: 'stop' }), job: job(0) }] });
    await changes(seen, 1);
    assert.deepEqual(seen[1]!.update.changed.map((a) => [a.id, a.desiredStatus]), [['b', 'stop']]);
    assert.deepEqual(seen[1]!.update.removed, ['a']);
    assert.equal(server.requests.filter(isPull).length, 0);
  });
});
