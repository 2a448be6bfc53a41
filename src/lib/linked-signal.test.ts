import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { eventually } from '../../test/support/eventually.js';
import { Lifecycle } from './lifecycle.js';
import { anySignal, linkSignals } from './linked-signal.js';

/**
 * How many signals node has recorded as dependants of `signal` (the set in
 * which node 20's AbortSignal.any leaves a WeakRef per call; node's own
 * symbol, 0 where there is none).
 */
function dependants(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find((s) => s.description === 'kDependantSignals');
  return key ? ((signal as unknown as Record<symbol, Set<unknown> | undefined>)[key]?.size ?? 0) : 0;
}

describe('linkSignals', () => {
  it('aborts with the reason of the first source that aborts, and then lets go of every source', () => {
    const a = new AbortController();
    const b = new AbortController();
    const linked = linkSignals([a.signal, b.signal]);
    assert.equal(getEventListeners(a.signal, 'abort').length, 1);
    b.abort('b went');
    assert.equal(linked.signal.aborted, true);
    assert.equal(linked.signal.reason, 'b went');
    assert.equal(getEventListeners(a.signal, 'abort').length, 0);
    assert.equal(getEventListeners(b.signal, 'abort').length, 0);
  });

  it('is aborted at once when a source already is', () => {
    const linked = linkSignals([new AbortController().signal, AbortSignal.abort('done')]);
    assert.equal(linked.signal.aborted, true);
    assert.equal(linked.signal.reason, 'done');
  });

  it('after unlink() a long-lived source holds nothing of 1,000 links, and its abort no longer reaches them', () => {
    const long = new AbortController();
    const links = Array.from({ length: 1000 }, () => linkSignals([long.signal]));
    for (const l of links) l.unlink();
    links[0]!.unlink();
    assert.equal(getEventListeners(long.signal, 'abort').length, 0);
    long.abort();
    assert.equal(links.some((l) => l.signal.aborted), false);
  });

  it('leaves nothing behind on a long-lived source when each tick aborts its own (AbortSignal.any leaves a WeakRef per call in node 20)', () => {
    const long = new AbortController();
    for (let i = 0; i < 1000; i++) {
      const tick = new AbortController();
      linkSignals([long.signal, tick.signal]);
      tick.abort();
    }
    assert.equal(getEventListeners(long.signal, 'abort').length, 0);
    assert.equal(dependants(long.signal), 0);
    for (let i = 0; i < 10; i++) AbortSignal.any([long.signal]);
    assert.equal(dependants(long.signal), 10, 'the measure sees what AbortSignal.any leaves');
  });
});

describe('Lifecycle.run', () => {
  it('1,000 finished runs leave the component holding what it held idle (no listener, no dependant per run)', async () => {
    const life = new Lifecycle();
    await life.start();
    const caller = new AbortController();
    await life.run(async () => undefined, { signal: caller.signal });
    const idle = { dependants: dependants(life.signal), listeners: getEventListeners(life.signal, 'abort').length, caller: getEventListeners(caller.signal, 'abort').length };
    for (let i = 0; i < 1000; i++) await life.run(async (signal) => signal.aborted, i % 2 ? { signal: caller.signal } : {});
    assert.equal(getEventListeners(life.signal, 'abort').length, idle.listeners);
    assert.equal(getEventListeners(caller.signal, 'abort').length, idle.caller);
    assert.equal(dependants(life.signal), idle.dependants);
    assert.equal(dependants(caller.signal), 0);
    await life.stop();
  });

  it("a run's signal still fires when the component stops or the caller aborts", async () => {
    const life = new Lifecycle();
    await life.start();
    const caller = new AbortController();
    let seen: AbortSignal | undefined;
    const running = life.run((signal) => {
      seen = signal;
      return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    }, { signal: caller.signal });
    caller.abort('caller gone');
    await running;
    assert.equal(seen!.reason, 'caller gone');
    const second = life.run((signal) => new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason))));
    const stopping = life.stop();
    assert.ok((await second) instanceof Error);
    await stopping;
  });
});

describe('anySignal', () => {
  it('fires for a timeout among its sources though the garbage collector runs meanwhile (node 20\'s AbortSignal.any then never does)', async () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    let fired = 0;
    // Nothing but the listener keeps these signals: what a wait bounded by a timeout leaves behind.
    for (let i = 0; i < 20; i++) anySignal([AbortSignal.timeout(30), new AbortController().signal]).addEventListener('abort', () => fired++, { once: true });
    const collecting = setInterval(gc, 5);
    try {
      await eventually('every timeout fired', () => fired === 20 || undefined);
    } finally {
      clearInterval(collecting);
    }
  });
});

