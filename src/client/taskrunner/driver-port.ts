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
  /**
   * The group's network namespace, for every group mode that has one (none,
   * bridge, cni/*): made by the agent, or by the driver when it must
   * initiate the network. Absent in host mode.
   */
  networkNamespacePath?: string;
  /** The group's network mode (`host`, `bridge`, `none`, `cni/<name>`). */
  networkMode?: string;
  /**
   * The allocation's ports (its group `network {}`): the host port `value`
   * on `hostIp`, mapped to `to` inside the allocation's namespace. A driver
   * that publishes ports itself (docker's `ports = ["http"]`) reads them here.
   */
  ports?: RunnerPort[];
  /**
   * What the driver's createNetwork said of the namespace besides its path
   * (Nomad's NetworkIsolationSpec labels, e.g. docker's pause container ID),
   * kept with the allocation so starts after an agent restart have them too.
   */
  networkLabels?: Record<string, string>;
  /** The allocation's address in that namespace (bridge, CNI), once attached. */
  networkAddress?: string;
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

/** One of the allocation's ports, as Nomad's AllocatedPortMapping. */
export interface RunnerPort {
  label: string;
  value: number;
  to: number;
  hostIp: string;
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
      /** TaskDriver's StartTaskOptions.onSpawning: the handle lands before the task is asked for. */
      onSpawning?: (handle: RunnerTaskHandle) => Promise<void>;
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
   * network namespace instead of the agent. `labels`: what the driver needs
   * to find the namespace again (handed back to destroyNetwork and to every
   * start as RunnerTaskConfig.networkLabels).
   */
  createNetwork?(allocId: string, hostname: string): Promise<{ path: string; labels?: Record<string, string> }>;
  destroyNetwork?(allocId: string, path: string, labels?: Record<string, string>): Promise<void>;
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
