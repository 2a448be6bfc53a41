import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import { RestartTracker } from './restart-tracker.js';

const policy = { attempts: 2, interval: '1m', delay: '5s', mode: 'fail' as const };

describe('RestartTracker', async () => {
  it('allows `attempts` restarts within the interval, then fails the task', async () => {
    const clock = new ManualClock(1_000);
    const t = new RestartTracker(policy, 'service', clock);
    assert.deepEqual(t.next({ exitCode: 1 }), { kind: 'restart', delayMs: 5_000, reason: 'restart 1 of 2 allowed within 1m' });
    await clock.advance(10_000);
    assert.equal(t.next({ exitCode: 1 }).kind, 'restart');
    await clock.advance(10_000);
    const d = t.next({ exitCode: 1 });
    assert.equal(d.kind, 'fail');
    assert.match(d.reason, /exceeded the 2 restarts allowed within 1m/);
  });

  it('a policy taken in place weighs later exits with the restarts already counted', () => {
    const clock = new ManualClock(1_000);
    const t = new RestartTracker(policy, 'batch', clock);
    assert.equal(t.next({ exitCode: 1 }).kind, 'restart');
    const wider = t.withPolicy({ ...policy, attempts: 3, delay: '1s' });
    assert.deepEqual(wider.next({ exitCode: 1 }), { kind: 'restart', delayMs: 1_000, reason: 'restart 2 of 3 allowed within 1m' });
    assert.equal(wider.next({ exitCode: 1 }).kind, 'restart');
    assert.equal(wider.next({ exitCode: 1 }).kind, 'fail');
  });

  it('starts counting again once the interval has passed', async () => {
    const clock = new ManualClock();
    const t = new RestartTracker(policy, 'service', clock);
    t.next({ exitCode: 1 });
    t.next({ exitCode: 1 });
    await clock.advance(60_000);
    assert.equal(t.next({ exitCode: 1 }).kind, 'restart');
    assert.equal(t.state.count, 1);
  });

  it('in delay mode waits until the interval ends instead of failing', async () => {
    const clock = new ManualClock();
    const t = new RestartTracker({ ...policy, mode: 'delay' }, 'service', clock);
    t.next({ exitCode: 1 });
    await clock.advance(20_000);
    t.next({ exitCode: 1 });
    await clock.advance(10_000);
    const d = t.next({ exitCode: 1 });
    assert.equal(d.kind, 'restart');
    assert.equal(d.kind === 'restart' && d.delayMs, 30_000);
    assert.match(d.reason, /delaying the restart until the interval ends/);
    await clock.advance(30_000);
    assert.deepEqual(t.next({ exitCode: 1 }).kind, 'restart');
    assert.equal(t.state.count, 1);
  });

  it('a batch task that exits 0 is complete; a service task restarts even after a clean exit', async () => {
    const clock = new ManualClock();
    assert.equal(new RestartTracker(policy, 'batch', clock).next({ exitCode: 0 }).kind, 'complete');
    assert.equal(new RestartTracker(policy, 'batch', clock).next({ exitCode: 0, signal: 'SIGKILL' }).kind, 'restart');
    assert.equal(new RestartTracker(policy, 'service', clock).next({ exitCode: 0 }).kind, 'restart');
  });

  it('keeps its count across a restore from its saved state', async () => {
    const clock = new ManualClock();
    const t = new RestartTracker(policy, 'service', clock);
    t.next({ exitCode: 1 });
    t.next({ exitCode: 1 });
    const again = new RestartTracker(policy, 'service', clock, t.state);
    assert.equal(again.next({ exitCode: 1 }).kind, 'fail');
  });
});
