// untilChangeOr on a real SQLite store and a manual clock: a change wakes it
// with the new index, the clock with the index it was given, an abort rejects.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AbortedError, ManualClock } from '../../lib/index.js';
import { SqliteStateStore, untilChangeOr, type RowInput } from './index.js';

const service = (id: string): RowInput<'services'> => ({ id, namespace: 'default', serviceName: 'web', datacenter: 'dc1', allocId: 'a', jobId: 'j', nodeId: 'n', address: '127.0.0.1', port: 80, tags: [], meta: {} });

describe('untilChangeOr', () => {
  let dir: string;
  let store: SqliteStateStore;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-until-'));
    store = SqliteStateStore.open(join(dir, 'state.db'));
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resolves with the new index when a table changes before the time', async () => {
    const clock = new ManualClock(1_000);
    const from = store.latestIndex();
    const waiting = untilChangeOr(store, ['services'], from, 5_000, clock, new AbortController().signal);
    const { index } = await store.write((txn) => txn.put('services', service('s1')));
    assert.equal(await waiting, index);
    assert.equal(clock.pending, 0, 'its timer is gone');
  });

  it('resolves with the index it was given once the clock reaches the time', async () => {
    const clock = new ManualClock(1_000);
    const from = store.latestIndex();
    const waiting = untilChangeOr(store, ['services'], from, 1_500, clock, new AbortController().signal);
    await clock.advance(499);
    await clock.advance(1);
    assert.equal(await waiting, from);
  });

  it('with no time, waits for the change alone; rejects with AbortedError when its signal fires', async () => {
    const clock = new ManualClock(1_000);
    const stop = new AbortController();
    const waiting = untilChangeOr(store, ['services'], store.latestIndex(), undefined, clock, stop.signal);
    assert.equal(clock.pending, 0, 'no timer without a time');
    stop.abort();
    await assert.rejects(waiting, AbortedError);
  });
});
