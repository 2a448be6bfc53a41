// The loops one leader term of the server runs (plugin derivation, node TTLs,
// the claim watcher, the evaluation worker, the garbage collector, the
// periodic dispatcher, deployments, the drainer, controller conditions, drift,
// service reaping): started together in order and stopped in reverse.
// server.ts builds them when this server becomes the leader.

import type { DeploymentWatcher } from './deployments/index.js';
import type { NodeDrainer } from './drainer/index.js';
import type { EvalWorker, GarbageCollector, PeriodicDispatcher } from './jobs/index.js';
import type { NodeService } from './nodes/index.js';
import type { PluginService } from './plugins/index.js';
import type { ServiceReaper } from './services/index.js';
import type { ClaimWatcher } from './volumes/index.js';
import type { ControllerConditions, DriftWatcher } from './volumehealth/index.js';

/** The loops one leader term runs, started together and stopped in reverse. */
export class LeaderTerm {
  readonly nodes: NodeService;
  readonly #plugins: PluginService;
  readonly #claimWatcher: ClaimWatcher;
  readonly #worker: EvalWorker;
  readonly gc: GarbageCollector;
  readonly #periodic: PeriodicDispatcher;
  readonly #deployments: DeploymentWatcher;
  readonly #drainer: NodeDrainer;
  readonly #conditions: ControllerConditions;
  readonly #drift: DriftWatcher;
  readonly #services: ServiceReaper;
  started = false;

  constructor(parts: {
    nodes: NodeService;
    plugins: PluginService;
    claimWatcher: ClaimWatcher;
    worker: EvalWorker;
    gc: GarbageCollector;
    drainer: NodeDrainer;
    periodic: PeriodicDispatcher;
    deployments: DeploymentWatcher;
    conditions: ControllerConditions;
    drift: DriftWatcher;
    services: ServiceReaper;
  }) {
    this.nodes = parts.nodes;
    this.#plugins = parts.plugins;
    this.#claimWatcher = parts.claimWatcher;
    this.#worker = parts.worker;
    this.gc = parts.gc;
    this.#periodic = parts.periodic;
    this.#deployments = parts.deployments;
    this.#drainer = parts.drainer;
    this.#conditions = parts.conditions;
    this.#drift = parts.drift;
    this.#services = parts.services;
  }

  /**
   * Starts plugin derivation, node TTLs, the claim watcher (resuming
   * releases), the evaluation worker, the garbage collector, the periodic
   * dispatcher, the deployment watcher, the controller condition loop and the drift watcher.
   */
  async start(): Promise<void> {
    this.started = true;
    await this.#plugins.start();
    await this.nodes.start();
    await this.#claimWatcher.start();
    await this.#worker.start();
    await this.gc.start();
    await this.#periodic.start();
    await this.#deployments.start();
    await this.#drainer.start();
    await this.#conditions.start();
    await this.#drift.start();
    await this.#services.start();
  }

  /** Stops them in reverse and waits for in-flight work. Safe twice. */
  async stop(): Promise<void> {
    await this.#services.stop();
    await this.#drift.stop();
    await this.#conditions.stop();
    await this.#drainer.stop();
    await this.#deployments.stop();
    await this.#periodic.stop();
    await this.gc.stop();
    await this.#worker.stop();
    await this.#claimWatcher.stop();
    await this.nodes.stop();
    await this.#plugins.stop();
  }
}
