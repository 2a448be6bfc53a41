import { type BasePlugin, type CallOptions } from '../base/index.js';
import { type Spec } from '../hclspec/index.js';

/**
 * The task driver plugin interface, mirroring Nomad's plugins/drivers/driver.go
 * `DriverPlugin` method for method (camelCase) plus its optional parts
 * (ExecTaskStreaming, CreateNetwork/DestroyNetwork). Implemented by
 * `DriverPluginClient` (a plugin process over gRPC) and by anything served with
 * `serveDriverPlugin` (Berth's own drivers as plugins). Protobuf types never
 * appear here.
 *
 * Durations are milliseconds; times are Dates; byte strings are Uint8Arrays.
 */

/** A driver's health as fingerprinted. */
export type HealthState = 'undetected' | 'unhealthy' | 'healthy';

/** A node attribute value a fingerprint reports (structs Attribute): exactly one of the values is set. */
export interface Attribute {
  readonly string?: string;
  readonly int?: number;
  readonly float?: number;
  readonly bool?: boolean;
  readonly unit?: string;
}

/** One fingerprint: the driver's health and attributes (`driver.<name>...`). */
export interface Fingerprint {
  readonly attributes: Readonly<Record<string, Attribute>>;
  readonly health: HealthState;
  readonly healthDescription: string;
  /** Set when the plugin reported an error while fingerprinting. */
  readonly err?: string;
}

/** Filesystem isolation a driver offers (DriverCapabilities.FSIsolation). */
export type FsIsolation = 'none' | 'chroot' | 'image' | 'unveil';
/** Network isolation modes (NetworkIsolationSpec.NetworkIsolationMode). */
export type NetIsolationMode = 'host' | 'group' | 'task' | 'none';
/** Which `volume_mount`/`mount` configs the driver supports. */
export type MountConfigSupport = 'all' | 'none';

/** What a driver can do (driver.go Capabilities). */
export interface Capabilities {
  readonly sendSignals: boolean;
  readonly exec: boolean;
  readonly fsIsolation: FsIsolation;
  readonly netIsolationModes: readonly NetIsolationMode[];
  /** The driver must create the group network namespace (CreateNetwork/DestroyNetwork). */
  readonly mustInitiateNetwork: boolean;
  readonly mountConfigs: MountConfigSupport;
  readonly disableLogCollection: boolean;
  readonly dynamicWorkloadUsers: boolean;
}

export interface HostsConfig {
  readonly hostname: string;
  readonly address: string;
}

/** A network namespace tasks join (driver.go NetworkIsolationSpec). */
export interface NetworkIsolationSpec {
  readonly mode: NetIsolationMode;
  /** The namespace's path (`/var/run/netns/<id>`). */
  readonly path: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly hostsConfig?: HostsConfig;
}

export interface NetworkCreateRequest {
  readonly hostname: string;
}

export interface CreateNetworkResult {
  readonly spec: NetworkIsolationSpec;
  /** False when the namespace already existed (e.g. after a restart). */
  readonly created: boolean;
}

export interface DnsConfig {
  readonly servers: readonly string[];
  readonly searches: readonly string[];
  readonly options: readonly string[];
}

/** A port the task was given (structs.AllocatedPortMapping). */
export interface PortMapping {
  readonly label: string;
  readonly value: number;
  readonly to: number;
  readonly hostIp: string;
}

export interface NetworkPort {
  readonly label: string;
  readonly value: number;
}

export interface NetworkResource {
  readonly device: string;
  readonly cidr: string;
  readonly ip: string;
  readonly mbits: number;
  readonly reservedPorts: readonly NetworkPort[];
  readonly dynamicPorts: readonly NetworkPort[];
}

/** The task's allocated resources, in the scheduler's terms. */
export interface AllocatedTaskResources {
  readonly cpuShares: number;
  readonly memoryMb: number;
  readonly memoryMaxMb: number;
  readonly networks: readonly NetworkResource[];
}

/** The task's resources as Linux applies them. */
export interface LinuxResources {
  readonly cpuPeriod: number;
  readonly cpuQuota: number;
  readonly cpuShares: number;
  readonly memoryLimitBytes: number;
  readonly oomScoreAdj: number;
  readonly cpusetCpus: string;
  /** The task's cgroup (cpuset_cgroup on the wire). */
  readonly cpusetCgroupPath: string;
  readonly percentTicks: number;
}

export interface Resources {
  readonly allocated?: AllocatedTaskResources;
  readonly linux?: LinuxResources;
  readonly ports: readonly PortMapping[];
}

/** A host path the driver makes visible in the task (volume mounts, CSI volumes included). */
export interface MountConfig {
  readonly taskPath: string;
  readonly hostPath: string;
  readonly readonly: boolean;
  /** `private`, `host-to-task` or `bidirectional`. */
  readonly propagationMode: string;
  readonly selinuxLabel: string;
  /** The volume request the mount comes from, when it comes from one. */
  readonly requestName: string;
}

export interface DeviceConfig {
  readonly taskPath: string;
  readonly hostPath: string;
  readonly permissions: string;
}

/** Everything a driver needs to start one task (driver.go TaskConfig). */
export interface TaskConfig {
  /** The task's ID: `<allocID>/<task>/<random>` in Nomad; unique per start. */
  readonly id: string;
  readonly jobName: string;
  readonly jobId: string;
  readonly taskGroupName: string;
  readonly parentJobId: string;
  readonly name: string;
  readonly namespace: string;
  readonly nodeName: string;
  readonly nodeId: string;
  readonly env: Readonly<Record<string, string>>;
  readonly deviceEnv: Readonly<Record<string, string>>;
  readonly resources?: Resources;
  readonly devices: readonly DeviceConfig[];
  readonly mounts: readonly MountConfig[];
  readonly user: string;
  /** The allocation directory; the task directory is `<allocDir>/<name>`. */
  readonly allocDir: string;
  /** The task's `config {}` as go-cty msgpack (see hclspec encodeMsgpack). */
  readonly msgpackDriverConfig: Uint8Array;
  /** Log files (created by the host before StartTask). */
  readonly stdoutPath: string;
  readonly stderrPath: string;
  readonly allocId: string;
  readonly networkIsolation?: NetworkIsolationSpec;
  readonly dns?: DnsConfig;
}

export type TaskState = 'unknown' | 'running' | 'exited';

/** The driver's handle to a running task: what the client persists to recover it. */
export interface TaskHandle {
  /** The driver's handle format version. */
  readonly version: number;
  readonly config: TaskConfig;
  readonly state: TaskState;
  /** Opaque driver state (the driver's own encoding). */
  readonly driverState: Uint8Array;
}

/** The network a driver created for a task (driver.go DriverNetwork). */
export interface DriverNetwork {
  readonly portMap: Readonly<Record<string, number>>;
  readonly ip: string;
  readonly autoAdvertise: boolean;
}

export interface StartTaskResult {
  readonly handle: TaskHandle;
  readonly network?: DriverNetwork;
}

/** How a task ended. */
export interface ExitResult {
  readonly exitCode: number;
  readonly signal: number;
  readonly oomKilled: boolean;
  /** Set when waiting failed (WaitTaskResponse.err). */
  readonly err?: string;
}

export interface TaskStatus {
  readonly id: string;
  readonly name: string;
  readonly state: TaskState;
  readonly startedAt?: Date;
  readonly completedAt?: Date;
  readonly exitResult?: ExitResult;
  readonly driverAttributes: Readonly<Record<string, string>>;
  readonly networkOverride?: DriverNetwork;
}

export type CpuField = 'system_mode' | 'user_mode' | 'total_ticks' | 'throttled_periods' | 'throttled_time' | 'percent';
export type MemoryField = 'rss' | 'cache' | 'max_usage' | 'kernel_usage' | 'kernel_max_usage' | 'usage' | 'swap';

export interface CpuUsage {
  readonly systemMode: number;
  readonly userMode: number;
  readonly totalTicks: number;
  readonly throttledPeriods: number;
  readonly throttledTime: number;
  readonly percent: number;
  readonly measured: readonly CpuField[];
}

export interface MemoryUsage {
  readonly rss: number;
  readonly cache: number;
  readonly swap: number;
  readonly usage: number;
  readonly maxUsage: number;
  readonly kernelUsage: number;
  readonly kernelMaxUsage: number;
  readonly measured: readonly MemoryField[];
}

export interface ResourceUsage {
  readonly cpu?: CpuUsage;
  readonly memory?: MemoryUsage;
}

/** One TaskStats sample (cstructs.TaskResourceUsage). */
export interface TaskResourceUsage {
  readonly taskId: string;
  readonly timestamp: Date;
  readonly resourceUsage: ResourceUsage;
  /** Per process, keyed by pid. */
  readonly pids: Readonly<Record<string, ResourceUsage>>;
}

/** An event the driver reports about a task (shown among the task's events). */
export interface TaskEvent {
  readonly taskId: string;
  readonly taskName: string;
  readonly allocId: string;
  readonly timestamp: Date;
  readonly message: string;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface ExecTaskResult {
  readonly stdout: Uint8Array;
  readonly stderr: Uint8Array;
  readonly exitResult: ExitResult;
}

export interface TerminalSize {
  readonly height: number;
  readonly width: number;
}

/**
 * One interactive exec (driver.go ExecOptions). The caller feeds `stdin` and
 * `resize` (both end when the caller is done) and receives output through
 * `stdout`/`stderr`; the call resolves with the command's exit.
 */
export interface ExecOptions {
  readonly command: readonly string[];
  readonly tty: boolean;
  readonly stdin?: AsyncIterable<Uint8Array>;
  readonly resize?: AsyncIterable<TerminalSize>;
  stdout(data: Uint8Array): void;
  stderr(data: Uint8Array): void;
}

/** Options of the streaming calls: the signal ends the stream (the iterator then returns). */
export interface StreamOptions {
  readonly signal?: AbortSignal;
}

/**
 * A task driver (driver.go DriverPlugin + ExecTaskStreamingDriver +
 * DriverNetworkManager). Every call may reject with a DriverPluginError; on a
 * plugin that has exited, with `DRIVER_PLUGIN_SHUTDOWN` at once.
 */
export interface DriverPlugin extends BasePlugin {
  /** The schema of a task's `config {}` block. */
  taskConfigSchema(opts?: CallOptions): Promise<Spec | undefined>;
  capabilities(opts?: CallOptions): Promise<Capabilities>;
  /** A stream of fingerprints: the first at once, then on every change, until the signal fires. */
  fingerprint(opts?: StreamOptions): AsyncIterable<Fingerprint>;

  /** Re-attaches to a task from its persisted handle (after an agent or plugin restart). */
  recoverTask(handle: TaskHandle, opts?: CallOptions): Promise<void>;
  /** Starts a task. Errors carry `recoverable` (DriverPluginError) deciding whether the restart policy retries. */
  startTask(config: TaskConfig, opts?: CallOptions): Promise<StartTaskResult>;
  /** Resolves when the task exits; blocks until then (or the signal fires). */
  waitTask(taskId: string, opts?: CallOptions): Promise<ExitResult>;
  /** Sends `signal` (empty = the driver's default), then kills after `timeoutMs`. */
  stopTask(taskId: string, timeoutMs: number, signal: string, opts?: CallOptions): Promise<void>;
  /** Forgets the task; `force` kills it first if it still runs. */
  destroyTask(taskId: string, force: boolean, opts?: CallOptions): Promise<void>;
  inspectTask(taskId: string, opts?: CallOptions): Promise<TaskStatus>;
  /** Resource usage every `intervalMs` until the signal fires or the task ends. */
  taskStats(taskId: string, intervalMs: number, opts?: StreamOptions): AsyncIterable<TaskResourceUsage>;
  /** Events about the driver's tasks until the signal fires. */
  taskEvents(opts?: StreamOptions): AsyncIterable<TaskEvent>;

  signalTask(taskId: string, signal: string, opts?: CallOptions): Promise<void>;
  /** Runs `command` in the task's context and returns its output once it ends (or `timeoutMs` passes). */
  execTask(taskId: string, command: readonly string[], timeoutMs: number, opts?: CallOptions): Promise<ExecTaskResult>;
  /** An interactive exec over a bidirectional stream (`berth alloc exec -t`). */
  execTaskStreaming(taskId: string, exec: ExecOptions, opts?: CallOptions): Promise<ExitResult>;

  /** Creates the group network namespace (only drivers with `mustInitiateNetwork`). */
  createNetwork(allocId: string, request: NetworkCreateRequest, opts?: CallOptions): Promise<CreateNetworkResult>;
  destroyNetwork(allocId: string, spec: NetworkIsolationSpec | undefined, opts?: CallOptions): Promise<void>;
}
