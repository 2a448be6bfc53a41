import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { BerthError } from './errors.js';
import { Lifecycle, LifecycleError, type LifecycleState } from './lifecycle.js';
import { createLogger } from './logger.js';

/** A promise with its resolve/reject outside. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A logger at debug whose lines land in `lines`. */
function capturingLogger(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  });
  const logger = createLogger({ level: 'debug', destination }).child({ component: 'thing' });
  return { logger, lines };
}

describe('Lifecycle', () => {
  it('moves new -> starting -> running -> stopping -> stopped and logs every move at debug with the component', async () => {
    const { logger, lines } = capturingLogger();
    const life = new Lifecycle({ logger });
    assert.equal(life.state, 'new');
    const seen: LifecycleState[] = [];
    await life.start(() => {
      seen.push(life.state);
    });
    assert.deepEqual(seen, ['starting']);
    assert.equal(life.state, 'running');
    await life.stop(() => {
      seen.push(life.state);
    });
    assert.deepEqual(seen, ['starting', 'stopping']);
    assert.equal(life.state, 'stopped');
    const moves = lines.filter((l) => l['msg'] === 'lifecycle');
    assert.deepEqual(
      moves.map((l) => [l['from'], l['to']]),
      [
        ['new', 'starting'],
        ['starting', 'running'],
        ['running', 'stopping'],
        ['stopping', 'stopped'],
      ],
    );
    for (const l of moves) {
      assert.equal(l['level'], 20);
      assert.equal(l['component'], 'thing');
    }
  });

  it('runs the start step once: a second start while starting or running shares the first', async () => {
    const life = new Lifecycle();
    let calls = 0;
    const gate = deferred();
    const first = life.start(async () => {
      calls++;
      await gate.promise;
    });
    const second = life.start(() => {
      calls++;
    });
    assert.equal(first, second);
    gate.resolve();
    await first;
    await life.start(() => {
      calls++;
    });
    assert.equal(calls, 1);
    assert.equal(life.state, 'running');
  });

  it('refuses a start after stop, with LIFECYCLE_STOPPED or the error the component chose', async () => {
    const life = new Lifecycle();
    await life.start();
    await life.stop();
    await assert.rejects(life.start(), (err: unknown) => err instanceof LifecycleError && err.code === 'LIFECYCLE_STOPPED');

    const own = new Lifecycle({ refuse: (state, what) => new BerthError('THING_STOPPED', `${what} while ${state}`) });
    await own.stop();
    await assert.rejects(own.start(), { code: 'THING_STOPPED', message: 'start while stopped' });
  });

  it('stop is safe twice: concurrent stops share one promise and the teardown runs once', async () => {
    const life = new Lifecycle();
    await life.start();
    let teardowns = 0;
    const gate = deferred();
    const a = life.stop(async () => {
      teardowns++;
      await gate.promise;
    });
    const b = life.stop(() => {
      teardowns++;
    });
    assert.equal(a, b);
    assert.equal(life.state, 'stopping');
    gate.resolve();
    await Promise.all([a, b]);
    await life.stop();
    assert.equal(teardowns, 1);
    assert.equal(life.state, 'stopped');
  });

  it('a stop before start goes straight to stopped without the teardown', async () => {
    const life = new Lifecycle();
    let teardowns = 0;
    await life.stop(() => {
      teardowns++;
    });
    assert.equal(life.state, 'stopped');
    assert.equal(teardowns, 0);
    assert.equal(life.signal.aborted, true);
  });

  it('a stop during start aborts the start step, waits for it and then tears down', async () => {
    const life = new Lifecycle();
    const order: string[] = [];
    const started = life.start(async (signal) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      order.push('start step saw the abort');
    });
    const stopped = life.stop(() => {
      order.push('teardown');
    });
    await started;
    await stopped;
    assert.deepEqual(order, ['start step saw the abort', 'teardown']);
    assert.equal(life.state, 'stopped');
  });

  it('a failed start leaves it stopped, rejects every later start with that error, and stop resolves at once', async () => {
    const life = new Lifecycle();
    const boom = new Error('no socket');
    await assert.rejects(
      life.start(() => {
        throw boom;
      }),
      boom,
    );
    assert.equal(life.state, 'stopped');
    await assert.rejects(life.start(), boom);
    let teardowns = 0;
    await life.stop(() => {
      teardowns++;
    });
    assert.equal(teardowns, 0);
  });

  it('stop waits for work in flight (runs and tracked loops), including work they begin meanwhile', async () => {
    const life = new Lifecycle();
    await life.start();
    const call = deferred<string>();
    const loop = deferred();
    const later = deferred();
    const result = life.run(() => call.promise);
    void life.track(loop.promise.then(() => void life.track(later.promise)));
    let stopped = false;
    const stopping = life.stop().then(() => {
      stopped = true;
    });
    assert.equal(life.inFlight, 2);
    call.resolve('done');
    assert.equal(await result, 'done');
    loop.resolve();
    await loop.promise;
    // The loop has ended and began `later`; stop waits for that too.
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.equal(stopped, false);
    assert.equal(life.state, 'stopping');
    later.resolve();
    await stopping;
    assert.equal(life.state, 'stopped');
    assert.equal(life.inFlight, 0);
  });

  it('work fails, not stop: a rejected run or tracked promise is the caller’s, and stop still completes', async () => {
    const life = new Lifecycle();
    await life.start();
    const failed = life.run(() => Promise.reject(new Error('plugin said no')));
    await assert.rejects(failed, /plugin said no/);
    const tracked = life.track(Promise.reject(new Error('loop broke')));
    await assert.rejects(tracked, /loop broke/);
    await life.stop();
    assert.equal(life.state, 'stopped');
  });

  it('refuses work before start and from the moment stop is called, without calling it', async () => {
    const life = new Lifecycle({ refuse: (state) => new BerthError('THING_STOPPED', `thing is ${state}`) });
    let calls = 0;
    const work = async (): Promise<void> => {
      calls++;
    };
    await assert.rejects(life.run(work), { code: 'THING_STOPPED', message: 'thing is new' });
    await life.start();
    await life.run(work);
    const gate = deferred();
    await life.start();
    const stopping = life.stop(() => gate.promise);
    await assert.rejects(life.run(work), { code: 'THING_STOPPED', message: 'thing is stopping' });
    gate.resolve();
    await stopping;
    await assert.rejects(life.run(work), { code: 'THING_STOPPED', message: 'thing is stopped' });
    assert.equal(calls, 1);
  });

  it('a run sees its own signal fire when stop begins or when the caller aborts, with the stop reason', async () => {
    const reason = new BerthError('THING_STOPPED', 'thing is stopping');
    const life = new Lifecycle({ stopReason: () => reason });
    await life.start();
    const caller = new AbortController();
    const byCaller = life.run(
      (signal) => new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })),
      { signal: caller.signal },
    );
    caller.abort(new Error('caller gave up'));
    assert.match(String(await byCaller), /caller gave up/);
    assert.equal(life.signal.aborted, false);

    const byStop = life.run((signal) => new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true })));
    await life.stop();
    assert.equal(await byStop, reason);
    assert.equal(life.signal.reason, reason);
  });

  it('a teardown that throws is logged and the stop still ends stopped', async () => {
    const { logger, lines } = capturingLogger();
    const life = new Lifecycle({ logger });
    await life.start();
    await life.stop(() => {
      throw new Error('socket already gone');
    });
    assert.equal(life.state, 'stopped');
    assert.ok(lines.some((l) => l['msg'] === 'error while stopping' && l['err'] === 'socket already gone'));
  });
  it('startLoop runs one background loop once, and stop() waits until the loop has ended', async () => {
    const life = new Lifecycle();
    const loopEnded = deferred();
    let loops = 0;
    let sawAbort = false;
    const loop = async (signal: AbortSignal): Promise<void> => {
      loops++;
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      sawAbort = true;
      await loopEnded.promise;
    };
    life.startLoop(loop);
    life.startLoop(loop);
    await life.start();
    assert.equal(life.state, 'running');
    assert.equal(loops, 1, 'a second startLoop is a no-op');
    let stopped = false;
    const stopping = life.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(sawAbort, true, 'the loop saw the stop signal');
    assert.equal(stopped, false, 'stop() waits while the loop is still ending');
    loopEnded.resolve();
    await stopping;
    assert.equal(life.state, 'stopped');
    life.startLoop(loop);
    assert.equal(loops, 1, 'no loop after stop');
  });
});
