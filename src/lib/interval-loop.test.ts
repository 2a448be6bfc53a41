import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from './clock.js';
import { IntervalLoop } from './interval-loop.js';
import { createLogger } from './logger.js';

/** A logger at info whose records land in `lines` (pino writes one JSON line per record). */
function capturingLogger(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  return { logger: createLogger({ level: 'info', destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) } }), lines };
}

/** Lets the loop's promise callbacks run (no clock time passes). */
const settle = (): Promise<void> => new ManualClock().advance(0);

describe('IntervalLoop', () => {
  it('runs its first round after firstDelayMs, then one every interval, on the clock it was given', async () => {
    const clock = new ManualClock(1000);
    const rounds: number[] = [];
    const loop = new IntervalLoop({ clock, logger: capturingLogger().logger, intervalMs: 100, firstDelayMs: 30, step: () => void rounds.push(clock.now()) });
    await loop.start();
    assert.equal(loop.state, 'running');
    await clock.advance(29);
    assert.deepEqual(rounds, []);
    await clock.advance(1 + 100 + 100);
    assert.deepEqual(rounds, [1030, 1130, 1230]);
    await loop.stop();
  });

  it('waits what a round asks for before the next one', async () => {
    const clock = new ManualClock();
    const rounds: number[] = [];
    const loop = new IntervalLoop({ clock, logger: capturingLogger().logger, intervalMs: 1000, firstDelayMs: 0, step: () => (rounds.push(clock.now()), 10) });
    await loop.start();
    await clock.advance(25);
    assert.deepEqual(rounds, [0, 10, 20]);
    await loop.stop();
  });

  it('logs a failed round and goes on with the next', async () => {
    const clock = new ManualClock();
    const { logger, lines } = capturingLogger();
    let n = 0;
    const loop = new IntervalLoop({
      clock,
      logger,
      intervalMs: 50,
      step: () => {
        n++;
        if (n === 1) throw new Error('store unreachable');
      },
    });
    await loop.start();
    await clock.advance(100);
    assert.equal(n, 2);
    assert.equal(lines.filter((l) => l['level'] === 40).length, 1);
    assert.match(JSON.stringify(lines[0]), /store unreachable/);
    await loop.stop();
  });

  it('runs the next round at once when woken, and after the round in flight when woken during it', async () => {
    const clock = new ManualClock();
    const rounds: number[] = [];
    let release: (() => void) | undefined;
    const loop = new IntervalLoop({
      clock,
      logger: capturingLogger().logger,
      intervalMs: 60_000,
      step: async () => {
        rounds.push(clock.now());
        if (rounds.length === 2) await new Promise<void>((r) => (release = r));
      },
    });
    await loop.start();
    await clock.advance(10);
    loop.wake();
    await settle();
    assert.deepEqual(rounds, [10]);
    await clock.advance(60_000);
    assert.deepEqual(rounds, [10, 60_010]);
    loop.wake(); // during the second round
    release?.();
    await settle();
    assert.deepEqual(rounds, [10, 60_010, 60_010]);
    await loop.stop();
  });

  it('stop() aborts the round in flight, waits for it and for tracked work, and is safe twice', async () => {
    const clock = new ManualClock();
    let roundEnded = false;
    let trackedEnded = false;
    let releaseTracked: (() => void) | undefined;
    const loop = new IntervalLoop({
      clock,
      logger: capturingLogger().logger,
      intervalMs: 10,
      step: async (signal) => {
        void loop.track(new Promise<void>((r) => (releaseTracked = r)).then(() => (trackedEnded = true)));
        await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
        roundEnded = true;
      },
    });
    await loop.start();
    await clock.advance(10);
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await settle();
    assert.equal(roundEnded, true);
    assert.equal(stopped, false, 'stop() waits for the tracked work');
    releaseTracked?.();
    await stopping;
    assert.equal(trackedEnded, true);
    assert.equal(loop.state, 'stopped');
    await loop.stop();
    await clock.advance(100);
    assert.equal(loop.state, 'stopped');
  });
});
