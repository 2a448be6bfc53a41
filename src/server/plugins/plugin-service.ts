import { AbortedError, describeError, silentLogger, type Logger } from '../../lib/index.js';
import type { CsiPlugin } from '../../structs/index.js';
import { rowKey, StateStoreError, type StateStore } from '../state/index.js';
import { updatePlugins } from './derive.js';

export interface PluginServiceOptions {
  store: StateStore;
  logger?: Logger;
}

export type ServiceState = 'idle' | 'running' | 'stopping' | 'stopped';

/**
 * Reads of the derived plugin rows, and a watcher that keeps them in step
 * with jobs and allocations (node writes recompute plugins in their own
 * transaction). Lifecycle: start() returns once the first recompute is done;
 * stop() is safe twice and waits for the watcher to end.
 */
export class PluginService {
  readonly #store: StateStore;
  readonly #logger: Logger;
  #state: ServiceState = 'idle';
  #ac: AbortController | undefined;
  #loop: Promise<void> | undefined;

  constructor(opts: PluginServiceOptions) {
    this.#store = opts.store;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'plugins' });
  }

  get state(): ServiceState {
    return this.#state;
  }

  get(pluginId: string): CsiPlugin | undefined {
    return this.#store.snapshot().get('plugins', rowKey(pluginId));
  }

  list(): CsiPlugin[] {
    return this.#store.snapshot().list('plugins');
  }

  /** Recomputes every plugin now. Synchronous; safe to repeat. */
  recompute(): number {
    return this.#store.write((txn) => updatePlugins(txn)).index;
  }

  async start(): Promise<void> {
    if (this.#state === 'running') return;
    this.#ac = new AbortController();
    let seen = this.recompute();
    this.#state = 'running';
    const signal = this.#ac.signal;
    this.#loop = (async () => {
      while (!signal.aborted) {
        try {
          const index = await this.#store.blockUntil(['jobs', 'allocations'], seen, { signal });
          seen = index;
          this.recompute();
        } catch (err) {
          if (err instanceof AbortedError || (err instanceof StateStoreError && err.code === 'STORE_CLOSED')) return;
          this.#logger.error({ err: describeError(err) }, 'plugin recompute failed');
        }
      }
    })();
  }

  async stop(): Promise<void> {
    if (this.#state !== 'running') {
      this.#state = this.#state === 'idle' ? 'idle' : 'stopped';
      return;
    }
    this.#state = 'stopping';
    this.#ac?.abort();
    await this.#loop;
    this.#state = 'stopped';
  }
}
