// The Client's contract types: its options, its error, and the handle it
// drives on each allocation runner. Private to src/client: others take them
// from client.ts (and the folder door), which re-exports them.

import type { CsiCallObserver } from '../csi/index.js';
import { BerthError, type Clock, type LifecycleState, type Logger } from '../lib/index.js';
import type { Allocation, AllocClientStatus, CsiPluginType, Job, NodeEvent, TaskState } from '../structs/index.js';
import type { ClientNetworkOptions } from './_network-fingerprint.js';
import type { AllocRunnerOptions } from './allocrunner/index.js';
import type { ArtifactLimits } from './artifact/index.js';
import type { TaskDriver } from './drivers/index.js';
import type { RegisteredPlugin } from './dynamicplugins/index.js';
import type { GcLimits } from './gc/index.js';

/** What the Client drives on each allocation runner (R2's AllocRunner has it all). */
export interface AllocRunnerHandle {
  /** Starts prerun hooks then tasks; resolves once started. */
  run(): Promise<void>;
  /**
   * Resolves once the first of its tasks was handed to its driver (its
   * handle recorded), or run() ended without one (set-up failed, stopped):
   * where the client's admission window frees the allocation's slot.
   * Optional for fakes (then run() resolving frees it). Never rejects.
   */
  launched?(): Promise<void>;
  /** After an agent restart: reattaches tasks from saved handles, runs nothing anew. */
  restore(): Promise<void>;
  /**
   * A new version of the allocation from the server (desiredStatus stop/evict
   * stops it), with the job it belongs to; a running allocation moved to a
   * newer job version takes that version's task resources in place.
   */
  update(alloc: Allocation, job?: Job): void;
  /** Stops everything and removes the allocation directory. */
  destroy(): Promise<void>;
  /** The agent stops: tasks keep running. */
  shutdown(): Promise<void>;
  status(): { clientStatus: AllocClientStatus; clientDescription: string; taskStates: Record<string, TaskState> };
  /** The CSI mounts this allocation needs now. */
  wanted(): Array<{ pluginId: string; volumeId: string; allocId: string }>;
  /** Its CSI volumes whose unmount still needs their node plugin (claimed or mounted). Optional for fakes. */
  volumesToUnmount?(): Array<{ pluginId: string; volumeId: string; allocId: string }>;
  /**
   * Whether garbage collection may destroy it now: every task dead, cleanup
   * (postrun) done, nothing mounted for it. Without this method the client
   * asks status() and wanted().
   */
  collectable?(): boolean;
  /**
   * Resolves once its tasks exited and its volumes were unpublished and
   * released (or it was destroyed). Without this method, a replacement on
   * the same single-writer volume does not wait for it.
   */
  cleanedUp?(): Promise<void>;
  /** Restarts one running task (check_restart); a task that does not run is left alone. */
  restartTask?(task: string, reason: string): Promise<void>;
  /** Told when a plugin this allocation runs stayed unhealthy past its health timeout. */
  pluginHealthTimeout(plugin: RegisteredPlugin, type: CsiPluginType, reason: string): unknown;
  /** Told of every CSI node event (the runner keeps those of its own plugins). */
  pluginEvent(event: NodeEvent): void;
  /** After the volume managers reconciled: mount the recorded volumes again (intact steps send nothing). */
  remountVolumes(opts?: { signal?: AbortSignal }): Promise<void>;
  /** A volume this allocation uses changed condition (NodeGetVolumeStats): a task event on each task. Optional for fakes. */
  volumeEvent?(type: string, message: string, details: Record<string, string>): void;
  /** An event an external driver reported about one of its tasks. Optional for fakes. */
  driverEvent?(taskName: string, message: string, details?: Record<string, string>): void;
}

/** What the client needs of the driver plugin manager. */
export interface ExternalDrivers {
  /** Launches the plugins; resolves once each runs or failed (never rejects). */
  start(): Promise<unknown>;
  drivers(): ReadonlyMap<string, TaskDriver & { onTaskEvent?(l: (ev: { allocId: string; taskName: string; message: string; annotations: Readonly<Record<string, string>> }) => void): () => void }>;
  /** Stops the plugins (their tasks keep running). Safe twice. */
  stop(): Promise<void>;
}

export interface ClientOptions {
  /** The agent's own directory: client state, allocation dirs, plugin sockets. Created when missing. */
  dataDir: string;
  /** The server's HTTP address, e.g. `http://127.0.0.1:4646`, or the addresses of a cluster's servers (failover in order). */
  servers: string | readonly string[];
  /** Bearer token with the `node` role. Never logged. */
  token: string;
  nodeName: string;
  /** Default 'dc1'. */
  datacenter?: string;
  /** The region tasks see (NOMAD_REGION, `${node.region}`); default 'global'. */
  region?: string;
  /** Nomad's node_class, for `${node.class}`; default ''. */
  nodeClass?: string;
  /** The node's meta, for `${meta.<key>}`. */
  meta?: Record<string, string>;
  /** Which drivers run; `raw_exec` has no isolation and is opt-in. Default { exec: true, raw_exec: false }. */
  drivers?: { raw_exec?: boolean; exec?: boolean; docker?: boolean };
  /** Builds the task drivers by name (only the enabled ones are used). Default: the raw_exec and exec drivers, state under `<dataDir>/d`. */
  createDrivers?: (ctx: { logger: Logger; clock: Clock; dataDir: string }) => Map<string, TaskDriver>;
  /**
   * External task drivers (driver plugins, src/client/driverplugins): started
   * after the built-ins and before runners are restored, so their tasks are
   * recovered; a plugin driver with a built-in's name replaces it.
   */
  externalDrivers?: ExternalDrivers;
  /** Builds an allocation runner. Default: `new AllocRunner(opts)`. */
  createAllocRunner?: (opts: AllocRunnerOptions) => AllocRunnerHandle;
  /** Host volumes by name -> host path. */
  /** client chroot_env: host path -> path in the task directory (Nomad's default map when absent). */
  chrootEnv?: Record<string, string>;
  /** Fault injection for the test suites (never set in production): called when a task's chroot is half mounted. */
  chrootHalfBuilt?: (taskDir: string) => void;
  hostVolumes?: Record<string, string>;
  /** Where host volume plugins put dynamic host volumes (client `host_volumes_dir`); default <dataDir>/host_volumes. */
  hostVolumesDir?: string;
  /** Where external host volume plugins live (client `host_volume_plugin_dir`); default <dataDir>/host_volume_plugins. */
  hostVolumePluginDir?: string;
  /** Host directories artifact and template sources may read; default any. */
  fileRoots?: readonly string[];
  /** The client's `artifact` block: timeouts and limits of artifact fetches (default Nomad's). */
  artifactLimits?: ArtifactLimits;
  attributes?: Record<string, string>;
  /** The address services on numeric host ports are registered with; default the node's `unique.network.ip-address`, else 127.0.0.1. */
  serviceAddress?: string;
  clock?: Clock;
  logger?: Logger;
  /** Between heartbeats (capped at a third of the server's TTL). Default 10 s. */
  heartbeatIntervalMs?: number;
  /** Longest blocking read of the allocation list. Default 5 min. */
  allocWaitMs?: number;
  /** Plugin sockets and mount roots; keep the path short (unix sockets take 107 bytes). Default `<dataDir>/p`. */
  pluginDirRoot?: string;
  /** Allocation directories. Default `<dataDir>/alloc`. */
  allocDirRoot?: string;
  /** CSI manager tuning. */
  csi?: { probeIntervalMs?: number; healthTimeoutMs?: number; resyncIntervalMs?: number };
  /**
   * NodeGetVolumeStats of every published volume (src/client/volumestats):
   * `intervalMs` between two calls per volume (default 60 s, jittered by
   * 10 %), `callTimeoutMs` each call's deadline (default 10 s), `enabled`
   * false turns it off.
   */
  volumeStats?: { enabled?: boolean; intervalMs?: number; callTimeoutMs?: number; scanIntervalMs?: number };
  /** Told of every CSI call the agent's plugin clients send (metrics, benchmarks); a function gets one observer per plugin. */
  csiObserver?: CsiCallObserver | ((pluginName: string) => CsiCallObserver);
  /** The agent's own HTTP address (logs, exec), reported as the node's httpAddr. Default none. */
  httpAddr?: string;
  /** Prefix of network namespace names (tests keep theirs apart). */
  netnsPrefix?: string;
  /** Group networks: the bridge's name and subnet, CNI plugin directories, the user's CNI networks (client bridge_network_name etc.). */
  groupNetworks?: { bridge?: { name?: string; subnet?: string }; cniPath?: string[]; cniConfigDir?: string };
  /** Passed to each allocation runner. */
  killTimeoutMs?: number;
  /** How long a replaced plugin allocation keeps running while its successor comes up. Default 60 s. */
  handoverTimeoutMs?: number;
  retry?: { initialDelayMs?: number; maxDelayMs?: number };
  /**
   * Fencing (client { stop_after_server_disconnect }): once no server was
   * reached for this long, tasks of groups with a single-writer CSI volume
   * are stopped on the node (by their executors, so even with the agent
   * dead or frozen) and not restarted; their volumes are unmounted and the
   * claims released once a server answers. Reported to the server as the
   * node's stopAfterDisconnectMs. Heartbeats (which renew the leases) go at
   * least every third of it. Default none (never): `berth agent --client`
   * sets 30 s, a dev agent none.
   */
  stopAfterServerDisconnectMs?: number;
  /**
   * The node's ports (client { network_interface, min_dynamic_port,
   * max_dynamic_port, reserved { reserved_ports }, host_network }): what
   * the fingerprint tells the scheduler. Default: the default route's
   * address, ports 20000-32000, nothing reserved.
   */
  network?: ClientNetworkOptions;
  /** Garbage collection of finished allocations (client { gc_* }). Default DEFAULT_GC_LIMITS. */
  gc?: Partial<GcLimits>;
  /**
   * Asked before the runners of new allocations are made and started; the
   * promise holds them until it settles (stops and updates of known ones are
   * not held). A dev agent passes the wait for its API to be quiet (bounded):
   * its client shares the event loop with the API, and 200 task starts (8-11
   * ms of the loop each) begun while a burst of submissions was still being
   * answered held the rest of the burst for seconds. Must settle, and soon
   * once `signal` (the client stopping) aborts. Default: nothing held.
   */
  holdStarts?: (signal: AbortSignal) => Promise<void>;
  /**
   * The admission window of new allocations (see _admission.ts):
   * `allocations` admitted at once between their runner running and their
   * first task handed to its driver (default DEFAULT_START_WINDOW), each
   * holding its slot at most `holdMs` (default DEFAULT_START_HOLD_MS).
   */
  startWindow?: { allocations?: number; holdMs?: number };
}

export type ClientState = LifecycleState;

/**
 * CLIENT_START: the client failed to start; CLIENT_STATE: it was used in the
 * wrong state; CLIENT_INVALID: its options are wrong.
 */
export type ClientErrorCode = 'CLIENT_START' | 'CLIENT_STATE' | 'CLIENT_INVALID';

export class ClientError extends BerthError<ClientErrorCode> {}

/** The Client's record of one allocation runner. */
export interface RunnerEntry {
  alloc: Allocation;
  job: Job;
  runner: AllocRunnerHandle;
  /** run() or restore() in progress or done. */
  started: Promise<void>;
  /** Restored after a restart and not yet given the server's view (it acts on nothing until then). */
  awaitingServer: boolean;
  /** While a new allocation waits for a slot in the admission window: aborting it takes it out of the queue (it never runs). */
  admission?: AbortController;
  /** When the client first saw it collectable (for allocations whose tasks never ran). */
  finishedAt?: number;
  /** Its destroy in progress, once the server no longer lists it (the Client's `leaving` has it until then). Never rejects. */
  destroying?: Promise<void>;
}
