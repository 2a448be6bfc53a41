// Client garbage collection as an operator sees it: finished allocations leave
// the node once they are old, too many, or the disk fills up; the on-demand
// trigger takes every finished one; a failed collection is tried again.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import { AllocGarbageCollector, overLimits, type GcCandidate } from './index.js';

const MIN = 60_000;

describe('client garbage collection', () => {
  it('the age and count limits pick the oldest finished allocations', () => {
    const now = 10 * 60 * MIN;
    const c = (allocId: string, minutesAgo: number): GcCandidate => ({ allocId, finishedAt: now - minutesAgo * MIN });
    const all = [c('new', 1), c('old', 120), c('mid', 30), c('older', 59)];
    assert.deepEqual(overLimits(all, { maxAgeMs: 60 * MIN, maxAllocs: 50 }, now), ['old'], 'only what is past the age limit');
    assert.deepEqual(overLimits(all, { maxAgeMs: 60 * MIN, maxAllocs: 2 }, now), ['old', 'older'], 'then the oldest beyond the count');
    assert.deepEqual(overLimits(all, { maxAgeMs: 60 * MIN, maxAllocs: 0 }, now), ['old', 'older', 'mid', 'new']);
    assert.deepEqual(overLimits([], { maxAgeMs: 0, maxAllocs: 0 }, now), []);
  });

  it('runs every interval on its clock, collects by disk usage until below the threshold, and retries a failed collection', async () => {
    const clock = new ManualClock(1_000_000);
    const finished = new Map<string, number>([
      ['a', clock.now() - 3],
      ['b', clock.now() - 2],
      ['c', clock.now() - 1],
    ]);
    let disk = 95;
    let failB = true;
    const collected: string[] = [];
    const gc = new AllocGarbageCollector({
      clock,
      limits: { intervalMs: MIN, maxAgeMs: 60 * MIN, maxAllocs: 10, diskUsageThreshold: 80 },
      candidates: () => [...finished].map(([allocId, finishedAt]) => ({ allocId, finishedAt })),
      collect: async (id) => {
        if (id === 'b' && failB) throw new Error('still mounted');
        finished.delete(id);
        collected.push(id);
        disk -= 10;
      },
      diskUsagePercent: () => disk,
    });
    gc.start();
    await clock.waitForSleepers(1);
    assert.deepEqual(collected, [], 'nothing before the first interval');
    await clock.advance(MIN);
    await clock.waitForSleepers(1);
    assert.deepEqual(collected, ['a', 'c'], 'oldest first while the disk is above 80 %; b failed and stays');
    failB = false;
    assert.deepEqual(await gc.collect({ all: true }), ['b'], 'the on-demand trigger takes every finished allocation');
    assert.equal(gc.collectedCount, 3);
    await gc.stop();
    await gc.stop();
    assert.equal(gc.state, 'stopped');
  });
});
