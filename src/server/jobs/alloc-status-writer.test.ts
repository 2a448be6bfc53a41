// Nodes' status reports on a real SQLite store: a report that repeats what
// the server holds writes nothing, one that changes any reported field
// (a description, a task event, a network) writes the row.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import type { TaskState } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { SqliteStateStore } from '../state/index.js';
import { AllocStatusWriter } from './alloc-status-writer.js';
import { JobService } from './job-service.js';

const running = (at: number): Record<string, TaskState> => ({
  t: { state: 'running', failed: false, restarts: 0, startedAt: at, finishedAt: 0, events: [{ at, type: 'Started', message: 'started', details: {} }] },
});

describe('the allocation status writer', () => {
  let dir: string;
  let store: SqliteStateStore;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-status-writer-'));
    store = SqliteStateStore.open(join(dir, 'state.db'));
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a row only when the report changes one of its fields', async () => {
    await store.write((txn) => txn.put('nodes', testNode('n0')));
    const jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
    await jobs.register({ id: 'once', groups: [{ name: 'g', count: 1, tasks: [{ name: 't', driver: 'exec', config: { command: '/bin/true' }, resources: { cpuMhz: 10, memoryMb: 10 } }] }] });
    while ((await jobs.evaluatePending()).remaining > 0);
    const [alloc] = store.snapshot().list('allocations');
    assert.ok(alloc);
    const writer = new AllocStatusWriter({ store, clock: new ManualClock(2_000_000) });
    const row = () => store.snapshot().get('allocations', alloc.id)!;

    await writer.report('n0', [{ id: alloc.id, clientStatus: 'running', clientDescription: 'Tasks are running', taskStates: running(2_000_000) }]);
    const first = row();
    assert.deepEqual([first.clientStatus, first.modifyTime], ['running', 2_000_000]);

    // The same report again (a node resending after a timeout): the row is left as it is.
    await writer.report('n0', [{ id: alloc.id, clientStatus: 'running', clientDescription: 'Tasks are running', taskStates: running(2_000_000) }]);
    assert.equal(row().modifyIndex, first.modifyIndex, 'a repeated report writes nothing');

    // Only the description changes: written, the status time kept.
    await writer.report('n0', [{ id: alloc.id, clientStatus: 'running', clientDescription: 'still running' }]);
    const described = row();
    assert.ok(described.modifyIndex > first.modifyIndex);
    assert.deepEqual([described.clientDescription, described.modifyTime, described.taskStates], ['still running', 2_000_000, first.taskStates]);

    // A network the row did not have: written.
    await writer.report('n0', [{ id: alloc.id, clientStatus: 'running', network: { mode: 'host' } }]);
    assert.ok(row().modifyIndex > described.modifyIndex);
    assert.deepEqual(row().network, { mode: 'host' });
  });
});
