// The group's own network (modes none, bridge, cni/<name>): a namespace made
// before the tasks start, attached by the network manager (CNI for bridge
// and cni), and removed after they ended. A driver whose capabilities say
// MustInitiateNetwork makes the namespace itself (Nomad's CreateNetwork);
// the agent then only attaches it.

import { supportsNetworkMode } from '../../structs/index.js';
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

  /**
   * Throws ALLOC_NETWORK_UNSUPPORTED when a task's driver cannot join the
   * group's network mode, or the network manager's NetworkError. A network
   * already recorded (an agent restart) is kept as it is, but for a driver's
   * namespace that the agent had not finished attaching.
   */
  async prerun(ctx: AllocHookContext): Promise<void> {
    const mode = ctx.group.network.mode;
    if (mode === 'host') return;
    for (const task of ctx.group.tasks) {
      const driver = this.#drivers.get(task.driver);
      if (driver && !supportsNetworkMode(driver.capabilities.networkModes, mode)) {
        throw new AllocRunnerError(
          'ALLOC_NETWORK_UNSUPPORTED',
          `task "${task.name}": driver ${driver.name} does not support network mode "${mode}" (it supports ${driver.capabilities.networkModes.join(', ') || 'none'})`,
        );
      }
    }
    const req = { mode, ports: ctx.alloc.ports ?? [] };
    const recorded = ctx.record.network;
    if (recorded) {
      // A namespace a driver made, written down before the agent attached it: an agent that died
      // in between left it unattached, or attached without the address in the record. Attaching
      // again is safe (the network manager hands back an attachment it has).
      if (!recorded.driver || recorded.attached || recorded.address !== undefined || mode === 'none') return;
      const { path, driver, labels } = recorded;
      ctx.record.network = { ...(await this.#network.create(ctx.alloc.id, req, { netnsPath: path })), path, driver, attached: true, ...(labels ? { labels } : {}) };
      ctx.save();
      return;
    }
    const initiator = ctx.group.tasks.map((t) => this.#drivers.get(t.driver)).find((d) => d?.capabilities.mustInitiateNetwork && d.createNetwork);
    if (initiator?.createNetwork) {
      const made = await initiator.createNetwork(ctx.alloc.id, ctx.alloc.id.slice(0, 8));
      const { path } = made;
      const labels = made.labels && Object.keys(made.labels).length ? { labels: { ...made.labels } } : {};
      // Written down first: postrun must hand the namespace back to the driver even if attaching fails.
      ctx.record.network = { path, driver: initiator.name, mode, ...labels };
      ctx.save();
      if (mode !== 'none') ctx.record.network = { ...(await this.#network.create(ctx.alloc.id, req, { netnsPath: path })), path, driver: initiator.name, attached: true, ...labels };
    } else {
      ctx.record.network = await this.#network.create(ctx.alloc.id, req);
    }
    ctx.save();
    const { address } = ctx.record.network;
    if (address) ctx.event('Network', `${mode} network: address ${address}`, { mode, address });
  }

  async postrun(ctx: AllocHookContext): Promise<void> {
    if (!ctx.record.network) return;
    const { driver, mode, path, labels } = ctx.record.network;
    const initiator = driver ? this.#drivers.get(driver) : undefined;
    if (initiator?.destroyNetwork) {
      if (mode && mode !== 'none') await this.#network.destroy(ctx.alloc.id);
      await initiator.destroyNetwork(ctx.alloc.id, path, labels);
    } else {
      await this.#network.destroy(ctx.alloc.id);
    }
    delete ctx.record.network;
    ctx.save();
  }
}
