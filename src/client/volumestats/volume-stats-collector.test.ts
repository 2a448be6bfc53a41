// The collector's schedule on a clock moved by hand: one NodeGetVolumeStats
// per published volume (not per allocation), never two in flight for one
// volume however slow the plugin, nothing for a plugin without
// GET_VOLUME_STATS, intervals spread by the jitter, and reports that could
// not be sent are sent with the next batch.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { NodeCapability, VolumeStats } from '../../csi/index.js';
import { ManualClock } from '../../lib/index.js';
import type { VolumeStatsReport } from '../../structs/index.js';
import type { RecordedPublication } from '../volumes/index.js';
import { VolumeStatsCollector } from './volume-stats-collector.js';

const bytes = (used: number): VolumeStats => ({ usage: [{ unit: 'BYTES', total: 100, used, available: 100 - used }] });
const usage = { readOnly: false, accessMode: 'single-node-writer', attachmentMode: 'file-system' } as const;
const pub = (pluginId: string, volumeId: string, allocId: string): RecordedPublication => ({
  pluginId,
  volume: { id: volumeId, namespace: 'default', externalId: `ext-${volumeId}` },
  usage,
  state: 'done',
  allocId,
});

/**
 * A stats source: calls for volumes in `hold` wait until the test answers
 * them (or their signal fires, as a real plugin call's deadline would end
 * them); the others answer at once.
 */
function source(caps: Record<string, NodeCapability[]>, hold: ReadonlySet<string> = new Set()) {
  const calls: Array<{ volumeId: string; allocId: string; answer: (s: VolumeStats) => void }> = [];
  return {
    calls,
    nodeCapabilities: (pluginId: string) => caps[pluginId] ?? [],
    volumeManagerFor: () => ({
      stats: (volume: { id: string }, allocId: string, _usage: unknown, opts: { signal?: AbortSignal } = {}) =>
        new Promise<VolumeStats>((resolve, reject) => {
          calls.push({ volumeId: volume.id, allocId, answer: resolve });
          if (!hold.has(volume.id)) resolve(bytes(1));
          opts.signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true });
        }),
    }),
  };
}


describe('VolumeStatsCollector', () => {
  it('calls once per volume per interval, one call in flight per volume, and skips plugins without GET_VOLUME_STATS', async () => {
    const clock = new ManualClock(0);
    const csi = source({ p: ['GET_VOLUME_STATS'], nostats: [] }, new Set(['a']));
    const sent: VolumeStatsReport[][] = [];
    const c = new VolumeStatsCollector({
      recorded: { publications: () => [pub('p', 'a', 'alloc-1'), pub('p', 'a', 'alloc-2'), pub('p', 'b', 'alloc-3'), pub('nostats', 'c', 'alloc-4')] },
      csi,
      send: async (reports) => void sent.push(reports),
      clock,
      intervalMs: 10_000,
      jitter: 0.1,
      batchDelayMs: 0,
      random: () => 0.5,
    });
    await c.start();
    await clock.advance(1_000);
    assert.deepEqual(csi.calls.map((x) => x.volumeId).sort(), ['a', 'b'], 'one call per volume, none for a plugin without stats');
    // Volume a's plugin is slow: two intervals pass, and still no second call for it.
    await clock.advance(25_000);
    assert.equal(csi.calls.filter((x) => x.volumeId === 'a').length, 1, 'never two calls in flight for one volume');
    assert.ok(csi.calls.filter((x) => x.volumeId === 'b').length >= 3, 'the other volume goes on');
    csi.calls.find((x) => x.volumeId === 'a')!.answer(bytes(42));
    await clock.advance(1);
    const reports = sent.flat();
    const a = reports.find((r) => r.volumeId === 'a')!;
    assert.deepEqual([a.bytes, a.allocIds], [{ total: 100, used: 42, available: 58 }, ['alloc-1', 'alloc-2']]);
    await c.stop();
  });

  it('spreads the calls by the jitter', async () => {
    const clock = new ManualClock(0);
    const csi = source({ p: ['GET_VOLUME_STATS'] }, new Set(['a']));
    let r = 0;
    const randoms = [0, 0, 1, 0.999];
    const c = new VolumeStatsCollector({
      recorded: { publications: () => [pub('p', 'a', 'x')] },
      csi,
      send: async () => {},
      clock,
      intervalMs: 10_000,
      jitter: 0.1,
      random: () => randoms[r++ % randoms.length] as number,
    });
    await c.start();
    await clock.advance(1);
    assert.equal(csi.calls.length, 1);
    csi.calls[0]!.answer(bytes(1));
    // random 0 for the spread: the next call 10 % early, at 9 s.
    await clock.advance(8_990);
    assert.equal(csi.calls.length, 1);
    await clock.advance(20);
    assert.equal(csi.calls.length, 2);
    await c.stop();
  });

  it('keeps reports the server did not take and sends them with the next batch', async () => {
    const clock = new ManualClock(0);
    const csi = source({ p: ['GET_VOLUME_STATS'] }, new Set(['a', 'b']));
    const sent: VolumeStatsReport[][] = [];
    let down = true;
    const c = new VolumeStatsCollector({
      recorded: { publications: () => [pub('p', 'a', 'x'), pub('p', 'b', 'y')] },
      csi,
      send: async (reports) => {
        if (down) throw new Error('server unreachable');
        sent.push(reports);
      },
      clock,
      intervalMs: 10_000,
      batchDelayMs: 0,
      random: () => 0.5,
    });
    await c.start();
    await clock.advance(1_000);
    csi.calls.find((x) => x.volumeId === 'a')!.answer(bytes(1));
    await clock.advance(1);
    assert.equal(c.counts.batches, 0);
    down = false;
    csi.calls.find((x) => x.volumeId === 'b')!.answer(bytes(2));
    // A failed send is tried again a second later, with what came meanwhile.
    await clock.advance(1_000);
    assert.deepEqual(sent.flat().map((x) => x.volumeId).sort(), ['a', 'b'], 'the failed report went with the next one');
    await c.stop();
  });

  it('batches the reports of calls that end close together into one send', async () => {
    const clock = new ManualClock(0);
    const csi = source({ p: ['GET_VOLUME_STATS'] }, new Set(['a', 'b', 'c']));
    const sent: VolumeStatsReport[][] = [];
    const c = new VolumeStatsCollector({
      recorded: { publications: () => [pub('p', 'a', 'x'), pub('p', 'b', 'y'), pub('p', 'c', 'z')] },
      csi,
      send: async (reports) => void sent.push(reports),
      clock,
      intervalMs: 60_000,
      batchDelayMs: 1_000,
      random: () => 0.5,
    });
    await c.start();
    await clock.advance(5_000);
    for (const v of ['a', 'b', 'c']) {
      csi.calls.find((x) => x.volumeId === v)!.answer(bytes(1));
      await clock.advance(300);
    }
    assert.equal(sent.length, 0, 'not before the batch delay');
    await clock.advance(200);
    assert.deepEqual(sent.map((b) => b.map((r) => r.volumeId)), [['a', 'b', 'c']]);
    await c.stop();
  });
});
