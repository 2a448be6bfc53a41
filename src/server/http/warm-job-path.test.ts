// The warm-up of a job's registration path (run by a dev agent once it idles)
// plans a sample job for real and leaves no trace: the store's index, its
// jobs, evaluations, allocations and event stream are as before. Real SQLite
// store and job service.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { JobService } from '../jobs/index.js';
import { SqliteStateStore } from '../state/index.js';
import { warmJobPath } from './warm-job-path.js';

let dir: string;
let store: SqliteStateStore;
let jobs: JobService;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-warm-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
  store.writeNow((txn) => txn.put('nodes', testNode('n1', { drivers: { raw_exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host'] } } })));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('warmJobPath', () => {
  it('plans a sample job onto a node and writes nothing: index, jobs, evaluations, allocations and events unchanged', () => {
    const before = store.snapshot();
    const eventsBefore = store.snapshot().events(0);
    const answer = warmJobPath(jobs, before.index);
    assert.equal(answer.Annotations?.DesiredTGUpdates?.['g']?.Place, 1, 'the sample job was planned as placed');
    const after = store.snapshot();
    assert.equal(after.index, before.index);
    for (const table of ['jobs', 'evaluations', 'allocations', 'jobVersions', 'deployments'] as const) assert.deepEqual(after.list(table), [], table);
    assert.deepEqual(store.snapshot().events(0), eventsBefore);
  });

  it('leaves no trace however many rounds the agent runs while idle', () => {
    const before = store.snapshot();
    for (let round = 0; round < 50; round++) warmJobPath(jobs, before.index);
    const after = store.snapshot();
    assert.equal(after.index, before.index);
    for (const table of ['jobs', 'evaluations', 'allocations', 'jobVersions', 'deployments'] as const) assert.deepEqual(after.list(table), [], table);
    assert.deepEqual(store.snapshot().events(0), before.events(0));
  });
});
