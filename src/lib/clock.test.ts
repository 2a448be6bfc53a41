import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AbortedError } from './errors.js';
import { systemClock } from './clock.js';

describe('systemClock.sleep', () => {
  it('a sleep longer than a timer can hold (24.8 days) does not end at once, and ends when aborted', async () => {
    const ac = new AbortController();
    let ended = false;
    const sleeping = systemClock.sleep(40 * 24 * 3600 * 1000, ac.signal).then(
      () => (ended = true),
      (err: unknown) => err,
    );
    // Node runs an overlong timer after 1 ms: a short real sleep is enough to see it has not ended.
    await systemClock.sleep(50);
    assert.equal(ended, false, 'a 40-day sleep ended within 50 ms');
    ac.abort();
    assert.ok((await sleeping) instanceof AbortedError);
  });

  it('a short sleep ends', async () => {
    assert.equal(await systemClock.sleep(20), undefined);
  });
});
