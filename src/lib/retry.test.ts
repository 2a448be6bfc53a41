import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from './clock.js';
import { AbortedError } from './errors.js';
import { backoffDelay, retry, type BackoffPolicy } from './retry.js';

const policy: BackoffPolicy = { maxAttempts: 4, initialDelayMs: 100, maxDelayMs: 350, multiplier: 2, jitter: 0 };

describe('retry', () => {
  it('waits longer after each failure, up to the ceiling, then gives up with the last error', async () => {
    const clock = new ManualClock();
    const seen: number[] = [];
    const run = retry(
      async (attempt) => {
        throw new Error(`attempt ${attempt}`);
      },
      { policy, clock, shouldRetry: () => true, onRetry: ({ delayMs }) => seen.push(delayMs) },
    );
    const outcome = assert.rejects(run, /attempt 4/);
    await clock.waitForSleepers(1);
    await clock.advance(10_000);
    await outcome;
    assert.deepEqual(seen, [100, 200, 350]);
  });

  it('does not retry an error the caller calls final', async () => {
    let calls = 0;
    await assert.rejects(
      retry(
        async () => {
          calls++;
          throw new Error('final');
        },
        { policy, clock: new ManualClock(), shouldRetry: () => false },
      ),
      /final/,
    );
    assert.equal(calls, 1);
  });

  it('returns as soon as an attempt succeeds', async () => {
    const clock = new ManualClock();
    const run = retry(
      async (attempt) => {
        if (attempt < 2) throw new Error('flaky');
        return 'ok';
      },
      { policy, clock, shouldRetry: () => true },
    );
    await clock.waitForSleepers(1);
    await clock.advance(100);
    assert.equal(await run, 'ok');
  });

  it('stops waiting when the signal fires, keeping the last error as cause', async () => {
    const clock = new ManualClock();
    const ac = new AbortController();
    const run = retry(
      async () => {
        throw new Error('busy');
      },
      { policy, clock, signal: ac.signal, shouldRetry: () => true },
    );
    await clock.waitForSleepers(1);
    ac.abort();
    const err = await run.then(
      () => assert.fail('should reject'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof AbortedError);
    assert.equal((err.cause as Error).message, 'busy');
  });

  it('spreads delays with jitter inside the configured fraction', () => {
    const p = { ...policy, jitter: 0.5 };
    assert.equal(backoffDelay(p, 1, () => 0), 100);
    assert.equal(backoffDelay(p, 1, () => 1), 50);
    assert.equal(backoffDelay(p, 3, () => 0), 350);
  });
});
