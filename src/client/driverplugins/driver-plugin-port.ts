// What the client needs of a task-driver plugin: Nomad's DriverPlugin
// interface (plugins/drivers/driver.go) method for method in camelCase, and
// its types. A gRPC client for an external plugin (src/plugins/drivers) and
// the in-process BuiltinDriverPlugin both satisfy it structurally, so the
// driver manager and ExternalTaskDriver take either as they are.

/** hclspec tree as JSON (Nomad's plugins/shared/hclspec Spec, one-of by key). */
export type HclSpec = Record<string, unknown>;

export type PluginHealthState = 'undetected' | 'unhealthy' | 'healthy';
export type NetIsolationMode = 'host' | 'group' | 'task' | 'none';

/** One fingerprint from the driver's stream. */
export interface PluginFingerprint {
  /** Attribute values by name (strings, numbers and bools as sent). */
  attributes: Record<string, string | number | boolean>;
  health: PluginHealthState;
  healthDescription: string;
}

/** Nomad's Capabilities, every field. */
export interface PluginCapabilities {
  sendSignals: boolean;
  exec: boolean;
  fsIsolation: 'none' | 'chroot' | 'image';
  netIsolationModes: NetIsolationMode[];
  mustInitiateNetwork: boolean;
  mountConfigs: 'all' | 'none';
  disableLogCollection: boolean;
  dynamicWorkloadUsers: boolean;
}

export interface PluginMountConfig {
  taskPath: string;
  hostPath: string;
  readonly: boolean;
  /** Nomad's words: 'private' | 'host-to-task' | 'bidirectional'. */
  propagationMode: string;
  selinuxLabel: string;
}

export interface PluginNetworkIsolation {
  mode: NetIsolationMode;
  path: string;
  labels: Record<string, string>;
}

/** What StartTask is told: Nomad's TaskConfig with the driver's config as JSON (the client encodes it against the schema). */
export interface PluginTaskConfig {
  id: string;
  jobName: string;
  jobId: string;
  taskGroupName: string;
  name: string;
  namespace: string;
  nodeName: string;
  nodeId: string;
  env: Record<string, string>;
  resources: {
    cpuShares: number;
    memoryMb: number;
    memoryMaxMb: number;
    /** Linux: CFS quota/period (0 = none) and the limit in bytes. */
    cpuQuota: number;
    cpuPeriod: number;
    memoryLimitBytes: number;
  };
  mounts: PluginMountConfig[];
  user: string;
  allocDir: string;
  /** The job's task `config {}` as decoded JSON. */
  driverConfig: Record<string, unknown>;
  stdoutPath: string;
  stderrPath: string;
  allocId: string;
  networkIsolation?: PluginNetworkIsolation;
}

/** A started task as the driver describes it; persisted by the client and handed back to recoverTask. */
export interface PluginTaskHandle {
  version: number;
  config: PluginTaskConfig;
  state: 'unknown' | 'running' | 'exited';
  /** Opaque driver state (bytes, base64 on the wire's JSON). */
  driverState: Uint8Array;
}

export interface PluginExitResult {
  exitCode: number;
  /** Signal number, 0 for none. */
  signal: number;
  oomKilled: boolean;
  /** Set when the driver could not tell how the task ended. */
  err?: string;
}

export interface PluginTaskStatus {
  id: string;
  name: string;
  state: 'unknown' | 'running' | 'exited';
  startedAt: number;
  completedAt: number;
  exitResult?: PluginExitResult;
  driverAttributes: Record<string, string>;
}

export interface PluginTaskEvent {
  taskId: string;
  taskName: string;
  allocId: string;
  timestamp: number;
  message: string;
  annotations: Record<string, string>;
}

export interface PluginTaskResourceUsage {
  timestamp: number;
  cpu: { userMode: number; systemMode: number; totalTicks: number; percent: number; throttledPeriods: number; throttledTime: number };
  memory: { rss: number; cache: number; usage: number; maxUsage: number };
  pids: number[];
}

export interface PluginExecResult {
  stdout: Uint8Array;
  stderr: Uint8Array;
  exitResult: PluginExitResult;
}

export interface PluginExecStreamOptions {
  command: string[];
  tty: boolean;
  stdin?: AsyncIterable<Uint8Array>;
  stdout: (chunk: Uint8Array) => void;
  stderr: (chunk: Uint8Array) => void;
  resize?: AsyncIterable<{ width: number; height: number }>;
  signal?: AbortSignal;
}

export interface PluginInfo {
  type: string;
  pluginApiVersions: string[];
  pluginVersion: string;
  name: string;
}

/**
 * A task-driver plugin. Every call after the plugin went away rejects with
 * an error whose code is DRIVER_SHUT_DOWN (streams end with it).
 */
export interface DriverPluginPort {
  pluginInfo(): Promise<PluginInfo>;
  configSchema(): Promise<HclSpec | undefined>;
  /** `config` is the plugin's `config {}` as go-cty msgpack. */
  setConfig(config: Uint8Array, agent?: { driver?: { clientMaxPort?: number; clientMinPort?: number } }): Promise<void>;

  taskConfigSchema(): Promise<HclSpec | undefined>;
  capabilities(): Promise<PluginCapabilities>;
  /** Yields fingerprints until `signal` aborts or the plugin goes away. */
  fingerprint(signal: AbortSignal): AsyncIterable<PluginFingerprint>;
  recoverTask(handle: PluginTaskHandle): Promise<void>;
  startTask(cfg: PluginTaskConfig): Promise<{ handle: PluginTaskHandle; network?: unknown }>;
  waitTask(taskId: string, signal?: AbortSignal): Promise<PluginExitResult>;
  stopTask(taskId: string, timeoutMs: number, signal: string): Promise<void>;
  destroyTask(taskId: string, force: boolean): Promise<void>;
  inspectTask(taskId: string): Promise<PluginTaskStatus>;
  taskStats(taskId: string, intervalMs: number, signal: AbortSignal): AsyncIterable<PluginTaskResourceUsage>;
  taskEvents(signal: AbortSignal): AsyncIterable<PluginTaskEvent>;
  signalTask(taskId: string, signal: string): Promise<void>;
  execTask(taskId: string, cmd: string[], timeoutMs: number): Promise<PluginExecResult>;
  execTaskStreaming(taskId: string, opts: PluginExecStreamOptions): Promise<PluginExitResult>;
  createNetwork?(allocId: string, hostname: string): Promise<{ spec: PluginNetworkIsolation; created: boolean }>;
  destroyNetwork?(allocId: string, spec: PluginNetworkIsolation): Promise<void>;
}
