import { AbortedError, describeError, Lifecycle, silentLogger, type LifecycleState, type Logger } from '../../lib/index.js';
import type { CsiPlugin } from '../../structs/index.js';
import { rowKey, StateStoreError, type StateStore } from '../state/index.js';
import { updatePlugins } from './derive.js';

export interface PluginServiceOptions {
  store: StateStore;
  logger?: Logger;
}

export type ServiceState = LifecycleState;

/**
 * Reads of the derived plugin rows, and a watcher that keeps them in step
 * with jobs and allocations (node writes recompute plugins in their own
 * transaction). Lifecycle (lib Lifecycle): start() returns once the first
 * recompute is done (a second start is a no-op); stop() is safe twice and
 * waits for the watcher to end.
 */
export class PluginService {
  readonly #store: StateStore;
  readonly #logger: Logger;
  readonly #life: Lifecycle;

  constructor(opts: PluginServiceOptions) {
    this.#store = opts.store;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'plugins' });
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get state(): ServiceState {
    return this.#life.state;
  }

  get(pluginId: string): CsiPlugin | undefined {
    return this.#store.snapshot().get('plugins', rowKey(pluginId));
  }

  list(): CsiPlugin[] {
    return this.#store.snapshot().list('plugins');
  }

  /** Recomputes every plugin now; resolves with the store index. Safe to repeat. */
  async recompute(): Promise<number> {
    return (await this.#store.write((txn) => updatePlugins(txn))).index;
  }

  start(): Promise<void> {
    return this.#life.start((signal) => this.#start(signal));
  }

  async #start(signal: AbortSignal): Promise<void> {
    let seen = await this.recompute();
    void this.#life.track((async () => {
      while (!signal.aborted) {
        try {
          const index = await this.#store.blockUntil(['jobs', 'allocations'], seen, { signal });
          seen = index;
          await this.recompute();
        } catch (err) {
          if (err instanceof AbortedError || (err instanceof StateStoreError && err.code === 'STORE_CLOSED')) return;
          this.#logger.error({ err: describeError(err) }, 'plugin recompute failed');
        }
      }
    })());
  }

  /** Ends the watcher and waits for it. Safe twice; never rejects. */
  stop(): Promise<void> {
    return this.#life.stop();
  }
}
