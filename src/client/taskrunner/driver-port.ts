// What the task runner needs of a task driver and of the network manager: the
// subset of R1's TaskDriver / NetworkManager contracts it calls. R1's classes
// satisfy these structurally, so runners take them as they are.

/** A bind mount of a host path into the task. */
export interface TaskMount {
  source: string;
  destination: string;
  readOnly: boolean;
  propagation: 'private' | 'host-to-task' | 'bidirectional';
  /** The group volume the mount comes from, when it comes from one. */
  volume?: string;
}

/** What a driver is told to start. */
export interface RunnerTaskConfig {
  /** Unique per task run: `<allocId>/<task>/<attempt>`. */
  id: string;
  allocId: string;
  taskName: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  /** The task's local/ directory. */
  taskDir: string;
  /** The allocation's directory root. */
  allocDir: string;
  secretsDir: string;
  mounts: TaskMount[];
  networkNamespacePath?: string;
  logs: { disabled: boolean; dir: string; maxFiles: number; maxFileSizeMb: number };
  killTimeoutMs: number;
  resources: RunnerTaskResources;
  /** The user the task runs as (its `user`); absent: the agent's. */
  user?: string;
  /** See TaskConfig.fence of the drivers. */
  fence?: { afterMs: number };
  /** The task's `config {}` as submitted (external driver plugins decode it against their schema). */
  driverConfig?: Record<string, unknown>;
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

/** A task's resources as the driver enforces them (see TaskResources of the drivers). */
export interface RunnerTaskResources {
  cpuMhz: number;
  memoryMb: number;
  memoryMaxMb?: number;
  cores?: number;
  pidsMax?: number;
}

/** A started task as the driver describes it: JSON, persisted by the task runner. */
export type RunnerTaskHandle = { taskId?: string; [key: string]: unknown } | object;

export interface RunnerExitResult {
  exitCode: number;
  signal: string | number | null | undefined;
  oomKilled?: boolean;
  message?: string;
  /** Stopped by its executor when its lease ran out (fencing). */
  fenced?: boolean;
}

export interface RunnerDriverCapabilities {
  /** Nomad's FSIsolation: `chroot` drivers get the chroot built in the task directory, `image` and `none` do not. */
  fsIsolation: 'none' | 'chroot' | 'image';
  /** The driver makes the group's network namespace itself (createNetwork/destroyNetwork). */
  mustInitiateNetwork?: boolean;
  /** 'host', 'none', 'bridge', 'cni/*'. */
  networkModes: ReadonlyArray<string>;
  mountConfigs: 'none' | 'any';
}

/** The calls the task runner makes of a driver (R1's TaskDriver has them all). */
export interface RunnerDriver {
  readonly name: string;
  /** True for a driver that reads the task's `config {}` itself (an external plugin): `command` is then not required. */
  readonly takesDriverConfig?: boolean;
  readonly capabilities: RunnerDriverCapabilities;
  /** onSpawned: see TaskDriver's StartTaskOptions (a handle to persist before the task can run). */
  startTask(
    cfg: RunnerTaskConfig,
    opts?: {
      signal?: AbortSignal;
      onSpawned?: (handle: RunnerTaskHandle) => void;
      /** Driver events for the task's event trail (TaskDriver's StartTaskOptions.onEvent). */
      onEvent?: (event: { type: string; message: string; details?: Record<string, string> }) => void;
    },
  ): Promise<RunnerTaskHandle>;
  /** Resolves with the completed handle where the driver completes one (persist it). */
  recoverTask(handle: RunnerTaskHandle): Promise<RunnerTaskHandle | void>;
  waitTask(taskId: string, opts?: { signal?: AbortSignal }): Promise<RunnerExitResult>;
  stopTask(taskId: string, opts: { timeoutMs: number; signal?: string }): Promise<void>;
  destroyTask(taskId: string, opts?: { force?: boolean }): Promise<void>;
  /** Sends a signal ("SIGHUP") to the running task. */
  signalTask?(taskId: string, signal: string): Promise<void>;
  /**
   * Only drivers whose capabilities say mustInitiateNetwork (external plugins,
   * Nomad's CreateNetwork/DestroyNetwork): the driver makes the group's
   * network namespace instead of the agent.
   */
  createNetwork?(allocId: string, hostname: string): Promise<{ path: string }>;
  destroyNetwork?(allocId: string, path: string): Promise<void>;
  /** Applies new resources to the running task (its cgroup); false where it cannot. */
  updateTaskResources?(taskId: string, resources: RunnerTaskResources): Promise<boolean>;
}

/** The calls the network hook makes (R1's NetworkManager has them). */
export interface RunnerNetwork {
  /** The group's mode and the allocation's ports; `netnsPath`: a namespace a driver made, to attach instead of making one. */
  create(
    allocId: string,
    req?: { mode: string; ports?: ReadonlyArray<{ label: string; value: number; to: number; hostIp: string }> },
    opts?: { netnsPath?: string },
  ): Promise<{ path: string; mode?: string; address?: string; interface?: string }>;
  destroy(allocId: string): Promise<void>;
}
