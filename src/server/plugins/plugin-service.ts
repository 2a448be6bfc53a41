import { AbortedError, describeError, Lifecycle, silentLogger, type LifecycleState, type Logger } from '../../lib/index.js';
import { withNodeInstances, type CsiPlugin, type Job } from '../../structs/index.js';
import { rowKey, StateStoreError, type StateStore, type StoreEvent } from '../state/index.js';
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

  /** The plugin with its node instances (read from the node rows: O(nodes)). */
  get(pluginId: string): CsiPlugin | undefined {
    const snap = this.#store.snapshot();
    const row = snap.get('plugins', rowKey(pluginId));
    return row && withNodeInstances(row, snap.list('nodes'));
  }

  /** Every plugin with its node instances (O(plugins x nodes)). */
  list(): CsiPlugin[] {
    const snap = this.#store.snapshot();
    const nodes = snap.list('nodes');
    return snap.list('plugins').map((row) => withNodeInstances(row, nodes));
  }

  /** Keys (namespace, job ID) of the jobs that ran a plugin task at the last recompute. */
  #pluginJobs = new Set<string>();

  /** Recomputes every plugin now; resolves with the store index. Safe to repeat. */
  async recompute(): Promise<number> {
    const { index } = await this.#store.write((txn) => updatePlugins(txn));
    this.#pluginJobs = new Set(this.#store.snapshot().list('jobs', { filter: runsPlugin }).map((j) => rowKey(j.namespace, j.id)));
    return index;
  }

  /**
   * Whether writes after `since` may change a plugin row: a write to a job
   * that runs (or ran, at the last recompute) a plugin task, or to one of its
   * allocations. Any other job or allocation (most of them, in a burst of
   * registrations) changes no plugin, so it costs no pass over every job and
   * allocation. True when the change history no longer reaches back that far.
   */
  #concernsPlugins(since: number): boolean {
    const snap = this.#store.snapshot();
    if (snap.oldestEventIndex > since + 1 && since > 0) return true;
    return snap.events(since, { topics: ['jobs', 'allocations'] }).some((e) => this.#concerns(e));
  }

  #concerns(e: StoreEvent): boolean {
    if (!e.row || typeof e.row !== 'object') return true;
    if (e.topic === 'jobs') {
      const job = e.row as Job;
      return runsPlugin(job) || this.#pluginJobs.has(rowKey(job.namespace, job.id));
    }
    const alloc = e.row as { namespace?: string; jobId?: string };
    if (alloc.namespace === undefined || alloc.jobId === undefined) return true;
    return this.#pluginJobs.has(rowKey(alloc.namespace, alloc.jobId));
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
          const relevant = this.#concernsPlugins(seen);
          seen = index;
          if (relevant) await this.recompute();
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

/** Whether any task of the job runs a CSI plugin (a `csi_plugin` block). */
function runsPlugin(job: Job): boolean {
  return job.groups.some((g) => g.tasks.some((t) => (t as { csiPlugin?: unknown }).csiPlugin !== undefined));
}
