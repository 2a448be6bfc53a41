// Nomad's search routes against a real server: a fuzzy search finds a job
// by a piece of its name (and its groups, tasks and command with their
// Scope), a node by its name with its ID as Scope, a volume and a plugin;
// a prefix search lists IDs; the answers are Nomad's shapes (strict); a
// read-only token may search; a short text or an unknown context is refused
// in Nomad's words; more than 20 matches are truncated.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FuzzySearchResponse, SearchResponse } from '../../api/index.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock } from '../../lib/index.js';
import { Server } from '../index.js';
import { testFingerprint as fingerprint, testPlugin, testVolume } from '../../../test/support/server-rows.js';
import { assertShape } from '../../../test/support/strict-schema.js';

const TOKENS = { management: 'search-mgmt-0123456789', readOnly: 'search-read-0123456789', node: 'search-node-0123456789' } as const;
const dir = mkdtempSync(join(tmpdir(), 'berth-search-'));
const server = new Server({
  dataDir: dir,
  clock: new ManualClock(1_700_000_000_000),
  tokens: [
    { name: 'ops', secret: TOKENS.management, role: 'management' },
    { name: 'viewer', secret: TOKENS.readOnly, role: 'read-only' },
    { name: 'agents', secret: TOKENS.node, role: 'node' },
  ],
  heartbeatTtlMs: 30_000,
});
let url = '';
let nodeId = '';

interface Answer<T> {
  status: number;
  body: T;
  text: string;
  headers: Headers;
}

/** One API call (JSON), with the management token unless `token` says otherwise (null: none). */
async function call<T = unknown>(method: string, path: string, o: { body?: unknown; token?: string | null } = {}): Promise<Answer<T>> {
  const token = o.token === undefined ? TOKENS.management : o.token;
  const headers: Record<string, string> = { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) };
  if (o.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(url + path, { method, headers, ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}) });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, text, headers: res.headers };
}


/** Registers a job (Nomad's Job JSON) whose one group runs nothing (count 0). */
async function register(id: string, name = id, command = '/usr/bin/webserve', task = 'nginx-task'): Promise<void> {
  const Job = { ID: id, Name: name, TaskGroups: [{ Name: 'frontend', Count: 0, Tasks: [{ Name: task, Driver: 'raw_exec', Config: { command } }] }] };
  const res = await call('PUT', '/v1/jobs', { body: { Job } });
  assert.equal(res.status, 200, res.text);
}

before(async () => {
  url = (await server.start()).url;
  const reg = await call<{ node: { id: string } }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('search-node-7') } });
  assert.equal(reg.status, 200, reg.text);
  nodeId = reg.body.node.id;
  await register('shop-web', 'Shop Web');
  for (let i = 0; i < 22; i++) await register(`bulk-${String(i).padStart(2, '0')}`, undefined, '/bin/true', 'worker');
  await server.store.write((txn) => {
    txn.put('volumes', testVolume('single-node-writer', 'file-system', { id: 'orders-db', name: 'orders-db' }));
    txn.put('plugins', testPlugin({ extra: { id: 'hostpath-shop' } }));
  });
});
after(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('PUT /v1/search/fuzzy', () => {
  it("finds a job by part of its name, case-insensitive, with its groups', tasks' and command's Scope", async () => {
    const res = await call<FuzzySearchResponse>('PUT', '/v1/search/fuzzy', { body: { Text: 'SHOP', Context: 'all' } });
    assert.equal(res.status, 200, res.text);
    const body = assertShape(FuzzySearchResponse, res.body, 'FuzzySearchResponse');
    assert.deepEqual(body.Matches?.['jobs'], [{ ID: 'Shop Web', Scope: ['default', 'shop-web'] }]);
    assert.deepEqual(body.Matches?.['volumes'], undefined, "orders-db has no 'shop' in it");
    assert.deepEqual(body.Matches?.['plugins'], [{ ID: 'hostpath-shop' }]);
    assert.equal(body.Truncations?.['jobs'], false);
    assert.ok(Number(res.headers.get('x-nomad-index')) >= 1);

    const deeper = await call<FuzzySearchResponse>('PUT', '/v1/search/fuzzy', { body: { Text: 'webserve', Context: 'jobs' } });
    const commands = deeper.body.Matches?.['commands'] ?? [];
    assert.ok(commands.some((m) => m.ID === '/usr/bin/webserve' && m.Scope?.join('/') === 'default/shop-web/frontend/nginx-task'), JSON.stringify(deeper.body));
    const tasks = (await call<FuzzySearchResponse>('POST', '/v1/search/fuzzy', { body: { Text: 'nginx', Context: 'jobs' } })).body.Matches?.['tasks'] ?? [];
    assert.ok(tasks.some((m) => m.ID === 'nginx-task' && m.Scope?.join('/') === 'default/shop-web/frontend'));
  });

  it('finds a node by its name (Scope: its ID) and a volume by its ID (Scope: its namespace), with a read-only token', async () => {
    const nodes = await call<FuzzySearchResponse>('PUT', '/v1/search/fuzzy', { token: TOKENS.readOnly, body: { Text: 'node-7', Context: 'nodes' } });
    assert.equal(nodes.status, 200, nodes.text);
    assert.deepEqual(nodes.body.Matches?.['nodes'], [{ ID: 'search-node-7', Scope: [nodeId] }]);
    assert.equal(nodes.body.Matches?.['jobs'], undefined, 'only the context asked for');
    const vols = await call<FuzzySearchResponse>('PUT', '/v1/search/fuzzy?namespace=*', { token: TOKENS.readOnly, body: { Text: 'orders', Context: 'volumes' } });
    assert.deepEqual(vols.body.Matches?.['volumes'], [{ ID: 'orders-db', Scope: ['default'] }]);
  });

  it('lists the best 20 matches and says the list is truncated', async () => {
    const res = await call<FuzzySearchResponse>('PUT', '/v1/search/fuzzy', { body: { Text: 'bulk', Context: 'jobs' } });
    assert.equal(res.body.Matches?.['jobs']?.length, 20);
    assert.equal(res.body.Matches?.['jobs']?.[0]?.ID, 'bulk-00', 'same place and length: by name');
    assert.equal(res.body.Truncations?.['jobs'], true);
  });

  it('refuses a text shorter than 2 characters and a context Berth does not search, in Nomad words', async () => {
    const short = await call<{ message: string }>('PUT', '/v1/search/fuzzy', { body: { Text: 's', Context: 'all' } });
    assert.equal(short.status, 400);
    assert.match(short.body.message, /fuzzy search query must be at least 2 characters, got 1/);
    const ctx = await call<{ message: string }>('PUT', '/v1/search/fuzzy', { body: { Text: 'shop', Context: 'quotas' } });
    assert.equal(ctx.status, 400);
    assert.match(ctx.body.message, /Context: "quotas"/);
    const noToken = await call('PUT', '/v1/search/fuzzy', { token: null, body: { Text: 'shop' } });
    assert.equal(noToken.status, 401);
  });
});

describe('PUT /v1/search', () => {
  it('lists IDs starting with the prefix per context, sorted', async () => {
    const res = await call<SearchResponse>('PUT', '/v1/search', { body: { Prefix: 'shop', Context: 'all' } });
    assert.equal(res.status, 200, res.text);
    const body = assertShape(SearchResponse, res.body, 'SearchResponse');
    assert.deepEqual(body.Matches?.['jobs'], ['shop-web']);
    assert.deepEqual(body.Matches?.['nodes'], []);
    assert.equal(body.Truncations?.['jobs'], false);
    const nodes = await call<SearchResponse>('PUT', '/v1/search', { body: { Prefix: nodeId.slice(0, 4), Context: 'nodes' } });
    assert.deepEqual(nodes.body.Matches, { nodes: [nodeId] });
    const bulk = await call<SearchResponse>('PUT', '/v1/search', { body: { Prefix: 'bulk-', Context: 'jobs' } });
    assert.equal(bulk.body.Matches?.['jobs']?.length, 20);
    assert.equal(bulk.body.Truncations?.['jobs'], true);
  });
});
