// The Client's allocation sync (Nomad's client runAllocs/addAlloc/
// updateAlloc/removeAlloc): one allocation runner made for each allocation
// (restored or new) with its status reported back, and each change of the
// server's allocation list acted on (applyAllocList in _alloc-list.ts: add,
// update, destroy), the tombstones of collected allocations forgotten, the
// list's index noted, and once the first list came the CSI volumes
// reconciled with it. Private to src/client (Client composes it).

import type { Clock, Logger } from '../lib/index.js';
import type { Allocation, Job } from '../structs/index.js';
import { AllocRunner, type AllocRunnerOptions, type AllocStatusUpdate } from './allocrunner/index.js';
import type { ChrootCache } from './allocdir/index.js';
import type { CsiManager } from './csimanager/index.js';
import type { TaskDriver } from './drivers/index.js';
import type { PluginRegistry } from './dynamicplugins/index.js';
import type { HostVolumeManager } from './hostvolumes/index.js';
import type { NetworkManager } from './network/index.js';
import type { AllocUpdate, HttpVolumeClaimer, StatusReporter } from './serverconn/index.js';
import type { ClientStateStore } from './state/index.js';
import type { ServiceCatalog } from './template/index.js';
import { noteAllocIndex, type NodeRecord } from './_server-link.js';
import type { NodeFingerprinter } from './_fingerprint.js';
import type { NodeMeta } from './_node-meta.js';
import type { ServiceChecks } from './_service-checks.js';
import { applyAllocList } from './_alloc-list.js';
import { AdmissionWindow, DEFAULT_START_HOLD_MS, DEFAULT_START_WINDOW } from './_admission.js';
import { GC_BUCKET } from './_alloc-gc.js';
import { reconcileVolumes } from './_restore.js';
import { allocRunnerOptions, type RunnerParts } from './_alloc-runner-options.js';
import type { ClientOptions, RunnerEntry } from './_client-types.js';

/** What the sync needs of the Client: its started parts and the maps of runners it shares with it. */
export interface AllocSyncDeps {
  opts: ClientOptions;
  runners: Map<string, RunnerEntry>;
  /** Runners being destroyed (the server dropped them). */
  leaving: Map<string, RunnerEntry>;
  /** IDs in GC_BUCKET, kept until the server no longer lists them. */
  collected: Set<string>;
  statusListeners: Set<() => void>;
  store: ClientStateStore;
  node: NodeRecord;
  drivers: Map<string, TaskDriver>;
  registry: PluginRegistry;
  csiManager: CsiManager;
  network: NetworkManager;
  claimer: HttpVolumeClaimer;
  hostVolumes: HostVolumeManager | undefined;
  catalog: ServiceCatalog | undefined;
  signIdentities: RunnerParts['signIdentities'];
  chroot: ChrootCache | undefined;
  fingerprinter: NodeFingerprinter;
  meta: NodeMeta;
  checks: ServiceChecks | undefined;
  reporter: StatusReporter | undefined;
  clock: Clock;
  root: Logger;
  log: Logger;
  /** Aborted once the client is stopping. */
  signal: AbortSignal;
  /** Background work stop() waits for. */
  track: (p: Promise<unknown>) => void;
}

/** The allocation runners of one Client and their sync with the server's list. */
export class AllocSync {
  readonly #d: AllocSyncDeps;
  readonly #admission: AdmissionWindow;
  #serverListReceived = false;

  constructor(deps: AllocSyncDeps) {
    this.#d = deps;
    const w = deps.opts.startWindow;
    this.#admission = new AdmissionWindow({ limit: w?.allocations ?? DEFAULT_START_WINDOW, holdMs: w?.holdMs ?? DEFAULT_START_HOLD_MS, clock: deps.clock });
  }

  /** New allocations on their way to their first task: in the admission window or waiting for a slot. */
  get starting(): number {
    return this.#admission.inFlight + this.#admission.waiting;
  }

  /** Whether the server's allocation list has been received since start. */
  get serverListReceived(): boolean {
    return this.#serverListReceived;
  }

  newRunner(alloc: Allocation, job: Job): RunnerEntry {
    const create = this.#d.opts.createAllocRunner ?? ((o: AllocRunnerOptions) => new AllocRunner(o));
    const runner = create(
      allocRunnerOptions(
        this.#d.opts,
        {
          drivers: this.#d.drivers,
          registry: this.#d.registry,
          csiManager: this.#d.csiManager,
          network: this.#d.network,
          claimer: this.#d.claimer,
          onStatus: (u) => this.#onStatus(u),
          dynamicHostVolumes: Object.fromEntries(Object.entries(this.#d.hostVolumes?.volumes() ?? {}).map(([name, v]) => [name, v.path])),
          store: this.#d.store,
          catalog: this.#d.catalog,
          signIdentities: this.#d.signIdentities,
          chroot: this.#d.chroot,
          attributes: this.#d.fingerprinter.last?.attributes ?? this.#d.opts.attributes ?? {},
          meta: this.#d.meta.merged(),
          logger: this.#d.root,
          clock: this.#d.clock,
        },
        alloc,
        job,
      ),
    );
    const entry: RunnerEntry = { alloc, job, runner, started: Promise.resolve(), awaitingServer: false };
    this.#d.runners.set(alloc.id, entry);
    return entry;
  }

  #onStatus(u: AllocStatusUpdate): void {
    const base = { id: u.allocId, clientStatus: u.clientStatus, clientDescription: u.clientDescription, taskStates: u.taskStates };
    const report = this.#d.checks ? this.#d.checks.statusChanged(u) : base;
    // A batch allocation's `running` is likely to be followed at once by its end (a task that ends at once):
    // held a moment, both go in one POST (StatusReporter's hold), as Nomad's 200 ms alloc sync sends them.
    const hold = u.clientStatus === 'running' && this.#d.runners.get(u.allocId)?.job.type === 'batch';
    this.#d.reporter?.report({ ...report, ...(u.network ? { network: u.network } : {}) }, { hold });
    for (const l of this.#d.statusListeners) l();
  }

  /** A change of the server's list: the authority on what runs here. Runs one change at a time (AllocWatcher). */
  async onAllocations(update: AllocUpdate, index: number): Promise<void> {
    if (this.#d.signal.aborted) return;
    const store = this.#d.store;
    const hold = this.#d.opts.holdStarts;
    if (hold && update.changed.some((a) => a.desiredStatus === 'run' && !this.#d.runners.has(a.id) && !this.#d.collected.has(a.id))) {
      await hold(this.#d.signal);
      if (this.#d.signal.aborted) return;
    }
    this.#expectStarts(update);
    applyAllocList(
      {
        runners: this.#d.runners,
        leaving: this.#d.leaving,
        collected: this.#d.collected,
        newRunner: (alloc, job) => this.newRunner(alloc, job),
        reporter: this.#d.reporter,
        registry: this.#d.registry,
        clock: this.#d.clock,
        log: this.#d.log,
        handoverTimeoutMs: this.#d.opts.handoverTimeoutMs ?? 60_000,
        admission: this.#admission,
        signal: this.#d.signal,
        track: (p) => this.#d.track(p),
      },
      update,
    );
    // Collected allocations the server has forgotten too need no tombstone any more.
    for (const allocId of [...this.#d.collected]) {
      if (update.current.has(allocId)) continue;
      this.#d.collected.delete(allocId);
      store.bucket<true>(GC_BUCKET).delete(allocId);
    }
    noteAllocIndex(store, this.#d.node, index);
    if (!this.#serverListReceived) {
      this.#serverListReceived = true;
      this.#d.log.info({ allocations: update.current.size, index }, 'first allocation list from the server');
      this.#d.track(this.#reconcileVolumes());
    }
  }

  /** Tells each driver how many task starts the list's new allocations bring (TaskDriver.expectStarts). */
  #expectStarts(update: AllocUpdate): void {
    const counts = new Map<string, number>();
    for (const a of update.changed) {
      if (a.desiredStatus !== 'run' || this.#d.runners.has(a.id) || this.#d.collected.has(a.id)) continue;
      const group = a.job?.groups.find((g) => g.name === a.taskGroup);
      for (const task of group?.tasks ?? []) counts.set(task.driver, (counts.get(task.driver) ?? 0) + 1);
    }
    for (const [name, count] of counts) this.#d.drivers.get(name)?.expectStarts?.(count);
  }

  /** After the first server list: the CSI volumes reconciled with it (see reconcileVolumes). */
  async #reconcileVolumes(): Promise<void> {
    await reconcileVolumes({
      store: this.#d.store,
      csiManager: this.#d.csiManager,
      runners: this.#d.runners,
      signal: this.#d.signal,
      root: this.#d.root,
      log: this.#d.log,
    });
  }
}
