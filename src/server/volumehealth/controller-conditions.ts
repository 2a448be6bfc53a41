// The leader loop that asks controllers about volumes no node reports on:
// for every volume with no claim (published nowhere) whose plugin's
// controller advertises GET_VOLUME and VOLUME_CONDITION, ControllerGetVolume
// through the controller router, and the condition it answers goes to the
// health service. Published volumes are left to their nodes' stats.

import { describeError, IntervalLoop, silentLogger, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import type { NodeRpcParams, NodeRpcResult } from '../../structs/index.js';
import { keyPrefix, rowKey, type StateStore } from '../state/index.js';
import type { VolumeHealthService } from './volume-health-service.js';

/** What the loop needs of the controller router (ControllerRouter has it). */
export interface ControllerGetVolumeRouter {
  candidates(pluginId: string): string[];
  call(pluginId: string, method: 'csi.controller.getVolume', params: NodeRpcParams<'csi.controller.getVolume'>, opts?: { signal?: AbortSignal }): Promise<NodeRpcResult<'csi.controller.getVolume'>>;
}

export interface ControllerConditionsOptions {
  store: StateStore;
  router: ControllerGetVolumeRouter;
  health: VolumeHealthService;
  clock?: Clock;
  logger?: Logger;
  /** How often every unpublished volume is asked about. Default 60 s. */
  intervalMs?: number;
}

/**
 * Lifecycle as IntervalLoop's: start() returns once the loop runs (its first
 * round after one interval), stop() is safe twice and waits for the round in
 * flight. `checkNow()` runs one round at once (tests, operators); it never
 * throws for a plugin's failure (logged, the next round tries again).
 */
export class ControllerConditions {
  readonly #opts: ControllerConditionsOptions;
  readonly #log: Logger;
  readonly #loop: IntervalLoop;

  constructor(opts: ControllerConditionsOptions) {
    this.#opts = opts;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'controller-conditions' });
    this.#loop = new IntervalLoop({
      clock: opts.clock ?? systemClock,
      logger: this.#log,
      intervalMs: opts.intervalMs ?? 60_000,
      step: async (signal) => void (await this.checkNow({ signal })),
    });
  }

  get state(): LifecycleState {
    return this.#loop.state;
  }

  start(): Promise<void> {
    return this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** One round: resolves with how many volumes were asked. */
  async checkNow(opts: { signal?: AbortSignal } = {}): Promise<number> {
    const snap = this.#opts.store.snapshot();
    let asked = 0;
    for (const v of snap.list('volumes')) {
      if (opts.signal?.aborted) break;
      const plugin = snap.get('plugins', rowKey(v.pluginId));
      const caps = plugin?.controllerCapabilities ?? [];
      if (!caps.includes('GET_VOLUME') || !caps.includes('VOLUME_CONDITION')) continue;
      if (snap.list('claims', { prefix: keyPrefix(v.namespace, v.id) }).length > 0) continue;
      const controller = this.#opts.router.candidates(v.pluginId)[0];
      if (!controller) continue;
      asked++;
      try {
        const got = await this.#opts.router.call(v.pluginId, 'csi.controller.getVolume', { pluginId: v.pluginId, volumeId: v.externalId }, opts.signal ? { signal: opts.signal } : {});
        if (got.condition) await this.#opts.health.controllerCondition(v.namespace, v.id, v.pluginId, controller, got.condition);
      } catch (err) {
        if (opts.signal?.aborted) break;
        this.#log.info({ volumeId: v.id, namespace: v.namespace, pluginId: v.pluginId, err: describeError(err) }, 'ControllerGetVolume failed');
      }
    }
    return asked;
  }
}
