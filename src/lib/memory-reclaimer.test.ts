import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runInNewContext } from 'node:vm';
import { ManualClock } from './clock.js';
import { getHeapSpaceStatistics } from 'node:v8';
import { fullGc, lowMemoryGc, MemoryReclaimer, type LoadSample } from './memory-reclaimer.js';

const MiB = 2 ** 20;
const INTERVAL = 1000;

/**
 * A reclaimer over a scripted process: each interval the test says how busy
 * the event loop was and how big the heap is; a collection brings the heap
 * down to `afterCollect`.
 */
function scripted(opts: { startHeap: number; afterCollect: number; minSpacingMs?: number; settleIntervals?: number }) {
  const clock = new ManualClock();
  let next: LoadSample = { utilization: 0, heapCommitted: opts.startHeap * MiB };
  let collections = 0;
  let requests = 0;
  const reclaimer = new MemoryReclaimer({
    requests: () => requests,
    quietRequests: 10,
    clock,
    intervalMs: INTERVAL,
    quietUtilization: 0.1,
    growthBytes: 16 * MiB,
    minSpacingMs: opts.minSpacingMs ?? 0,
    settleIntervals: opts.settleIntervals ?? 1000,
    sample: () => next,
    collect: () => {
      collections++;
      next = { utilization: 0, heapCommitted: opts.afterCollect * MiB };
    },
  });
  return {
    reclaimer,
    collections: () => collections,
    /** One interval passes with this load and heap (MiB), and this many API requests begun in it. */
    async interval(utilization: number, heapMiB: number, requestsBegun = 0): Promise<void> {
      next = { utilization, heapCommitted: heapMiB * MiB };
      requests += requestsBegun;
      await clock.waitForSleepers(1);
      await clock.advance(INTERVAL);
    },
  };
}

describe('MemoryReclaimer', () => {
  it('reclaims in the first quiet interval after start (the start is a burst), never while busy', async () => {
    const p = scripted({ startHeap: 60, afterCollect: 40 });
    await p.reclaimer.start();
    await p.interval(0.9, 90);
    await p.interval(0.8, 120);
    assert.equal(p.collections(), 0, 'never while busy');
    await p.interval(0.02, 130);
    assert.equal(p.collections(), 1);
    await p.interval(0.02, 41);
    await p.interval(0.01, 50);
    assert.equal(p.collections(), 1, 'quiet intervals whose heap is within growthBytes of the last reclaim do not collect');
    await p.reclaimer.stop();
  });

  it('an idle event loop with more than quietRequests requests in the interval (a server taking 1,000 nodes\' heartbeats) is not quiet', async () => {
    const p = scripted({ startHeap: 60, afterCollect: 40 });
    await p.reclaimer.start();
    await p.interval(0.05, 130, 100);
    await p.interval(0.02, 140, 11);
    assert.equal(p.collections(), 0, 'the loop was under the quiet bar, but requests kept coming');
    await p.interval(0.02, 140, 10);
    assert.equal(p.collections(), 1, 'at quietRequests or fewer, it reclaims');
    await p.reclaimer.stop();
  });

  it('collects again once the heap grew growthBytes above what the last reclaim left, and not within minSpacingMs', async () => {
    const p = scripted({ startHeap: 60, afterCollect: 40, minSpacingMs: 10 * INTERVAL });
    await p.reclaimer.start();
    await p.interval(0.05, 60);
    assert.equal(p.collections(), 1, 'the start');
    await p.interval(0.7, 70); // 30 MiB above the 40 left: but only 1 interval after the last reclaim
    await p.interval(0.05, 70);
    assert.equal(p.collections(), 1);
    for (let i = 0; i < 8; i++) await p.interval(0.05, 70);
    assert.equal(p.collections(), 2, 'once minSpacingMs passed');
    await p.interval(0.05, 50); // 10 MiB above the 40 left: not enough
    await p.interval(0.7, 200);
    assert.equal(p.collections(), 2);
    for (let i = 0; i < 10; i++) await p.interval(0.05, 55);
    assert.equal(p.collections(), 2);
    await p.reclaimer.stop();
  });

  it('reclaims once more when a burst is over on a quarter of growthBytes (a reclaim in a lull mid-burst left the rest), once per quiet spell', async () => {
    const p = scripted({ startHeap: 60, afterCollect: 40, settleIntervals: 3 });
    await p.reclaimer.start();
    await p.interval(0.9, 60);
    await p.interval(0.05, 60); // a lull: grown (the first), reclaimed
    assert.equal(p.collections(), 1);
    await p.interval(0.9, 44); // the burst goes on, 4 MiB above what the reclaim left (growth is 16)
    await p.interval(0.05, 45);
    await p.interval(0.05, 45);
    assert.equal(p.collections(), 1, 'two quiet intervals are not yet the end of the burst');
    await p.interval(0.05, 45);
    assert.equal(p.collections(), 2, 'the third is');
    for (let i = 0; i < 5; i++) await p.interval(0.05, 43);
    assert.equal(p.collections(), 2, 'the same quiet spell, 3 MiB above the 40 left: nothing more');
    await p.interval(0.9, 41);
    for (let i = 0; i < 5; i++) await p.interval(0.05, 42);
    assert.equal(p.collections(), 2, 'a spell whose heap is 2 MiB above the floor (under a quarter of 16): nothing');
    await p.reclaimer.stop();
  });

  it('measures growth from the smallest heap seen since the last reclaim when V8 shrank it itself', async () => {
    const p = scripted({ startHeap: 60, afterCollect: 50, minSpacingMs: 0 });
    await p.reclaimer.start();
    await p.interval(0.01, 60);
    assert.equal(p.collections(), 1);
    await p.interval(0.01, 30); // V8 gave back more on its own: the floor is 30 now
    await p.interval(0.01, 48);
    assert.equal(p.collections(), 2, '18 MiB above the floor');
    await p.reclaimer.stop();
  });

  it('keeps watching after a collection that throws, and stops (twice) without waiting an interval', async () => {
    const clock = new ManualClock();
    let calls = 0;
    let samples = 0;
    let utilization = 0.9;
    const reclaimer = new MemoryReclaimer({
      clock,
      intervalMs: INTERVAL,
      minSpacingMs: 0,
      // A heap that grows 20 MiB a sample: a collection that fails frees nothing.
      sample: () => ({ utilization, heapCommitted: (100 + 20 * samples++) * MiB }),
      collect: () => {
        calls++;
        throw new Error('no gc today');
      },
    });
    await reclaimer.start();
    for (const u of [0.9, 0, 0.9, 0]) {
      utilization = u;
      await clock.waitForSleepers(1);
      await clock.advance(INTERVAL);
    }
    assert.equal(calls, 2);
    assert.equal(reclaimer.reclaims, 2);
    await Promise.all([reclaimer.stop(), reclaimer.stop()]);
    assert.equal(reclaimer.state, 'stopped');
    assert.equal(clock.pending, 0);
  });
});

describe('fullGc', () => {
  it('collects unreachable objects, and leaves no gc global behind', async () => {
    const collect = fullGc();
    let target: object | undefined = { big: new Array(1000).fill('x') };
    const ref = new WeakRef(target);
    target = undefined;
    // A WeakRef's target lives at least until the current job ends.
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    assert.equal(ref.deref(), undefined);
    assert.equal(runInNewContext('typeof gc'), 'undefined');
    assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined');
  });
});

describe('lowMemoryGc', () => {
  const newSpace = (): number => getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size;

  it('collects unreachable objects and gives back the new space a burst grew', async () => {
    // A burst whose objects survive scavenges makes V8 grow new space (to 32 MiB on 64-bit).
    let burst: unknown[][] | undefined = [];
    for (let round = 0; round < 40 && newSpace() < 8 * MiB; round++) {
      const kept: unknown[] = [];
      for (let i = 0; i < 50_000; i++) kept.push({ i, s: `item-${i}-${round}` });
      burst.push(kept);
    }
    const grown = newSpace();
    assert.ok(grown >= 8 * MiB, `new space grew to ${grown / MiB} MiB`);
    const ref = new WeakRef(burst);
    burst = undefined;
    await new Promise((resolve) => setImmediate(resolve));
    await lowMemoryGc()();
    assert.equal(ref.deref(), undefined);
    assert.ok(newSpace() <= grown / 4, `new space ${grown / MiB} -> ${newSpace() / MiB} MiB`);
  });
});
