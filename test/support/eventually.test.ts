import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { eventually, EventuallyError, nextTurn, waitForEvent } from './eventually.js';

describe('eventually()', () => {
  it('resolves with the first answer that is not undefined, null or false, and keeps trying through errors', async () => {
    let tries = 0;
    const got = await eventually('the third try', () => {
      tries++;
      if (tries === 1) throw new Error('not yet');
      return tries === 3 ? { tries } : tries === 2 ? null : false;
    }, { intervalMs: 1 });
    assert.deepEqual(got, { tries: 3 });
    assert.equal(await eventually('zero', () => 0), 0, '0 and "" are answers');
  });

  it('gives up after its deadline naming what it waited for and the last value or error', async () => {
    await assert.rejects(eventually('the sky to fall', () => false, { timeoutMs: 30, intervalMs: 5 }), (err: unknown) => {
      assert.ok(err instanceof EventuallyError);
      assert.equal(err.code, 'TEST_EVENTUALLY');
      assert.match(err.message, /^timed out after 30 ms waiting for the sky to fall; last value: false$/);
      return true;
    });
    await assert.rejects(eventually('a socket', () => { throw new Error('ENOENT'); }, 30), /^EventuallyError: timed out after 30 ms waiting for a socket; last error: ENOENT$|waiting for a socket; last error: ENOENT$/);
  });

  it('stops at once when its signal fires, with the reason', async () => {
    const ac = new AbortController();
    const waiting = eventually('the process to be ready', () => false, { signal: ac.signal, intervalMs: 60_000 });
    ac.abort(new Error('the process exited'));
    await assert.rejects(waiting, /^EventuallyError: stopped \(the process exited\) waiting for the process to be ready|stopped \(the process exited\) waiting for the process to be ready/);
  });

  it('runs `between` after each failed try (e.g. to move a manual clock)', async () => {
    let now = 0;
    await eventually('the clock to reach 3', () => now >= 3, { intervalMs: 1, between: () => now++ });
    assert.equal(now, 3);
  });
});

describe('waitForEvent()', () => {
  it('resolves with the arguments of the first emission that passes the filter', async () => {
    const e = new EventEmitter();
    const waiting = waitForEvent<[number]>('an even number', e, 'n', { filter: (n) => n % 2 === 0 });
    e.emit('n', 1);
    e.emit('n', 4);
    assert.deepEqual(await waiting, [4]);
    assert.equal(e.listenerCount('n'), 0);
    assert.equal(e.listenerCount('error'), 0);
  });

  it('rejects with the emitter error, or after its deadline naming the event', async () => {
    const e = new EventEmitter();
    const failing = waitForEvent('ready', e, 'ready');
    e.emit('error', new Error('boom'));
    await assert.rejects(failing, /boom/);
    await assert.rejects(waitForEvent('ready', e, 'ready', { timeoutMs: 10 }), /timed out after 10 ms waiting for ready; last value: "no 'ready' event"/);
  });
});

describe('nextTurn()', () => {
  it('runs after the promise jobs already queued', async () => {
    const order: string[] = [];
    void Promise.resolve().then(() => order.push('job'));
    await nextTurn();
    order.push('turn');
    assert.deepEqual(order, ['job', 'turn']);
  });
});
