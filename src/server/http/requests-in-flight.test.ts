// RequestsInFlight on a manual clock: when the API counts as quiet for the
// scheduler, for a lone request, for a burst, and with a connection whose
// request has not come yet.
import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ManualClock } from '../../lib/index.js';
import { BURST_LINGER_MS, BURST_SETTLE_MS, FRESH_CONNECTION_MS, RequestsInFlight } from './requests-in-flight.js';

/** Whether `p` has settled after a few turns of the event loop. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  for (let i = 0; i < 5; i++) await nextTurn();
  return done;
}

describe('RequestsInFlight', () => {
  it('a lone request: quiet as soon as it ended, with no settling wait', async () => {
    const clock = new ManualClock(1_000);
    const inFlight = new RequestsInFlight({ clock });
    assert.equal(await settled(inFlight.whenQuiet()), true, 'quiet at once before any request');
    inFlight.enter();
    const quiet = inFlight.whenQuiet();
    assert.equal(await settled(quiet), false, 'not quiet while the request is served');
    inFlight.leave();
    assert.equal(await settled(quiet), true, 'quiet once it ended, the clock not moved');
  });

  it('counts the write requests begun since the start, ended or not (what the warm-up stops for good at)', () => {
    const inFlight = new RequestsInFlight({ clock: new ManualClock(1_000) });
    assert.deepEqual([inFlight.entered, inFlight.count], [0, 0]);
    inFlight.enter();
    inFlight.enter();
    inFlight.leave();
    assert.deepEqual([inFlight.entered, inFlight.count], [2, 1]);
    inFlight.leave();
    inFlight.began();
    assert.deepEqual([inFlight.entered, inFlight.count], [2, 0], 'a request of another kind is not a write');
  });

  it('a burst (requests one after another, a few ms apart): quiet only once none began or ended for BURST_SETTLE_MS', async () => {
    const clock = new ManualClock(1_000);
    const inFlight = new RequestsInFlight({ clock });
    inFlight.enter();
    await clock.advance(3);
    inFlight.leave();
    await clock.advance(2);
    inFlight.enter(); // 5 ms after the first began: a burst, though the first already ended
    const quiet = inFlight.whenQuiet();
    await clock.advance(3);
    inFlight.leave();
    assert.equal(await settled(quiet), false, 'nothing in flight, but the burst may go on');
    await clock.advance(BURST_SETTLE_MS - 5);
    inFlight.enter(); // a straggler inside the window starts it again
    await clock.advance(2);
    inFlight.leave();
    await clock.advance(BURST_SETTLE_MS - 1);
    assert.equal(await settled(quiet), false, 'still within the window after the straggler ended');
    await clock.advance(1);
    assert.equal(await settled(quiet), true, 'quiet BURST_SETTLE_MS after the last request ended');
    // The burst is over: the next lone request, long after, waits for nothing again.
    await clock.advance(1_000);
    inFlight.enter();
    inFlight.leave();
    assert.equal(await settled(inFlight.whenQuiet()), true);
  });

  it('two requests served at once are a burst however far apart they began', async () => {
    const clock = new ManualClock(1_000);
    const inFlight = new RequestsInFlight({ clock });
    inFlight.enter();
    await clock.advance(500);
    inFlight.enter();
    inFlight.leave();
    const quiet = inFlight.whenQuiet();
    inFlight.leave();
    assert.equal(await settled(quiet), false);
    await clock.advance(BURST_SETTLE_MS);
    assert.equal(await settled(quiet), true);
  });

  it('burstLinger: nothing to wait for on a lone request; BURST_LINGER_MS on the clock during a burst', async () => {
    const clock = new ManualClock(1_000);
    const inFlight = new RequestsInFlight({ clock });
    inFlight.enter();
    assert.equal(inFlight.burstLinger(), undefined, 'a lone request does not linger');
    inFlight.leave();
    await clock.advance(3);
    inFlight.enter(); // 3 ms after the last: a burst
    const linger = inFlight.burstLinger();
    assert.ok(linger, 'a request of a burst lingers');
    await clock.advance(BURST_LINGER_MS - 1);
    assert.equal(await settled(linger), false);
    await clock.advance(1);
    assert.equal(await settled(linger), true);
    inFlight.leave();
    await clock.advance(BURST_SETTLE_MS);
    assert.equal(inFlight.burstLinger(), undefined, 'the burst is over once none came for BURST_SETTLE_MS');
  });

  it('a connection accepted before its request is a request on its way: not quiet until the request came and went', async () => {
    const clock = new ManualClock(1_000);
    const inFlight = new RequestsInFlight({ clock });
    const settle = inFlight.connectionOpened();
    const quiet = inFlight.whenQuiet();
    await clock.advance(BURST_SETTLE_MS * 3);
    assert.equal(await settled(quiet), false, 'connected, nothing sent yet: not quiet, however long the gap');
    inFlight.enter(); // its request began (the API calls enter, then settles the connection)
    settle();
    settle(); // safe twice
    assert.equal(await settled(quiet), false, 'its request is being served');
    inFlight.leave();
    assert.equal(await settled(quiet), true, 'a lone request ended: quiet at once');
  });

  it('a connection that never sends holds quiet FRESH_CONNECTION_MS at most; one that closes, no longer', async () => {
    const clock = new ManualClock(1_000);
    const inFlight = new RequestsInFlight({ clock });
    inFlight.connectionOpened();
    const quiet = inFlight.whenQuiet();
    await clock.advance(FRESH_CONNECTION_MS - 1);
    assert.equal(await settled(quiet), false);
    await clock.advance(1);
    assert.equal(await settled(quiet), true, 'given up on after FRESH_CONNECTION_MS');
    const closed = inFlight.connectionOpened();
    const again = inFlight.whenQuiet();
    assert.equal(await settled(again), false);
    closed(); // the client hung up without a request
    assert.equal(await settled(again), true);
    await clock.advance(FRESH_CONNECTION_MS); // its expiry, already settled, counts nothing twice
    assert.equal(await settled(inFlight.whenQuiet()), true);
    inFlight.connectionOpened();
    assert.equal(await settled(inFlight.whenQuiet()), false, 'the count is not thrown off by the double settle');
  });

  it('connections accepted at different times each hold quiet their own FRESH_CONNECTION_MS (one timer for all)', async () => {
    const clock = new ManualClock(1_000);
    const inFlight = new RequestsInFlight({ clock });
    const first = inFlight.connectionOpened();
    await clock.advance(100);
    inFlight.connectionOpened();
    await clock.advance(200);
    inFlight.connectionOpened();
    first(); // the oldest sent its request and was served: the timer armed for it finds nothing due
    const quiet = inFlight.whenQuiet();
    await clock.advance(FRESH_CONNECTION_MS - 300);
    assert.equal(await settled(quiet), false, 'the first expiry time passed, two still fresh');
    await clock.advance(100);
    assert.equal(await settled(quiet), false, 'the second is given up on, the third is still fresh');
    await clock.advance(199);
    assert.equal(await settled(quiet), false);
    await clock.advance(1);
    assert.equal(await settled(quiet), true, 'the third given up on FRESH_CONNECTION_MS after its accept');
  });

  it('a longer settle asked for after a burst (the dev agent task starts); a lone request still waits for nothing', async () => {
    const clock = new ManualClock(1_000);
    const inFlight = new RequestsInFlight({ clock });
    inFlight.enter();
    inFlight.enter();
    inFlight.leave();
    inFlight.leave();
    const quiet = inFlight.whenQuiet(200);
    await clock.advance(BURST_SETTLE_MS);
    assert.equal(await settled(quiet), false, 'the scheduler would go now; the starts wait on');
    await clock.advance(200 - BURST_SETTLE_MS);
    assert.equal(await settled(quiet), true);
    await clock.advance(1_000);
    inFlight.enter();
    inFlight.leave();
    assert.equal(await settled(inFlight.whenQuiet(200)), true, 'after a lone request: at once');
  });

  it('inBurst: while overlapping requests are served and BURST_SETTLE_MS after, not for a lone request nor for writes with gaps between them', async () => {
    const clock = new ManualClock(1_000);
    const inFlight = new RequestsInFlight({ clock });
    inFlight.enter();
    assert.equal(inFlight.inBurst, false, 'one request alone');
    await clock.advance(2_000);
    assert.equal(inFlight.inBurst, false, 'one request alone, however long');
    inFlight.enter();
    assert.equal(inFlight.inBurst, true, 'two served at once');
    inFlight.leave();
    await clock.advance(1_000);
    assert.equal(inFlight.inBurst, true, 'one of them still served, no request begun or ended for a second');
    inFlight.leave();
    await clock.advance(BURST_SETTLE_MS - 1);
    assert.equal(inFlight.inBurst, true, 'within BURST_SETTLE_MS of the last one ending');
    await clock.advance(1);
    assert.equal(inFlight.inBurst, false, 'answered, and BURST_SETTLE_MS passed');
    for (let i = 0; i < 3; i++) {
      inFlight.enter();
      await clock.advance(10);
      inFlight.leave();
      assert.equal(inFlight.inBurst, false, 'a write that came alone');
      await clock.advance(BURST_SETTLE_MS + 10);
    }
  });
});
