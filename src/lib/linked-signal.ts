// A signal that aborts when any of several does: AbortSignal.any without its
// leak. Node 20's AbortSignal.any keeps a WeakRef to every signal it made in
// each source's set of dependants, and never takes it out (the WeakRef stays
// after its target is collected). A loop that links a short-lived signal to
// its component's long-lived one on every tick, or a request that links to
// the component's stop signal, grows that set by one each time for as long
// as the component runs: the 200-job bench left 3,300 of them behind.
// And a signal of AbortSignal.timeout() among AbortSignal.any's sources is
// held only weakly there (nodejs/node#57736): collected before its time, it
// never fires, and the wait it bounds never ends. Here each source holds an
// 'abort' listener, which keeps a timeout signal alive until it fires.

/** A signal linked to its sources; `unlink()` lets go of them. */
export interface LinkedSignal {
  /** Aborts, with the first source's reason, when any source aborts (at once if one already has). */
  readonly signal: AbortSignal;
  /** Removes the listeners on the sources; `signal` no longer follows them. Safe to repeat. */
  unlink(): void;
}

/**
 * Links a new signal to `sources` through one 'abort' listener on each, and
 * removes them all when the signal aborts or `unlink()` is called. Callers
 * whose signal may never abort (the work finished first) call `unlink()`
 * when done; callers that abort one of the sources after the wait (a tick's
 * own controller) need not. Never throws.
 */
export function linkSignals(sources: readonly AbortSignal[]): LinkedSignal {
  const ac = new AbortController();
  const already = sources.find((s) => s.aborted);
  if (already) {
    ac.abort(already.reason);
    return { signal: ac.signal, unlink: () => undefined };
  }
  const unlink = (): void => {
    for (const s of sources) s.removeEventListener('abort', onAbort);
  };
  const onAbort = (event: Event): void => {
    unlink();
    ac.abort((event.target as AbortSignal).reason);
  };
  for (const s of sources) s.addEventListener('abort', onAbort);
  return { signal: ac.signal, unlink };
}

/**
 * AbortSignal.any for a one-off wait, safe with AbortSignal.timeout() among
 * `sources` (see the top of this file): the signal of linkSignals(sources).
 * A timeout source keeps it alive until the timeout fires.
 */
export function anySignal(sources: readonly AbortSignal[]): AbortSignal {
  return linkSignals(sources).signal;
}

/**
 * The reason a loop gives when it aborts its own short-lived controller (a
 * wait that ended: woken by a store change, a timer, a deadline). Bare
 * `abort()` makes a DOMException with a stack trace each time, the largest
 * part of a store watcher's wake-up, and every store write wakes several
 * watchers. Never shown to a user: a loop aborts its own controller only
 * once it no longer waits on it.
 */
export const WAIT_ENDED: Error = Object.freeze(new Error('the wait ended'));

/**
 * Hands out signals that abort when `source` does, through one 'abort'
 * listener on `source` for all of them. A component whose stop signal every
 * running task's wait listened to directly had one listener per task, and
 * Node warned of a leak (MaxListenersExceededWarning) past ten tasks; with
 * this, its stop signal has one listener however many waits are in flight.
 */
export class SignalFanout {
  readonly #source: AbortSignal;
  readonly #children = new Set<AbortController>();

  constructor(source: AbortSignal) {
    this.#source = source;
    source.addEventListener(
      'abort',
      () => {
        for (const c of this.#children) c.abort(source.reason);
        this.#children.clear();
      },
      { once: true },
    );
  }

  /**
   * Runs `work` with a signal that aborts when the source does, and lets go
   * of it after. With the source already aborted, the signal is aborted
   * from the start. Rethrows what `work` throws.
   */
  async run<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ac = new AbortController();
    if (this.#source.aborted) ac.abort(this.#source.reason);
    else this.#children.add(ac);
    try {
      return await work(ac.signal);
    } finally {
      this.#children.delete(ac);
    }
  }
}
