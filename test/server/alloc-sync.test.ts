// The node's incremental allocation sync against a real Server over real
// HTTP, through the agent's own ServerApi and AllocWatcher: the blocking
// read answers IDs and alloc modify indexes, and brings the allocations
// the server changed (new, stopped, moved to a new job version) itself, so
// the node needs no pull; a job comes once per version; the node is not
// sent its own status reports back (they do not even end its blocking
// read), and learns of an allocation the server collected. A node of an
// older build (no `since`) still gets the indexes alone and pulls.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AllocWatcher, ServerApi, type AllocUpdate, type NodeAllocation } from '../../src/client/serverconn/index.js';
import type { AllocIndexesAnswer, Allocation, Job, Node } from '../../src/structs/index.js';
import { eventually } from '../support/eventually.js';
import { registration } from '../support/nomad-jobs.js';
import { fingerprint, startServer, TOKENS, type Harness } from './_harness.js';

let h: Harness;
let api: ServerApi;
let watcher: AllocWatcher;
let nodeId: string;
const updates: Array<{ index: number; update: AllocUpdate }> = [];

const webJob = (cpuMhz: number) => ({
  job: { id: 'web', groups: [{ name: 'web', count: 3, tasks: [{ name: 'srv', driver: 'exec', resources: { cpuMhz, memoryMb: 64 } }] }] },
});

/** The next change handed on after the `seen` first ones. */
function updateAfter(seen: number): Promise<AllocUpdate> {
  return eventually(`change #${seen + 1} from the watcher`, () => updates[seen]?.update);
}

/** Reports a client status (written once the call returns). */
async function report(ids: readonly string[], clientStatus: string): Promise<void> {
  const res = await h.call<{ index: number }>('POST', `/v1/internal/node/${nodeId}/allocations`, {
    token: TOKENS.node,
    body: { allocations: ids.map((id) => ({ id, clientStatus })) },
  });
  assert.equal(res.status, 200);
}

before(async () => {
  h = await startServer();
  const reg = await h.call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('sync-node') } });
  nodeId = reg.body.node.id;
  api = new ServerApi({ address: h.url, token: TOKENS.node });
  watcher = new AllocWatcher({ api, nodeId, waitMs: 30_000, onAllocations: (_all, index, update) => void updates.push({ index, update }) });
  watcher.start();
  await watcher.waitFirstList();
});

after(async () => {
  await watcher?.stop();
  api?.close();
  await h?.close();
});

describe('incremental allocation sync', () => {
  it('sends only what the server changed, each job once per version, and never the node its own reports', async () => {
    assert.equal(updates[0]?.update.current.size, 0, 'the first change of an empty node lists nothing');

    // Three new allocations of one job: they come with the indexes (no pull), the job sent once.
    let seen = updates.length;
    let counts = watcher.counts;
    assert.equal((await h.call('PUT', '/v1/jobs', { body: registration(webJob(100).job) })).status, 200);
    let u = await updateAfter(seen);
    assert.equal(u.changed.length, 3);
    assert.deepEqual(u.removed, []);
    assert.ok(u.changed.every((a) => a.job?.id === 'web' && a.job.version === 0 && a.job === u.changed[0]!.job), 'each allocation carries the one job received');
    assert.deepEqual(delta(counts), { pulls: 0, allocations: 3, jobs: 1 });
    assert.equal(watcher.counts.inlined - counts.inlined, 1, 'the one read brought them');
    const ids = u.changed.map((a) => a.id);

    // The node's own reports send nothing back: its blocking read goes on waiting through them.
    seen = updates.length;
    counts = watcher.counts;
    await report(ids, 'running');
    await report(ids.slice(1), 'running');

    // A new job version updated in place: the three allocations again, the job once more, in the one
    // read the job's write ended (had the reports ended one, the first change would be empty).
    assert.equal((await h.call('PUT', '/v1/jobs', { body: registration(webJob(200).job) })).status, 200);
    u = await updateAfter(seen);
    assert.deepEqual(u.changed.map((a) => a.id).sort(), [...ids].sort());
    assert.ok(u.changed.every((a) => a.jobVersion === 1 && a.job?.version === 1 && a.job.groups[0]!.tasks[0]!.resources.cpuMhz === 200));
    assert.deepEqual(delta(counts), { pulls: 0, allocations: 3, jobs: 1 });
    assert.equal(watcher.counts.reads - counts.reads, 1, 'one read answered since the reports: the job\'s');

    // An operator stops one allocation: it is told to stop and a replacement comes; the job is not resent.
    seen = updates.length;
    counts = watcher.counts;
    const stopped = ids[0]!;
    assert.equal((await h.call('POST', `/v1/allocation/${stopped}/stop`)).status, 200);
    u = await updateAfter(seen);
    const old = u.changed.find((a) => a.id === stopped);
    const replacement = u.changed.find((a) => !ids.includes(a.id));
    assert.equal(old?.desiredStatus, 'stop');
    assert.equal(replacement?.desiredStatus, 'run');
    assert.equal(replacement?.job?.version, 1, 'the replacement carries the job held already');
    assert.equal(u.changed.length, 2);
    assert.deepEqual(delta(counts), { pulls: 0, allocations: 2, jobs: 0 });

    // The stopped allocation finishes and is collected: the node learns it is gone.
    await report([stopped], 'complete');
    seen = updates.length;
    assert.equal((await h.call('PUT', '/v1/system/gc')).status, 200);
    u = await updateAfter(seen);
    assert.deepEqual(u.removed, [stopped]);
    assert.equal(u.current.has(stopped), false);

    // What the node holds is the server's whole list, field for field but for its own reports.
    const whole = await h.call<Array<Allocation & { job?: Job }>>('GET', `/v1/internal/node/${nodeId}/allocations`, { token: TOKENS.node });
    assert.deepEqual([...u.current.keys()], whole.body.map((a) => a.id));
    for (const a of whole.body) {
      const mine = u.current.get(a.id) as NodeAllocation;
      assert.deepEqual(serverFields(mine), serverFields(a), `allocation ${a.id}`);
      assert.deepEqual(mine.job, a.job);
    }
  });

  it('answers a node of an older build (no since) with the indexes alone, which it then pulls; and sends a node only what changed after its since, and a job it does not name', async () => {
    const held = [...(updates.at(-1)?.update.current.values() ?? [])];
    assert.ok(held.length >= 3);
    const path = `/v1/node/${nodeId}/allocation-indexes`;
    const old = await h.call<AllocIndexesAnswer>('GET', path, { token: TOKENS.node });
    assert.equal(old.status, 200);
    assert.deepEqual(Object.keys(old.body), ['allocations'], 'nothing but the indexes for a node that does not ask');
    assert.deepEqual(Object.keys(old.body.allocations).sort(), held.map((a) => a.id).sort());
    const pulled = await h.call<{ allocations: Allocation[] }>('POST', `/v1/node/${nodeId}/allocations/pull`, { token: TOKENS.node, body: { ids: Object.keys(old.body.allocations) } });
    assert.equal(pulled.status, 200);
    assert.deepEqual(pulled.body.allocations.map((a) => a.id).sort(), held.map((a) => a.id).sort());

    // From 0 (a node that holds nothing): every allocation, and each job it does not name.
    const web = held.find((a) => a.jobId === 'web')!.job!;
    const heldWeb = JSON.stringify([[web.namespace, web.id, web.createIndex, web.version]]);
    const all = await h.call<AllocIndexesAnswer>('GET', `${path}?since=0&heldJobs=${encodeURIComponent(heldWeb)}`, { token: TOKENS.node });
    assert.equal(all.status, 200);
    assert.deepEqual(all.body.pulled?.allocations.map((a) => a.id).sort(), held.map((a) => a.id).sort());
    assert.ok(all.body.pulled!.allocations.every((a) => !('metrics' in a)), 'sent as a pull sends them, without metrics');
    assert.deepEqual(all.body.pulled!.jobs.map((j) => j.id).sort(), [...new Set(held.map((a) => a.jobId))].filter((id) => id !== 'web').sort(), 'the job named is not sent');

    // From the answer's own index: nothing changed since, nothing sent.
    const index = Number(all.headers.get('x-nomad-index'));
    const none = await h.call<AllocIndexesAnswer>('GET', `${path}?since=${index}`, { token: TOKENS.node });
    assert.deepEqual(none.body.pulled, { allocations: [], jobs: [] });

    // From just below the newest alloc modify index: that allocation alone.
    const newest = Math.max(...Object.values(all.body.allocations));
    const some = await h.call<AllocIndexesAnswer>('GET', `${path}?since=${newest - 1}`, { token: TOKENS.node });
    assert.deepEqual(
      some.body.pulled?.allocations.map((a) => a.id),
      Object.entries(all.body.allocations).filter(([, n]) => n === newest).map(([id]) => id),
    );

    const bad = await h.call<{ details: { field: string } }>('GET', `${path}?since=0&heldJobs=${encodeURIComponent('[["default","web"]]')}`, { token: TOKENS.node });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.details.field, 'heldJobs');
  });

  it('names the node that is not known, and refuses a malformed pull with the field', async () => {
    const unknown = await h.call<{ code: string }>('GET', '/v1/node/nobody/allocation-indexes', { token: TOKENS.node });
    assert.equal(unknown.status, 404);
    assert.match((unknown.body as unknown as { message: string }).message, /node "nobody" not found/);
    const bad = await h.call<{ code: string; details: { field: string } }>('POST', `/v1/node/${nodeId}/allocations/pull`, { token: TOKENS.node, body: { ids: 'all' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.details.field, 'ids');
    const held = await h.call<{ details: { field: string } }>('POST', `/v1/node/${nodeId}/allocations/pull`, { token: TOKENS.node, body: { ids: [], heldJobs: [{ id: 'web' }] } });
    assert.equal(held.status, 400);
    assert.equal(held.body.details.field, 'heldJobs[0]');
    const reader = await h.call<{ jobs: Job[] }>('POST', `/v1/node/${nodeId}/allocations/pull`, { token: TOKENS.readOnly, body: { ids: [...(updates.at(-1)?.update.current.keys() ?? [])] } });
    assert.equal(reader.status, 200);
    assert.equal(reader.body.jobs.length, 1, 'a reader may pull too (one job for all allocations)');
  });

  it("does not count a node's pull (a read sent as POST) as a user's write: what waits for the API to be quiet does not wait on it", async () => {
    const before = h.server.userWritesSeen;
    const pulled = await h.call<{ jobs: Job[] }>('POST', `/v1/node/${nodeId}/allocations/pull`, { token: TOKENS.node, body: { ids: [] } });
    assert.equal(pulled.status, 200);
    assert.equal(h.server.userWritesSeen, before, 'a node pulling its allocations is no user write');
    assert.equal((await h.call('PUT', '/v1/system/gc')).status, 200);
    assert.equal(h.server.userWritesSeen, before + 1, "a user's write is counted");
  });

  it("sends the node its allocations without their placement metrics, which the allocation's API still answers", async () => {
    const seen = updates.length;
    assert.equal((await h.call('PUT', '/v1/jobs', { body: registration({ id: 'scored', type: 'batch', groups: [{ name: 'g', count: 1, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 10, memoryMb: 16 } }] }] }) })).status, 200);
    const u = await updateAfter(seen);
    const pulled = u.changed.find((a) => a.jobId === 'scored');
    assert.ok(pulled, 'the new allocation was pulled');
    assert.equal('metrics' in pulled, false, 'pulled without metrics');
    const whole = await h.call<Allocation[]>('GET', `/v1/internal/node/${nodeId}/allocations`, { token: TOKENS.node });
    assert.ok(whole.body.length > 0 && whole.body.every((a) => !('metrics' in a)), 'the whole list has none either');
    const shown = await h.call<{ Metrics: { NodesEvaluated: number; ScoreMetaData: Array<{ NodeID: string }> } | null }>('GET', `/v1/allocation/${pulled.id}`);
    assert.equal(shown.body.Metrics?.NodesEvaluated, 1);
    assert.deepEqual(shown.body.Metrics?.ScoreMetaData.map((s) => s.NodeID), [nodeId]);
  });
});

function delta(before: { pulls: number; allocations: number; jobs: number }): { pulls: number; allocations: number; jobs: number } {
  const now = watcher.counts;
  return { pulls: now.pulls - before.pulls, allocations: now.allocations - before.allocations, jobs: now.jobs - before.jobs };
}

/** An allocation without the fields its node reports (and without its job). */
function serverFields(a: NodeAllocation): Record<string, unknown> {
  const { job: _j, clientStatus: _cs, clientDescription: _cd, taskStates: _t, network: _n, checks: _c, modifyTime: _mt, modifyIndex: _mi, ...rest } = a;
  return rest;
}
