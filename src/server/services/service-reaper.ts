// The leader loop that removes the registrations of allocations that no
// longer run: stopped by the scheduler or a user (desired stop, before any
// shutdown_delay, as Nomad deregisters first), finished, failed, lost with
// their node, or collected. It follows the store's allocation events and, at
// start, sweeps the whole table (what happened under another leader).

import { AbortedError, describeError, Lifecycle, silentLogger, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import type { Allocation } from '../../structs/index.js';
import { StateStoreError, type StateStore } from '../state/index.js';
import { allocMayRegister, dropStaleServices, registrationStale } from './registrations.js';

export interface ServiceReaperOptions {
  store: StateStore;
  clock?: Clock;
  logger?: Logger;
}

/**
 * Lifecycle: start() sweeps once and starts the loop; stop() ends it and
 * waits; safe twice. Writes only deletions, each idempotent.
 */
export class ServiceReaper {
  readonly #store: StateStore;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #life: Lifecycle;

  constructor(opts: ServiceReaperOptions) {
    this.#store = opts.store;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'service-reaper' });
    this.#life = new Lifecycle({ logger: this.#log });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  start(): Promise<void> {
    return this.#life.start(async (signal) => {
      await this.sweep();
      void this.#life.track(this.#loop(signal));
    });
  }

  stop(): Promise<void> {
    return this.#life.stop();
  }

  /** Deletes every stale registration now. Returns how many went. */
  async sweep(): Promise<number> {
    const snap = this.#store.snapshot();
    const stale = new Set(snap.list('services', { filter: (r) => registrationStale(snap, r) }).map((r) => r.allocId));
    return this.#drop(stale);
  }

  async #drop(allocIds: ReadonlySet<string>): Promise<number> {
    if (allocIds.size === 0) return 0;
    const { result } = await this.#store.write((txn) => {
      let n = 0;
      for (const id of allocIds) n += dropStaleServices(txn, id);
      return n;
    });
    if (result > 0) this.#log.info({ registrations: result, allocations: allocIds.size }, 'services deregistered');
    return result;
  }

  async #loop(signal: AbortSignal): Promise<void> {
    let seen = this.#store.latestIndex();
    while (!signal.aborted && !this.#store.closed) {
      try {
        await this.#store.blockUntil(['allocations'], seen, { signal });
        const snap = this.#store.snapshot();
        const events = snap.events(seen, { topics: ['allocations'] });
        const oldest = snap.oldestEventIndex;
        const gap = oldest > seen + 1;
        seen = snap.index;
        if (gap) {
          await this.sweep();
          continue;
        }
        const ids = new Set<string>();
        for (const ev of events) {
          const a = ev.row as Allocation;
          if (ev.op === 'delete' || !allocMayRegister(a)) ids.add(a.id);
        }
        // Only those that still have registrations: most allocation changes touch none.
        const holding = new Set(snap.list('services', { filter: (r) => ids.has(r.allocId) }).map((r) => r.allocId));
        await this.#drop(holding);
      } catch (err) {
        if (err instanceof AbortedError || signal.aborted) return;
        if (err instanceof StateStoreError && err.code === 'STORE_CLOSED') return;
        this.#log.error({ err: describeError(err) }, 'deregistering services failed; sweeping again');
        await this.#clock.sleep(1000, signal).catch(() => undefined);
      }
    }
  }
}
