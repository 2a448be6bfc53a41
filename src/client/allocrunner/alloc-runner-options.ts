// The allocation runner's dependencies, passed in by the node agent (R3's Client).

import type { Clock, Logger } from '../../lib/index.js';
import type { AllocClientStatus, Allocation, AllocNetworkStatus, IdentityRequest, IdentitySignAnswer, Job, TaskState } from '../../structs/index.js';
import type { ArtifactLimits } from '../artifact/index.js';
import type { ChrootCache } from '../allocdir/index.js';
import type { CsiManager } from '../csimanager/index.js';
import type { PluginRegistry } from '../dynamicplugins/index.js';
import type { ClientStateStore } from '../state/index.js';
import type { ServiceCatalog } from '../template/index.js';
import type { TaskEnvNode } from '../taskenv/index.js';
import type { RunnerDriver, RunnerNetwork } from '../taskrunner/index.js';
import type { AllocStatusSink, VolumeClaimer } from './volume-claimer.js';

export interface AllocRunnerOptions {
  alloc: Allocation;
  /** The allocation's job as the server sent it (with mount flags; they are never written down). */
  job: Job;
  /** Task drivers by name ('raw_exec', 'exec'). */
  drivers: ReadonlyMap<string, RunnerDriver>;
  registry: PluginRegistry;
  csiManager: CsiManager;
  network: RunnerNetwork;
  claimer: VolumeClaimer;
  onStatus: AllocStatusSink;
  store: ClientStateStore;
  /** Allocation directories go under `<allocDirRoot>/<allocId>`. */
  allocDirRoot: string;
  /**
   * Plugin sockets and mount roots: `<pluginDirRoot>/<plugin>/<alloc8>/csi.sock`
   * and `<pluginDirRoot>/<plugin>/mounts` (a shared mount). Keep it short: a
   * unix socket path has at most 107 bytes.
   */
  pluginDirRoot: string;
  /** The node's chroot cache (client chroot_env), for tasks of chroot drivers. */
  chroot?: ChrootCache;
  /** The node, for the tasks' environment (`${node.unique.name}`, `${attr.<name>}`, NOMAD_DC...); default: only its ID. */
  node?: TaskEnvNode;
  /** Host volumes by name -> host path, for group volumes of `type: host`. */
  hostVolumes?: Readonly<Record<string, string>>;
  /**
   * Host directories that artifact and template `source`s may read besides
   * the allocation's own directory (the agent's client.file_roots); default any.
   */
  fileRoots?: readonly string[];
  /**
   * Asks the server to sign workload identities of this allocation's tasks
   * (their `identity` blocks). Absent: a task with identities fails to start.
   */
  signIdentities?: (requests: IdentityRequest[], signal: AbortSignal) => Promise<IdentitySignAnswer>;
  /** The client's `artifact` block (default Nomad's limits). */
  artifactLimits?: ArtifactLimits;
  /** The node's service catalog, for templates' nomadService. */
  serviceCatalog?: ServiceCatalog;
  logger?: Logger;
  clock?: Clock;
  /** Backoff of claim retries and waits for a plugin to be healthy; default 500 ms doubling to 15 s, unlimited. */
  retry?: { initialDelayMs?: number; maxDelayMs?: number };
  /** Signal-to-SIGKILL grace when stopping a task; default 5 s. */
  killTimeoutMs?: number;
  /**
   * Fencing (client stop_after_server_disconnect): tasks of a group with a
   * single-writer CSI volume are stopped on the node, and not restarted,
   * once no server was reached for this long. Default none (never).
   */
  stopAfterServerDisconnectMs?: number;
}

/** The allocation's status as the runner reports it. */
export interface AllocRunnerStatus {
  clientStatus: AllocClientStatus;
  clientDescription: string;
  taskStates: Record<string, TaskState>;
  /** The group's own network once made (modes none, bridge, cni): its mode and, for bridge/cni, the allocation's address. */
  network?: AllocNetworkStatus;
}

/** One CSI mount an allocation needs, for VolumeManager.reconcile. */
export interface WantedMount {
  pluginId: string;
  volumeId: string;
  allocId: string;
}
