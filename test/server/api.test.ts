// The HTTP API end to end over real HTTP: token roles, the error envelope,
// jobs -> evaluations -> allocations, node endpoints, blocking queries and
// the event stream.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type * as nomad from '../../src/api/index.js';
import type * as Api from '../../src/api/index.js';
import type { Allocation, Job, Node } from '../../src/structs/index.js';
import { request } from 'node:http';
import { connect } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/lib/index.js';
import { nomadJob, registration } from '../support/nomad-jobs.js';
import { fingerprint, startServer, TOKENS, type Harness } from './_harness.js';

let h: Harness;
before(async () => {
  h = await startServer();
});
after(async () => {
  await h.close();
});

const webJob = (count = 2) => ({
  job: { id: 'web', groups: [{ name: 'web', count, tasks: [{ name: 'srv', driver: 'exec', resources: { cpuMhz: 500, memoryMb: 256 } }] }] },
});

describe('HTTP API', () => {
  it('tells a missing token (401) from a token without the role (403)', async () => {
    const none = await h.call('GET', '/v1/jobs', { token: null });
    assert.equal(none.status, 401);
    assert.deepEqual(Object.keys(none.body as object).sort(), ['code', 'details', 'message']);
    assert.equal((none.body as { code: string }).code, 'UNAUTHENTICATED');
    assert.equal((await h.call('GET', '/v1/jobs', { token: 'wrong-token-xxxxxxxx' })).status, 401);

    assert.equal((await h.call('GET', '/v1/jobs', { token: TOKENS.readOnly })).status, 200);
    const roWrite = await h.call('PUT', '/v1/jobs', { token: TOKENS.readOnly, body: registration(webJob().job) });
    assert.equal(roWrite.status, 403);
    assert.equal((roWrite.body as { code: string }).code, 'FORBIDDEN');
    assert.equal((await h.call('GET', '/v1/jobs', { token: TOKENS.node })).status, 403, 'node tokens read only their own endpoints');
    assert.equal((await h.call('POST', '/v1/node/register', { token: TOKENS.readOnly, body: fingerprint('x') })).status, 403);
    assert.equal((await h.call('GET', '/v1/nowhere')).status, 404);
  });

  it('answers validation errors with 400 and every problem with its path', async () => {
    const bad = nomadJob({ id: 'bad', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });
    (bad.TaskGroups![0]!.Tasks![0] as nomad.Task).VolumeMounts = [{ Volume: 'x', Destination: 'rel' } as nomad.VolumeMount];
    const res = await h.call<{ code: string; message: string; details: { problems: Array<{ path: string }> } }>('PUT', '/v1/jobs', { body: { Job: bad } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'INVALID');
    // Each at its path in the body, in Nomad's names.
    assert.deepEqual(res.body.details.problems.map((p) => p.path).sort(), [
      'Job.TaskGroups[0].Tasks[0].VolumeMounts[0].Destination',
      'Job.TaskGroups[0].Tasks[0].VolumeMounts[0].Volume',
    ]);
    const malformed = await fetch(h.url + '/v1/jobs', {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKENS.management}`, 'content-type': 'application/json' },
      body: '{not json',
    });
    assert.equal(malformed.status, 400);
  });

  it('registers a node, places a job on it, and lets the node report status', async () => {
    const reg = await h.call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('n1') } });
    assert.equal(reg.status, 200);
    const nodeId = reg.body.node.id;

    const res = await h.call<nomad.JobRegisterResponse>('PUT', '/v1/jobs', { body: registration(webJob(2).job) });
    assert.equal(res.status, 200);
    // The answer comes once the job and its evaluation are durable; the scheduler runs after.
    const evaluation = await h.settled(res.body.EvalID);
    assert.equal(evaluation.Status, 'complete');
    assert.equal(evaluation.BerthPlaced, 2);

    const allocs = await h.call<Array<Allocation & { job?: Job }>>('GET', `/v1/internal/node/${nodeId}/allocations`, { token: TOKENS.node });
    assert.equal(allocs.status, 200);
    assert.equal(allocs.body.length, 2);
    assert.equal(allocs.body[0]!.job?.id, 'web', 'the node gets the job with its allocations');
    const index = Number(allocs.headers.get('x-nomad-index'));
    assert.ok(index > 0);

    // A blocking read returns when the node's report changes the allocations.
    const waiting = h.call<nomad.AllocationListStub[]>('GET', `/v1/job/web/allocations?index=${index}&wait=20s`, { token: TOKENS.readOnly });
    const report = await h.call('POST', `/v1/internal/node/${nodeId}/allocations`, {
      token: TOKENS.node,
      body: { allocations: allocs.body.map((a) => ({ id: a.id, clientStatus: 'running' })) },
    });
    assert.equal(report.status, 200);
    const woke = await waiting;
    assert.ok(Number(woke.headers.get('x-nomad-index')) > index);
    assert.ok(woke.body.every((a) => a.ClientStatus === 'running'));
    assert.equal((await h.call<nomad.Job>('GET', '/v1/job/web')).body.Status, 'running');

    // A node may not report another node's allocation.
    const other = await h.call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('n2') } });
    const foreign = await h.call('POST', `/v1/internal/node/${other.body.node.id}/allocations`, {
      token: TOKENS.node,
      body: { allocations: [{ id: allocs.body[0]!.id, clientStatus: 'failed' }] },
    });
    assert.equal(foreign.status, 403);
  });

  it("wakes a node's blocking read of its allocations for its own allocations only", async () => {
    const web = (await h.call<nomad.AllocationListStub[]>('GET', '/v1/job/web/allocations')).body;
    const busy = web[0]!.NodeID;
    const nodes = (await h.call<Api.NodeListStub[]>('GET', '/v1/nodes')).body;
    const quiet = nodes.find((n) => !web.some((a) => a.NodeID === n.ID))!.ID;
    const start = Number((await h.call('GET', `/v1/internal/node/${busy}/allocations`, { token: TOKENS.node })).headers.get('x-nomad-index'));
    const gone = new AbortController();
    let quietAnswered = false;
    const quietRead = fetch(`${h.url}/v1/internal/node/${quiet}/allocations?index=${start}&wait=60s`, {
      headers: { authorization: `Bearer ${TOKENS.node}` },
      signal: gone.signal,
    }).then(
      () => (quietAnswered = true),
      () => undefined,
    );
    for (const clientStatus of ['pending', 'running'] as const) {
      const before = Number((await h.call('GET', `/v1/internal/node/${busy}/allocations`, { token: TOKENS.node })).headers.get('x-nomad-index'));
      const waiting = h.call<Allocation[]>('GET', `/v1/internal/node/${busy}/allocations?index=${before}&wait=60s`, { token: TOKENS.node });
      await h.call('POST', `/v1/internal/node/${busy}/allocations`, { token: TOKENS.node, body: { allocations: [{ id: web[0]!.ID, clientStatus }] } });
      const woke = await waiting;
      assert.ok(Number(woke.headers.get('x-nomad-index')) > before, 'the busy node is woken by a change of its allocation');
      assert.equal(woke.body.find((a) => a.id === web[0]!.ID)?.clientStatus, clientStatus);
    }
    assert.equal(quietAnswered, false, "two writes to another node's allocations did not answer the quiet node's read");
    gone.abort();
    await quietRead;
  });

  it('blocking query with a wait returns the current index when nothing changes', async () => {
    const first = await h.call('GET', '/v1/evaluations');
    const index = Number(first.headers.get('x-nomad-index'));
    const again = await h.call('GET', `/v1/evaluations?index=${index}&wait=50ms`);
    assert.equal(again.status, 200);
    assert.equal(Number(again.headers.get('x-nomad-index')), index);
    assert.equal((await h.call('GET', '/v1/evaluations?index=-1')).status, 400);
  });

  it("streams a job's changes as Nomad's frames, filtered by topic", async () => {
    const start = h.server.store.latestIndex() + 1;
    const ac = new AbortController();
    const res = await fetch(`${h.url}/v1/event/stream?topic=Job&topic=Evaluation&index=${start}`, {
      headers: { 'X-Nomad-Token': TOKENS.readOnly },
      signal: ac.signal,
    });
    assert.equal(res.status, 200);
    await h.call('PUT', '/v1/jobs', { body: registration({ id: 'batch1', type: 'batch', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] }) });
    const seen: Array<{ Topic: string; Type: string; Key: string }> = [];
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    while (!(seen.some((e) => e.Topic === 'Job' && e.Key === 'batch1') && seen.some((e) => e.Topic === 'Evaluation'))) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const frame = JSON.parse(l) as { Index?: number; Events?: typeof seen };
        seen.push(...(frame.Events ?? []));
      }
    }
    ac.abort();
    assert.ok(seen.length > 0);
    assert.ok(seen.every((e) => e.Topic === 'Job' || e.Topic === 'Evaluation'), 'only the asked topics');
    assert.equal(seen.find((e) => e.Topic === 'Job')?.Type, 'JobRegistered');
    assert.equal((await h.call('GET', '/v1/event/stream?topic=weather', { token: TOKENS.readOnly })).status, 400);
  });

  it('validates without registering, and updates a job by its path', async () => {
    const ok = await h.call<nomad.JobValidateResponse>('POST', '/v1/validate/job', { body: registration(webJob(1).job) });
    assert.equal(ok.status, 200);
    assert.equal(ok.body.Error, '');
    // Nomad answers a job with problems 200, listing them.
    const missingVolume = await h.call<nomad.JobValidateResponse>('POST', '/v1/validate/job', {
      body: registration({ id: 'v', groups: [{ name: 'g', volumes: { d: { type: 'csi', source: 'nope' } }, tasks: [{ name: 't', driver: 'exec' }] }] }),
    });
    assert.equal(missingVolume.status, 200);
    assert.match(missingVolume.body.ValidationErrors?.[0] ?? '', /^Job\.TaskGroups\[0\]\.Volumes\.d\.Source: /);
    assert.equal((await h.call('GET', '/v1/job/v')).status, 404, 'validation registers nothing');

    const mismatch = await h.call('POST', '/v1/job/other', { body: registration(webJob(3).job) });
    assert.equal(mismatch.status, 400);
    const scaled = await h.submit(webJob(3), { path: '/v1/job/web' });
    assert.equal(scaled.status, 200);
    assert.equal(scaled.body.evaluation?.BerthPlaced, 1);
    assert.equal((await h.call<nomad.Job>('GET', '/v1/job/web')).body.TaskGroups?.[0]?.Count, 3);
    assert.equal((await h.call<nomad.AllocationListStub[]>('GET', '/v1/job/web/allocations')).body.filter((a) => a.DesiredStatus === 'run').length, 3);
  });

  it('refuses a second job running a CSI plugin ID another job runs, and says which', async () => {
    const pluginJob = (id: string) => ({
      job: {
        id,
        type: 'system',
        groups: [{ name: 'p', tasks: [{ name: 'p', driver: 'exec', csiPlugin: { id: 'dup-plugin', type: 'node', mountDir: '/csi' }, resources: { cpuMhz: 10, memoryMb: 16 } }] }],
      },
    });
    assert.equal((await h.call('PUT', '/v1/jobs', { body: registration(pluginJob('plugin-a').job) })).status, 200);
    assert.equal((await h.call('PUT', '/v1/jobs', { body: registration(pluginJob('plugin-a').job) })).status, 200, 'the same job again is an update');
    const second = await h.call<{ code: string; details: { problems: Array<{ path: string; message: string }> } }>('PUT', '/v1/jobs', { body: registration(pluginJob('plugin-b').job) });
    assert.equal(second.status, 400);
    assert.deepEqual(second.body.details.problems, [
      {
        path: 'Job.TaskGroups[0].Tasks[0].CSIPluginConfig.ID',
        message: 'CSI plugin "dup-plugin" is already run by job "default/plugin-a": one job runs a plugin ID (stop that job, or give this plugin another ID)',
      },
    ]);
    assert.equal((await h.call('DELETE', '/v1/job/plugin-a?purge=true')).status, 200);
  });

  it('stops and purges a job (a DELETE with Content-Type: application/json and no body is taken, as Nomad takes it)', async () => {
    const res = await fetch(`${h.url}/v1/job/web`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKENS.management}`, 'content-type': 'application/json' } });
    const stop = { status: res.status, body: (await res.json()) as nomad.JobDeregisterResponse };
    assert.equal(stop.status, 200, JSON.stringify(stop.body));
    assert.equal((await h.settled(stop.body.EvalID)).BerthStopped, 3);
    const allocs = await h.call<nomad.AllocationListStub[]>('GET', '/v1/job/web/allocations');
    assert.ok(allocs.body.every((a) => a.DesiredStatus === 'stop'));
    assert.equal((await h.call('DELETE', '/v1/job/web?purge=true')).status, 200);
    const gone = await h.call('GET', '/v1/job/web', { accept: null });
    assert.equal(gone.status, 404);
    assert.equal(gone.text, 'job not found', "Nomad's words, as plain text");
  });

  it('collects garbage now on PUT /v1/system/gc, for management tokens only, and says what it collected', async () => {
    assert.equal((await h.call('PUT', '/v1/system/gc', { token: TOKENS.readOnly })).status, 403);
    const gc = await h.call<{ Allocations: string[]; Evaluations: string[]; Jobs: string[]; Index: number }>('PUT', '/v1/system/gc');
    assert.equal(gc.status, 200);
    assert.ok(Array.isArray(gc.body.Allocations) && Array.isArray(gc.body.Evaluations) && Array.isArray(gc.body.Jobs));
    assert.ok(gc.body.Evaluations.length > 0, 'the finished evaluations of the jobs above');
    const evals = await h.call<nomad.Evaluation[]>('GET', '/v1/evaluations');
    assert.ok(evals.body.every((e) => e.Status === 'blocked' || e.Status === 'pending'), 'no finished evaluation is left');
  });
});

describe('HTTP API: a body over the limit', () => {
  // A client that writes the whole body before it reads (fetch, the CLI) must
  // read the 413: the server answers once the body arrived, then closes.
  for (const mb of [5, 50]) it(`is answered 413 naming the limit after the body was read, so a client still writing it reads the answer (${mb} MB)`, { timeout: 60_000 }, async () => {
    const size = mb * 1024 * 1024;
    const { hostname, port } = new URL(h.url);
    const socket = connect(Number(port), hostname);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const chunks: Buffer[] = [];
    let answeredEarly = false;
    let bodyWritten = false;
    socket.on('data', (d: Buffer) => {
      if (!bodyWritten) answeredEarly = true;
      chunks.push(d);
    });
    const closed = new Promise<void>((resolve, reject) => socket.once('close', () => resolve()).once('error', reject));
    const write = (b: string | Buffer): Promise<void> => new Promise((resolve, reject) => socket.write(b, (err) => (err ? reject(err) : resolve())));
    await write(`POST /v1/jobs HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${TOKENS.management}\r\nContent-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`);
    const piece = Buffer.alloc(256 * 1024, 0x20);
    for (let sent = 0; sent < size; sent += piece.length) {
      await write(piece);
      // Give the server a moment after the first piece: an answer sent from the headers alone arrives now.
      if (sent === 0) await new Promise((r) => setTimeout(r, 300));
    }
    bodyWritten = true;
    await closed;
    const answer = Buffer.concat(chunks).toString();
    assert.match(answer, /^HTTP\/1\.1 413 /, answer.slice(0, 200));
    assert.match(answer, /too large \(limit 4194304 bytes\)/);
    assert.equal(answeredEarly, false, 'the 413 came before the body was written: a client writing the body first loses it');
    const after = await h.call<unknown[]>('GET', '/v1/jobs');
    assert.equal(after.status, 200);
  });
});

describe('HTTP API logs', () => {
  it('a client that leaves a blocking read logs no error', { timeout: 30_000 }, async () => {
    const lines: string[] = [];
    const logs = new Writable({
      write(chunk: Buffer, _enc, cb) {
        lines.push(chunk.toString());
        cb();
      },
    });
    const quiet = await startServer({ logger: createLogger({ level: 'debug', destination: logs }) });
    try {
      const { headers } = await quiet.call('GET', '/v1/jobs');
      const index = Number(headers.get('x-nomad-index'));
      const read = request(`${quiet.url}/v1/jobs?index=${index}&wait=60s`, { headers: { authorization: `Bearer ${TOKENS.management}` } });
      read.on('error', () => undefined);
      await new Promise<void>((resolve) => read.end(resolve));
      // A request sent after it has been answered: the server took the blocking read in first, and it waits.
      assert.equal((await quiet.call('GET', '/v1/jobs')).status, 200);
      read.destroy();
      while (!lines.some((l) => l.includes('the client went away'))) await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(lines.filter((l) => /"level":(50|60)/.test(l)), []);
    } finally {
      await quiet.close();
    }
  });
});

describe('HTTP API: stopping with blocked reads', () => {
  // Without the abort the stop waits out the reads' five minutes: the timeout fails it first.
  it('answers every blocked read at once when the server stops, however many wait', { timeout: 60_000 }, async () => {
    const s = await startServer();
    let stopped = false;
    try {
      const index = Number((await s.call('GET', '/v1/evaluations')).headers.get('x-nomad-index'));
      // Blocked reads of several kinds, each waiting far longer than the test may run.
      const paths = Array.from({ length: 20 }, (_, i) => (i % 2 ? `/v1/evaluations?index=${index}&wait=5m` : `/v1/jobs?index=${index}&wait=5m`));
      const reads = paths.map((p) => s.call('GET', p).then((r) => r.status, () => 'closed'));
      // Each is blocked before the stop: a write after it would answer it.
      await s.call('GET', `/v1/evaluations?index=${index}&wait=50ms`);
      await s.close();
      stopped = true;
      // Ended, not left to run out their five minutes (the stop waits for requests in flight).
      assert.equal((await Promise.all(reads)).length, paths.length);
    } finally {
      if (!stopped) await s.close();
    }
  });
});
