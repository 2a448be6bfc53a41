// Live data: one event stream for the whole tab (api.followEvents), and a
// hook that loads a page's data and loads it again when a change of one of
// its topics arrives. Changes that arrive together cause one reload, so a
// page shows a change well within a second of the store's commit.

import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, followEvents, topicMatches, type StreamEvent } from './api';

type Listener = (ev: StreamEvent) => void;

/** The connection's state, for the header's indicator. */
export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'refused';

class EventHub {
  #listeners = new Set<Listener>();
  #stateListeners = new Set<(s: StreamState) => void>();
  #recent: StreamEvent[] = [];
  #abort: AbortController | undefined;
  state: StreamState = 'connecting';

  /** Starts following the stream (again); safe to repeat. */
  start(): void {
    this.#abort?.abort();
    const abort = new AbortController();
    this.#abort = abort;
    void this.#run(abort.signal);
  }

  stop(): void {
    this.#abort?.abort();
    this.#abort = undefined;
  }

  async #run(signal: AbortSignal): Promise<void> {
    let index: number | undefined;
    let delay = 500;
    while (!signal.aborted) {
      this.#setState(index === undefined ? 'connecting' : 'reconnecting');
      try {
        index = await followEvents((ev) => this.#emit(ev), {
          signal,
          ...(index === undefined ? {} : { index }),
          onOpen: () => this.#setState('live'),
        });
        delay = 500;
      } catch (err) {
        if (signal.aborted) return;
        if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
          this.#setState('refused');
          return;
        }
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10_000);
    }
  }

  #setState(s: StreamState): void {
    this.state = s;
    for (const l of this.#stateListeners) l(s);
  }

  #emit(ev: StreamEvent): void {
    if (this.state !== 'live') this.#setState('live');
    this.#recent.unshift(ev);
    this.#recent.length = Math.min(this.#recent.length, 50);
    for (const l of this.#listeners) l(ev);
  }

  /** Changes seen since the page opened, newest first (at most 50). */
  get recent(): readonly StreamEvent[] {
    return this.#recent;
  }

  subscribe(l: Listener): () => void {
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }

  onState(l: (s: StreamState) => void): () => void {
    this.#stateListeners.add(l);
    return () => this.#stateListeners.delete(l);
  }
}

/** The tab's one event stream. */
export const hub = new EventHub();

export interface Loaded<T> {
  data: T | undefined;
  error: Error | undefined;
  /** Loads again now (after an action). */
  reload(): void;
}

/**
 * Loads `load()` now, and again whenever a change of one of `topics` (event
 * stream topic names: Node, CSIPlugin, CSIVolume, claim, Allocation, Job,
 * Evaluation, ...) arrives; `key` names what is loaded (a new key loads afresh).
 * `everyMs` also loads again at that period, for data that changes without
 * an event (volume usage is kept in the server's memory, not the store).
 * Keeps the last good data while a reload fails.
 */
export function useLive<T>(key: string, topics: readonly string[], load: () => Promise<T>, opts: { everyMs?: number } = {}): Loaded<T> {
  const [state, setState] = useState<{ key: string; data?: T; error?: Error }>({ key });
  const loadRef = useRef(load);
  loadRef.current = load;
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let pending: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    let again = false;
    const run = async (): Promise<void> => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        const data = await loadRef.current();
        if (live) setState({ key, data });
      } catch (err) {
        if (live) setState((s) => ({ ...s, key, error: err as Error }));
      } finally {
        running = false;
        if (again && live) {
          again = false;
          void run();
        }
      }
    };
    void run();
    const every = opts.everyMs ? setInterval(() => void run(), opts.everyMs) : undefined;
    const unsubscribe = hub.subscribe((ev) => {
      if (!topicMatches(topics, ev.Topic)) return;
      clearTimeout(pending);
      pending = setTimeout(() => void run(), 30);
    });
    return () => {
      live = false;
      clearTimeout(pending);
      clearInterval(every);
      unsubscribe();
    };
    // `topics` and `load` are fixed per page: only a new key (or reload) starts over.
  }, [key, tick]);
  const same = state.key === key;
  return { data: same ? state.data : undefined, error: same ? state.error : undefined, reload: () => setTick((t) => t + 1) };
}

/** The stream's state, re-rendering on change. */
export function useStreamState(): StreamState {
  const [s, setS] = useState(hub.state);
  useEffect(() => {
    const off = hub.onState(setS);
    setS(hub.state); // it may have changed between the render and this effect
    return off;
  }, []);
  return s;
}

/**
 * Waits until `check` answers a string (the outcome), calling it now and
 * after every change of `topics`; `check` may call `progress` to say how far
 * it got. Rejects after `timeoutMs` (default 2 min) with what it last saw.
 */
export function watchUntil(topics: readonly string[], check: () => Promise<string | undefined>, timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let done = false;
    let running = false;
    let again = false;
    const finish = (fn: () => void): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      unsubscribe();
      fn();
    };
    const run = async (): Promise<void> => {
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        const outcome = await check();
        if (outcome !== undefined) finish(() => resolve(outcome));
      } catch (err) {
        finish(() => reject(err as Error));
      } finally {
        running = false;
        if (again && !done) {
          again = false;
          void run();
        }
      }
    };
    const unsubscribe = hub.subscribe((ev) => {
      if (topicMatches(topics, ev.Topic)) void run();
    });
    const timer = setTimeout(() => finish(() => reject(new Error('no outcome within 2 minutes; the page keeps showing the live state'))), timeoutMs);
    void run();
  });
}
