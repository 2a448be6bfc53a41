import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runInNewContext } from 'node:vm';
import { ManualClock } from './clock.js';
import { fullGc, MemoryReclaimer, type LoadSample } from './memory-reclaimer.js';

const MiB = 2 ** 20;
const INTERVAL = 1000;

/**
 * A reclaimer over a scripted process: each interval the test says how busy
 * the event loop was and how big the heap is; a collection brings the heap
 * down to `afterCollect`.
 */
function scripted(opts: { startHeap: number; afterCollect: number }) {
  const clock = new ManualClock();
  let next: LoadSample = { utilization: 0, heapCommitted: opts.startHeap * MiB };
  let collections = 0;
  const reclaimer = new MemoryReclaimer({
    clock,
    intervalMs: INTERVAL,
    quietUtilization: 0.1,
    growthBytes: 16 * MiB,
    sample: () => next,
    collect: () => {
      collections++;
      next = { utilization: 0, heapCommitted: opts.afterCollect * MiB };
    },
  });
  return {
    reclaimer,
    collections: () => collections,
    /** One interval passes with this load and heap (MiB). */
    async interval(utilization: number, heapMiB: number): Promise<void> {
      next = { utilization, heapCommitted: heapMiB * MiB };
      await clock.waitForSleepers(1);
      await clock.advance(INTERVAL);
    },
  };
}

describe('MemoryReclaimer', () => {
  it('collects once when the agent goes quiet after a burst that grew the heap, not again while it stays quiet', async () => {
    const p = scripted({ startHeap: 60, afterCollect: 64 });
    await p.reclaimer.start();
    await p.interval(0.9, 90);
    await p.interval(0.8, 120);
    assert.equal(p.collections(), 0, 'never while busy');
    await p.interval(0.02, 130);
    assert.equal(p.collections(), 1);
    await p.interval(0.02, 66);
    await p.interval(0.01, 80);
    assert.equal(p.collections(), 1, 'quiet intervals after a reclaim do not collect again');
    await p.reclaimer.stop();
  });

  it('collects again after the next burst, measuring growth from the smallest heap seen', async () => {
    const p = scripted({ startHeap: 60, afterCollect: 62 });
    await p.reclaimer.start();
    await p.interval(0.9, 120);
    await p.interval(0.05, 120);
    assert.equal(p.collections(), 1);
    await p.interval(0.7, 70); // 10 MiB above the floor of 60: not enough
    await p.interval(0.05, 70);
    assert.equal(p.collections(), 1);
    await p.interval(0.7, 100);
    await p.interval(0.05, 100);
    assert.equal(p.collections(), 2);
    await p.reclaimer.stop();
  });

  it('leaves a heap alone that grew while the agent never got busy', async () => {
    const p = scripted({ startHeap: 60, afterCollect: 60 });
    await p.reclaimer.start();
    for (let i = 0; i < 5; i++) await p.interval(0.01, 60 + i * 10);
    assert.equal(p.collections(), 0);
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
      // 100 MiB at start, 200 MiB ever after: a collection that fails frees nothing.
      sample: () => ({ utilization, heapCommitted: (samples++ === 0 ? 100 : 200) * MiB }),
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
