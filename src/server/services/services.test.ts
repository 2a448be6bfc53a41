// The services table on a real SQLite store: registrations follow the
// client's reports in the same write, reads filter by health, tags and
// choose, and the reaper removes those of allocations that stop, are lost or
// are collected.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { Allocation, ServiceReport } from '../../structs/index.js';
import { rowKey, SqliteStateStore } from '../state/index.js';
import { listServices, serviceInstances, ServiceReaper, syncAllocServices } from './index.js';
import { testAllocation } from '../../../test/support/server-rows.js';

let dir = '';
let store: SqliteStateStore;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-svc-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** An allocation of job `web` on node n1 (the shared server-row kit). */
const alloc = (id: string, over: Partial<Allocation> = {}): Allocation => testAllocation(id, 'n1', { jobId: 'web', jobVersion: 0, ...over });
const report = (id: string, port: number, tags: string[] = []): ServiceReport => ({ id, serviceName: 'api', tags, meta: {}, address: '127.0.0.1', port });

describe('service registrations', () => {
  it('follow the reports: put, changed, removed; only for an allocation that runs', async () => {
    await store.write((txn) => {
      const a = txn.put('allocations', alloc('a1'));
      syncAllocServices(txn, a, [report('r1', 8080, ['v1']), report('r2', 8081)]);
    });
    assert.deepEqual(serviceInstances(store.snapshot(), 'default', 'api').map((r) => [r.id, r.port, r.jobId, r.allocId]), [
      ['r1', 8080, 'web', 'a1'],
      ['r2', 8081, 'web', 'a1'],
    ]);
    await store.write((txn) => syncAllocServices(txn, txn.get('allocations', rowKey('a1')) as Allocation, [report('r1', 9090, ['v1'])]));
    assert.deepEqual(serviceInstances(store.snapshot(), 'default', 'api').map((r) => [r.id, r.port]), [['r1', 9090]]);
    await store.write((txn) => {
      const a = txn.put('allocations', alloc('a2', { desiredStatus: 'stop' }));
      syncAllocServices(txn, a, [report('r3', 1)]);
    });
    assert.equal(serviceInstances(store.snapshot(), 'default', 'api').length, 1, 'an allocation told to stop registers nothing');
  });

  it('are served only while healthy unless asked, filtered by tag, and choose is stable for a key', async () => {
    await store.write((txn) => {
      const a1 = txn.put('allocations', alloc('a1', { checks: { c: { service: 'api', name: 'alive', status: 'passing', output: '', at: 1 } } }));
      syncAllocServices(txn, a1, [report('r1', 1, ['v1'])]);
      const a2 = txn.put('allocations', alloc('a2', { checks: { c: { service: 'api', name: 'alive', status: 'critical', output: '503', at: 1 } } }));
      syncAllocServices(txn, a2, [report('r2', 2, ['v2'])]);
      const a3 = txn.put('allocations', alloc('a3'));
      syncAllocServices(txn, a3, [report('r3', 3, ['v1'])]);
    });
    const snap = store.snapshot();
    assert.deepEqual(serviceInstances(snap, 'default', 'api').map((r) => r.id), ['r1', 'r3']);
    assert.deepEqual(serviceInstances(snap, 'default', 'api', { includeUnhealthy: true }).map((r) => r.id), ['r1', 'r2', 'r3']);
    assert.deepEqual(serviceInstances(snap, 'default', 'api', { tags: ['v2'], includeUnhealthy: true }).map((r) => r.id), ['r2']);
    const one = serviceInstances(snap, 'default', 'api', { choose: { count: 1, key: 'k' } });
    assert.equal(one.length, 1);
    assert.deepEqual(serviceInstances(snap, 'default', 'api', { choose: { count: 1, key: 'k' } }), one);
    assert.deepEqual(listServices(snap, 'default'), [{ namespace: 'default', serviceName: 'api', tags: ['v1'], instances: 2 }]);
  });

  it('are removed by the reaper when the allocation stops, is lost or collected, and at its start for what happened before', async () => {
    await store.write((txn) => {
      for (const id of ['a1', 'a2', 'a3', 'a4']) syncAllocServices(txn, txn.put('allocations', alloc(id)), [report(`r-${id}`, 1)]);
      // Changed behind the registrations' back (another leader's term): swept at start.
      txn.put('allocations', alloc('a4', { clientStatus: 'failed' }));
    });
    const reaper = new ServiceReaper({ store });
    await reaper.start();
    try {
      const ids = (): string[] => serviceInstances(store.snapshot(), 'default', 'api').map((r) => r.id);
      assert.deepEqual(ids(), ['r-a1', 'r-a2', 'r-a3']);
      await store.write((txn) => {
        txn.put('allocations', alloc('a1', { desiredStatus: 'stop' }));
        txn.put('allocations', alloc('a2', { clientStatus: 'lost' }));
        txn.delete('allocations', rowKey('a3'));
      });
      for (let i = 0; i < 5 && ids().length; i++) await store.blockUntil(['services'], store.snapshot().tableIndex('services'), { timeoutMs: 10_000 });
      assert.deepEqual(ids(), []);
    } finally {
      await reaper.stop();
    }
  });
});
