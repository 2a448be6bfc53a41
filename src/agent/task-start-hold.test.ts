// holdStartsWhileBusy: a dev agent's client waits for its API to be quiet
// before starting new allocations, but never longer than its bound, and not
// at all once the client stops.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { holdStartsWhileBusy } from './task-start-hold.js';

const never = (): Promise<void> => new Promise<void>(() => undefined);

describe('holdStartsWhileBusy', () => {
  it('lets go once the API is quiet', async () => {
    let quiet = (): void => undefined;
    const hold = holdStartsWhileBusy(() => new Promise<void>((resolve) => (quiet = resolve)), 3_600_000);
    let done = false;
    const held = hold(new AbortController().signal).then(() => (done = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(done, false, 'held while writes are served');
    quiet();
    await held;
  });

  it('lets go after its bound while writes keep coming', async () => {
    await holdStartsWhileBusy(never, 5)(new AbortController().signal);
  });

  it('lets go at once when the client stops', async () => {
    const stopping = new AbortController();
    const held = holdStartsWhileBusy(never, 3_600_000)(stopping.signal);
    stopping.abort();
    await held;
  });
});
