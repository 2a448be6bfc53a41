// `job plan` shows what `job run` will do: a rolling update whose canary takes
// its predecessor's per-alloc volume is planned as placed (the predecessor's
// claim is freed by the same update), and the run places it there once the
// claim is released. Real SQLite store and job service, a manual clock.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { registerScheduled } from '../../../test/support/scheduled-jobs.js';
import { testClaim, testPlugin, testVolume } from '../../../test/support/server-rows.js';
import { rowKey, SqliteStateStore } from '../state/index.js';
import { JobService } from './job-service.js';

let dir: string;
let store: SqliteStateStore;
let jobs: JobService;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-plan-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
  store.writeNow((txn) => {
    txn.put('nodes', testNode('n1', { plugin: { id: 'fake' } }));
    // No node plugin here: the volumes can only be used on n1.
    txn.put('nodes', testNode('n2'));
    txn.put('plugins', testPlugin({ nodes: { n1: {} } }));
    for (const i of [0, 1]) txn.put('volumes', testVolume('single-node-writer', 'file-system', { id: `data[${i}]`, name: `data[${i}]`, externalId: `ext-data-${i}` }));
  });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Version `v` of a 2-allocation job, each with its own single-node-writer volume, rolling with one canary. */
const job = (v: string) => ({
  id: 'db',
  groups: [
    {
      name: 'g',
      count: 2,
      update: { maxParallel: 1, canary: 1, healthCheck: 'task_states', minHealthyTimeMs: '1s', healthyDeadlineMs: '10s', progressDeadlineMs: '1m' },
      volumes: { data: { type: 'csi', source: 'data', perAlloc: true, accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
      tasks: [{ name: 't', driver: 'exec', env: { V: v }, volumeMounts: [{ volume: 'data', destination: '/data' }], resources: { cpuMhz: 10, memoryMb: 10 } }],
    },
  ],
});

describe('job plan', () => {
  it('plans a canary that takes its predecessor\'s per-alloc volume as placed, where the run places it once the claim is released', async () => {
    await registerScheduled(jobs, store, job('1'));
    const first = store.snapshot().list('allocations');
    // Each allocation runs and holds its volume's write claim, as its node would have it.
    await store.write((txn) => {
      for (const a of first) {
        txn.put('allocations', { ...a, clientStatus: 'running' });
        txn.put('claims', testClaim(a.id, a.nodeId, { volumeId: `data[${a.index ?? 0}]`, externalVolumeId: `ext-data-${a.index ?? 0}` }));
      }
    });
    const old = first.find((a) => a.index === 0);
    assert.ok(old);

    const plan = jobs.plan(job('2'));
    assert.deepEqual(plan.failedPlacements, {}, 'no false "no free write claim"');
    assert.deepEqual(plan.placements.map((p) => [p.name, p.nodeId]), [['db.g[0]', 'n1']]);
    assert.deepEqual(plan.stops.map((s) => [s.allocId, s.description]), [[old.id, 'replaced by a canary']]);
    assert.deepEqual(plan.diff.groups.find((g) => g.name === 'g')?.updates, { create: 1, destroy: 1, ignore: 1 });

    // The run stops the predecessor and waits for its claim; once released, the canary is placed as planned.
    const run = await registerScheduled(jobs, store, job('2'));
    assert.equal(store.snapshot().get('allocations', rowKey(old.id))?.desiredStatus, 'stop');
    await store.write((txn) => {
      txn.put('allocations', { ...(txn.get('allocations', rowKey(old.id)) as typeof old), clientStatus: 'complete' });
      txn.delete('claims', rowKey('default', 'data[0]', old.id));
    });
    await jobs.evaluate('default', 'db', { trigger: 'blocked-retry', evalId: run.evaluation.id });
    const canary = store.snapshot().list('allocations', { filter: (a) => a.desiredStatus === 'run' && a.jobVersion === 1 });
    assert.deepEqual(canary.map((a) => [a.name, a.nodeId, a.deploymentStatus?.canary]), [['db.g[0]', 'n1', true]]);
  });
});
