// Group network mode `none`: the group's own network namespace with only
// loopback, made before the tasks start and removed after they ended.

import type { RunnerDriver, RunnerNetwork } from '../taskrunner/index.js';
import { AllocRunnerError, type AllocHook, type AllocHookContext } from './alloc-hook.js';

export class NetworkHook implements AllocHook {
  readonly name = 'network';
  readonly #network: RunnerNetwork;
  readonly #drivers: ReadonlyMap<string, RunnerDriver>;

  constructor(network: RunnerNetwork, drivers: ReadonlyMap<string, RunnerDriver>) {
    this.#network = network;
    this.#drivers = drivers;
  }

  /** Throws ALLOC_NETWORK_UNSUPPORTED when a task's driver cannot join a `none` network. */
  async prerun(ctx: AllocHookContext): Promise<void> {
    const mode = ctx.group.network.mode;
    if (mode === 'host') return;
    for (const task of ctx.group.tasks) {
      const driver = this.#drivers.get(task.driver);
      if (driver && !driver.capabilities.networkModes.includes(mode)) {
        throw new AllocRunnerError(
          'ALLOC_NETWORK_UNSUPPORTED',
          `task "${task.name}": driver ${driver.name} does not support network mode "${mode}" (it supports ${driver.capabilities.networkModes.join(', ') || 'none'})`,
        );
      }
    }
    if (ctx.record.network) return;
    // A driver that must initiate the network makes it (Nomad's CreateNetwork); the others join it.
    const initiator = ctx.group.tasks.map((t) => this.#drivers.get(t.driver)).find((d) => d?.capabilities.mustInitiateNetwork && d.createNetwork);
    if (initiator?.createNetwork) {
      const { path } = await initiator.createNetwork(ctx.alloc.id, ctx.alloc.id.slice(0, 8));
      ctx.record.network = { path, driver: initiator.name };
    } else {
      const { path } = await this.#network.create(ctx.alloc.id);
      ctx.record.network = { path };
    }
    ctx.save();
  }

  async postrun(ctx: AllocHookContext): Promise<void> {
    if (!ctx.record.network) return;
    const initiator = ctx.record.network.driver ? this.#drivers.get(ctx.record.network.driver) : undefined;
    if (initiator?.destroyNetwork) await initiator.destroyNetwork(ctx.alloc.id, ctx.record.network.path);
    else await this.#network.destroy(ctx.alloc.id);
    delete ctx.record.network;
    ctx.save();
  }
}
