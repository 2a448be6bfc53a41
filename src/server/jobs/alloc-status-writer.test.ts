// Nodes' status reports on a real SQLite store: a report that repeats what
// the server holds writes nothing, one that changes any reported field
// (a description, a task event, a network) writes the row; a job's status
// follows its allocations' reports without a list of all of them per write.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import type { TaskState } from '../../structs/index.js';
import { testAllocation } from '../../../test/support/server-rows.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { SqliteStateStore, type StateStore, type WriteTxn } from '../state/index.js';
import { AllocStatusWriter, sameJsonText } from './alloc-status-writer.js';
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

    // The same task states with their fields in another order: their JSON differs, so the row is written (key order counts, as the row's JSON has it).
    const [state] = Object.values(running(2_000_000));
    const reordered = { t: Object.fromEntries(Object.entries(state!).reverse()) as unknown as TaskState };
    await writer.report('n0', [{ id: alloc.id, clientStatus: 'running', clientDescription: 'Tasks are running', taskStates: reordered }]);
    assert.ok(row().modifyIndex > first.modifyIndex, 'the same states in another order are written');
    assert.deepEqual(Object.keys(row().taskStates['t']!), Object.keys(state!).reverse());
    await writer.report('n0', [{ id: alloc.id, clientStatus: 'running', clientDescription: 'Tasks are running', taskStates: running(2_000_000) }]);
    const back = row();

    // Only the description changes: written, the status time kept.
    await writer.report('n0', [{ id: alloc.id, clientStatus: 'running', clientDescription: 'still running' }]);
    const described = row();
    assert.ok(described.modifyIndex > back.modifyIndex);
    assert.deepEqual([described.clientDescription, described.modifyTime, described.taskStates], ['still running', 2_000_000, first.taskStates]);

    // A network the row did not have: written.
    await writer.report('n0', [{ id: alloc.id, clientStatus: 'running', network: { mode: 'host' } }]);
    assert.ok(row().modifyIndex > described.modifyIndex);
    assert.deepEqual(row().network, { mode: 'host' });
  });

  it("keeps a job running while any allocation is live and ends it with the last, listing its allocations only when the one it saw live ends", async () => {
    await store.write((txn) => txn.put('nodes', testNode('n1')));
    const jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
    await jobs.register({ id: 'five', type: 'batch', groups: [{ name: 'g', count: 5, tasks: [{ name: 't', driver: 'exec', config: { command: '/bin/true' }, resources: { cpuMhz: 10, memoryMb: 10 } }] }] });
    // Placed one write each (distinct create indexes), running; the job runs.
    const ids = ['a0', 'a1', 'a2', 'a3', 'a4'];
    for (const [i, id] of ids.entries()) {
      await store.write((txn) => txn.put('allocations', testAllocation(id, 'n1', { jobId: 'five', index: i, clientStatus: 'running' })));
    }
    await store.write((txn) => txn.put('jobs', { ...txn.get('jobs', 'default/five')!, status: 'running' }));
    // Every list of the allocations table the writer's writes make.
    let lists = 0;
    const counted: StateStore = new Proxy(store, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (prop !== 'write') return typeof v === 'function' ? v.bind(target) : v;
        return (fn: (txn: WriteTxn) => unknown, opts?: unknown) =>
          target.write((txn) => {
            const watched = new Proxy(txn, {
              get(t, p) {
                const m = Reflect.get(t, p, t) as unknown;
                if (p === 'list') return (table: string, o?: unknown) => (table === 'allocations' && lists++, (m as (...a: unknown[]) => unknown).call(t, table, o));
                return typeof m === 'function' ? m.bind(t) : m;
              },
            });
            return fn(watched);
          }, opts as never);
      },
    });
    const writer = new AllocStatusWriter({ store: counted, clock: new ManualClock(2_000_000) });
    const status = () => store.snapshot().get('jobs', 'default/five')!.status;
    // Oldest first, one report a write: the job runs until the last one completes.
    for (const [i, id] of ids.entries()) {
      await writer.report('n1', [{ id, clientStatus: 'complete', clientDescription: 'done' }]);
      assert.equal(status(), i < ids.length - 1 ? 'running' : 'dead', `after ${id} completed`);
    }
    // The first report lists them and remembers a1-a4 live; a1-a3 ending leaves a4: no list; a4's end lists them again.
    assert.equal(lists, 2, 'lists of the allocations: the first report and the last');
  });
  it('compares reported fields as their JSON would: the same answer as comparing JSON texts, for plain data and for what JSON writes its own way', () => {
    const values: unknown[] = [
      null, true, false, 0, -0, 1, 1.5, NaN, Infinity, '', '0', 'a', [], {}, [1, 2], [2, 1], [1, [2]], [1, undefined], [null], { a: 1 }, { a: 1, b: 2 }, { b: 2, a: 1 },
      { a: 1, b: undefined }, { a: undefined }, { a: () => 1 }, { a: new Date(0) }, { toJSON: () => 'x' }, 'x', { a: [1, { b: NaN }] }, { a: [1, { b: null }] },
      // eslint-disable-next-line no-sparse-arrays
      [1, , 3], [1, null, 3], Object.create(null) as object, { a: { b: { c: [1, 'x', false] } } }, { a: { b: { c: [1, 'x', true] } } }, { '1': 'a', b: 2 }, { b: 2, '1': 'a' },
    ];
    for (const x of values) for (const y of values) assert.equal(sameJsonText(x, y), JSON.stringify(x) === JSON.stringify(y), `${JSON.stringify(x)} vs ${JSON.stringify(y)}`);
  });
});
