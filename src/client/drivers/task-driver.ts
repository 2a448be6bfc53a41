// The task driver contract: what the task runner asks of a driver (raw_exec,
// exec) to start, watch, stop and reattach to a task's process. Plain data in
// and out; a handle is JSON the task runner persists and hands back to
// recoverTask after an agent restart.

import type { DriverInfo } from '../../structs/index.js';
import type { TaskCgroup } from '../cgroups/index.js';

/** A bind mount of a host path into the task. */
export interface TaskMount {
  source: string;
  destination: string;
  readOnly: boolean;
  /** private; host-to-task = rslave; bidirectional = rshared (refused unless writable). */
  propagation: 'private' | 'host-to-task' | 'bidirectional';
  /** The group volume the mount comes from (Nomad's MountConfig request name), when it comes from one. */
  volume?: string;
}

/** How the task's stdout/stderr are captured (see src/client/logs). */
export interface TaskLogConfig {
  /** When true nothing is captured and reading the logs fails with LOGS_DISABLED. */
  disabled: boolean;
  /** Directory the rotated files go to (the allocation's alloc/logs). */
  dir: string;
  maxFiles: number;
  maxFileSizeMb: number;
  /** The host's FIFOs to write stdout/stderr into instead (a driver served as a plugin: Nomad's StdoutPath/StderrPath); the host rotates. */
  fifos?: { stdout: string; stderr: string };
}

/** What a driver is told to start. */
export interface TaskConfig {
  /** Unique per task run, e.g. `<allocId>/<task>/<attempt>`. */
  id: string;
  allocId: string;
  taskName: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  /** The task's local/ directory (at /local inside exec's chroot); the task runs in its parent, the task directory (`/` under exec), as in Nomad. */
  taskDir: string;
  /** The allocation's directory root (at /alloc inside exec's chroot). */
  allocDir: string;
  /** The task's secrets/ directory (at /secrets inside exec's chroot). */
  secretsDir: string;
  mounts: TaskMount[];
  /** A network namespace to run in (group network mode `none`), e.g. from NetworkManager.create. */
  networkNamespacePath?: string;
  /** The group's network mode ('host', 'none', 'bridge', 'cni/<name>'); absent: host. */
  networkMode?: string;
  /** The allocation's ports (group `network { port "label" {} }`): `value` on the host at hostIp, `to` inside the task (0: same as value). */
  ports?: Array<{ label: string; value: number; to: number; hostIp: string }>;
  logs: TaskLogConfig;
  /** Default grace between the stop signal and SIGKILL. */
  killTimeoutMs: number;
  resources: TaskResources;
  /**
   * Fencing (client `stop_after_server_disconnect`): the task is stopped
   * (SIGTERM, SIGKILL after killTimeoutMs) by its executor, even with no
   * agent running, once renewLeases() was not called for `afterMs`. Its
   * exit then says `fenced`.
   */
  fence?: { afterMs: number };
  /** The user the task runs as (name or uid); absent: the agent's user. */
  user?: string;
  /** The job's task `config {}` as submitted (external driver plugins decode it against their schema). */
  driverConfig?: Record<string, unknown>;
  /** Who the task is: what external driver plugins are told (Nomad's TaskConfig). */
  jobId?: string;
  groupName?: string;
  namespace?: string;
  nodeId?: string;
  /** The job's name (Berth's job ID: a Berth job has no other name) and its parent (periodic/dispatch; none in Berth yet). */
  jobName?: string;
  parentJobId?: string;
  /** Devices reserved for the task and their environment (Nomad's device plugins; Berth reserves none yet). */
  devices?: Array<{ taskPath: string; hostPath: string; permissions: string }>;
  deviceEnv?: Record<string, string>;
}

/** A task's `resources`, enforced through its cgroup where the host has cgroups. */
export interface TaskResources {
  cpuMhz: number;
  memoryMb: number;
  /** Hard memory ceiling (oversubscription); the limit is memoryMb without it. */
  memoryMaxMb?: number;
  /** Hard CPU quota in cores. */
  cores?: number;
  /** Most processes/threads. */
  pidsMax?: number;
}

/**
 * A started task, as JSON. Holds no environment and no secret: the executor's
 * pid and kernel start time (to tell a reused pid apart), its control socket,
 * and what exec needs to enter the task again.
 */
export interface TaskHandle {
  version: 1;
  driver: string;
  taskId: string;
  allocId: string;
  taskName: string;
  executorPid: number;
  /** /proc/<pid>/stat starttime (clock ticks since boot) of the executor. */
  executorStartTicks: number;
  /**
   * Set when the executor is shared with other tasks (tasksPerExecutor > 1):
   * its own socket (where new tasks are started). Such an executor is never
   * killed for one task; the task's executor is gone once its socket is.
   */
  sharedExecutor?: { socketPath: string };
  /** Host pid of the task's main process. */
  taskPid: number;
  taskStartTicks: number;
  stateDir: string;
  socketPath: string;
  taskDir: string;
  networkNamespacePath?: string;
  logs: { disabled: boolean; dir: string };
  /** The task's cgroup, when the host has cgroups. */
  cgroup?: TaskCgroup;
  /** The lease file renewLeases() touches, for a fenced task. */
  leaseFile?: string;
  /** Milliseconds since the epoch. */
  startedAt: number;
}

/** Options of TaskDriver.startTask. */
export interface StartTaskOptions {
  /** Aborting kills the half-started task and rejects with AbortedError. */
  signal?: AbortSignal;
  /**
   * Called synchronously once the task's executor process exists, before it
   * starts the task, with a handle whose taskPid is 0. Persist it: after an
   * agent killed during the start, recoverTask(thatHandle) finds the
   * executor and adopts its task (or kills what it left). Must not throw.
   */
  onSpawned?: (handle: AnyTaskHandle) => void;
  /**
   * Called instead of onSpawned by a driver that can wait before anything of
   * the task runs (a shared executor: the task is not asked for yet), with
   * the same handle; the driver starts the task only once the promise
   * resolves (the handle is durable then: it may land in one commit with the
   * other handles of this turn), and fails the start when it rejects.
   */
  onSpawning?: (handle: AnyTaskHandle) => Promise<void>;
  /**
   * What the driver does meanwhile, in words for the task's events (Nomad's
   * driver events, type 'Driver': an image being pulled and its progress).
   * Must not throw.
   */
  onEvent?: (event: { type: string; message: string; details?: Record<string, string> }) => void;
}

/**
 * A task started by a driver other than the executor-based built-ins (an
 * external driver plugin): JSON the task runner persists as it is.
 */
export interface ForeignTaskHandle {
  version: 2;
  driver: string;
  taskId: string;
  [key: string]: unknown;
}

/** Any driver's task handle. */
export type AnyTaskHandle = TaskHandle | ForeignTaskHandle;

/** How a task ended. */
export interface ExitResult {
  exitCode: number;
  /** Signal name that ended the task (e.g. 'SIGKILL'), or null. */
  signal: string | null;
  oomKilled: boolean;
  /** A human description, e.g. "exited with code 3" or "killed by SIGKILL". */
  message: string;
  /** The executor stopped the task because its lease ran out (TaskConfig.fence). */
  fenced?: boolean;
}

export type TaskState = 'running' | 'exited' | 'unknown';

/** What inspectTask reports. Never blocks. */
export interface TaskStatus {
  id: string;
  taskName: string;
  state: TaskState;
  startedAt: number;
  completedAt?: number;
  exitResult?: ExitResult;
  pid: number;
}

/**
 * Resource usage of the task's whole process tree: from its cgroup (source
 * 'cgroup'), else summed over its process tree in /proc (source 'proc',
 * where the cgroup-only figures are 0).
 */
export interface TaskResourceUsage {
  /** Milliseconds since the epoch when sampled. */
  timestamp: number;
  source: 'cgroup' | 'proc';
  cpu: {
    userMs: number;
    systemMs: number;
    totalMs: number;
    /** Percent of one core since the previous taskStats call for this task (0 on the first). */
    percent: number;
    /** CFS periods in which the task hit its `cores` quota. */
    throttledPeriods: number;
    throttledMs: number;
  };
  memory: { rssBytes: number; cacheBytes: number; usageBytes: number; maxUsageBytes: number };
  /** Host pids of the process tree. */
  pids: number[];
}

export interface TerminalSize {
  cols: number;
  rows: number;
}

/** A command run inside a running task (`alloc exec`). */
export interface ExecOptions {
  command: string[];
  /** With a tty the command runs on a pseudo-terminal (node-pty); stderr is merged into stdout. */
  tty?: boolean;
  /** Bytes for the command's stdin; its end closes stdin (pipes mode). */
  stdin?: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>;
  stdout: NodeJS.WritableStream;
  /** Ignored with a tty. */
  stderr?: NodeJS.WritableStream;
  /** Initial terminal size (tty only), default 80x24. */
  size?: TerminalSize;
  /** Terminal resizes (tty only). */
  resize?: AsyncIterable<TerminalSize> | Iterable<TerminalSize>;
  /** Aborting kills the command and rejects with AbortedError. */
  signal?: AbortSignal;
}

/** The modes of a group network namespace (Nomad's `group` isolation): a driver that can join one can run in all of them. */
export const GROUP_NETWORK_MODES: readonly string[] = ['none', 'bridge', 'cni/*'];

export interface DriverCapabilities {
  sendSignals: boolean;
  exec: boolean;
  /** Nomad's FSIsolation: `chroot` drivers get the chroot built in the task directory, `image` and `none` do not. */
  fsIsolation: 'none' | 'chroot' | 'image';
  /** Group network modes its tasks can run in: 'host', 'none', 'bridge', 'cni/*' (every CNI network). */
  networkModes: ReadonlyArray<string>;
  /** True when the driver makes the network namespace itself (never for Berth's drivers). */
  mustInitiateNetwork: boolean;
  /** 'none': a task with mounts fails to start with DRIVER_MOUNTS_UNSUPPORTED. */
  mountConfigs: 'none' | 'any';
}

/**
 * A task driver. Every call on an unknown task id throws DriverError
 * DRIVER_TASK_NOT_FOUND (except destroyTask, which is safe to repeat); after
 * shutdown() every call throws DriverError DRIVER_SHUT_DOWN.
 */
export interface TaskDriver {
  readonly name: string;
  readonly capabilities: DriverCapabilities;
  /** True for a driver that reads the task's `config {}` itself (TaskConfig.driverConfig): `command` is then not required. */
  readonly takesDriverConfig?: boolean;
  /** The cgroup hierarchy tasks are put in: 'v1', 'v2', or 'none' (limits are not enforced). */
  readonly cgroups: 'v1' | 'v2' | 'none';
  /** Whether the driver can run here. Never throws. */
  fingerprint(): Promise<DriverInfo>;
  /**
   * Starts the task under a detached executor process (it outlives the agent)
   * and resolves once the task's process exists. Throws DriverError
   * (DRIVER_TASK_EXISTS, DRIVER_MOUNTS_UNSUPPORTED, DRIVER_INVALID_MOUNT, DRIVER_START_FAILED) or AbortedError.
   */
  startTask(cfg: TaskConfig, opts?: StartTaskOptions): Promise<AnyTaskHandle>;
  /**
   * Reattaches to a task started by an earlier agent, without restarting it.
   * A task that ended meanwhile is recovered as exited (waitTask gives its
   * result). A handle given to onSpawned (no task pid yet) is completed from
   * what the executor recorded, waiting while it is still starting the task.
   * Resolves with the completed handle (persist it). Throws DriverError
   * DRIVER_TASK_NOT_RECOVERABLE when neither the executor nor a recorded
   * exit is found (what the task left in its cgroup is killed). Safe to repeat.
   */
  recoverTask(handle: AnyTaskHandle): Promise<AnyTaskHandle | void>;
  /**
   * Resolves when the task has exited (at once if it already has). Safe to
   * call many times. When the task's executor is lost (killed) while the task
   * runs, the task is killed too (its process group and cgroup) and the exit
   * says so: nothing would capture its output or record its end otherwise.
   */
  waitTask(taskId: string, opts?: { signal?: AbortSignal }): Promise<ExitResult>;
  /**
   * Sends `signal` (default SIGTERM) to the task's process group, SIGKILL after
   * timeoutMs; resolves once the task exited. Safe on an exited task.
   */
  stopTask(taskId: string, opts: { timeoutMs: number; signal?: string }): Promise<void>;
  /** Forgets the task and removes its executor state. Throws DRIVER_TASK_RUNNING on a running task unless force (which kills it). */
  destroyTask(taskId: string, opts?: { force?: boolean }): Promise<void>;
  inspectTask(taskId: string): TaskStatus;
  /** Sends a signal (e.g. 'SIGUSR1') to the task. Throws DRIVER_INVALID_SIGNAL, or DRIVER_TASK_NOT_RUNNING if it exited. */
  signalTask(taskId: string, signal: string): Promise<void>;
  taskStats(taskId: string): Promise<TaskResourceUsage>;
  /**
   * Applies new resources to a running task's cgroup without restarting it.
   * Resolves false where that is not possible (no cgroups; the kernel refused,
   * e.g. a memory limit below current use on v1). Never throws but TASK_NOT_FOUND.
   */
  updateTaskResources(taskId: string, resources: TaskResources): Promise<boolean>;
  /**
   * Kills and removes the cgroups of tasks not in `keep` (`<allocId>.<task>`
   * names): what is left of tasks this agent no longer runs. Call once after
   * recovery. Resolves with the names removed. Never throws.
   */
  reapOrphans(keep: ReadonlySet<string>): Promise<string[]>;
  /**
   * Renews the lease of every running task started with `fence` (the agent
   * reached a server just now). Synchronous, never throws. Optional: a
   * driver without fencing has none.
   */
  renewLeases?(): void;
  /**
   * A hint that `count` more task starts are coming (the new allocations
   * of an allocation list): the driver may get ready for them now (the
   * executor drivers start the shared executors they will need), so that
   * this overlaps the allocations' set-up. Each call adds to the last
   * (call it once per start). Synchronous, never throws; a hint whose starts
   * never come costs what it started (idle executors exit).
   */
  expectStarts?(count: number): void;
  /** Runs a command inside the task (its namespaces and chroot for exec); resolves with its exit code. */
  execTaskStreaming(taskId: string, opts: ExecOptions): Promise<{ exitCode: number }>;
  /**
   * Only drivers whose capabilities say mustInitiateNetwork (Nomad's
   * CreateNetwork): makes the allocation's network namespace and resolves
   * with its path, which the agent's network manager then attaches. Safe to
   * repeat (an agent restart): the namespace made before is returned.
   */
  createNetwork?(allocId: string, hostname: string): Promise<{ path: string }>;
  /** Removes what createNetwork made. Safe to repeat. */
  destroyNetwork?(allocId: string, path: string): Promise<void>;
  /** Stops watching tasks (they keep running). Safe twice. */
  shutdown(): Promise<void>;
}
