// A task-driver plugin seen as a Berth TaskDriver: what the task runner, the
// routes (exec, stats) and the fingerprint use when a task's driver runs out
// of process. Survives the plugin's restarts: calls made while it is down
// fail with DRIVER_SHUT_DOWN, waits carry on once the manager started it
// again and recovered the tasks from their handles. The shapes between Berth's
// driver types and the plugin protocol's are in plugin-task-shapes.ts.

import path from 'node:path';
import { AbortedError, anySignal, describeError, type Logger } from '../../lib/index.js';
import type { DriverInfo } from '../../structs/index.js';
import {
  DriverError,
  type AnyTaskHandle,
  type DriverCapabilities,
  type ExecOptions,
  type ExitResult,
  type TaskDriver,
  type TaskResourceUsage,
  type TaskStatus,
} from '../drivers/index.js';
import { taskCgroupName, type Cgroups, type TaskCgroup } from '../cgroups/index.js';
import type { LogMonitor } from '../logmon/index.js';
import type {
  Capabilities as PluginCapabilities,
  DriverPlugin,
  NetworkIsolationSpec,
  Spec,
  StartTaskResult,
  TaskConfig as PluginTaskConfig,
  TaskEvent as PluginTaskEvent,
  TaskHandle as PluginTaskHandle,
} from '../../plugins/index.js';
import { isPluginShutDown, PluginStartError, startErrorOf } from './plugin-errors.js';
import {
  berthCapabilities,
  bytes,
  decodeHandle,
  encodeHandle,
  pluginTaskConfig,
  sizes,
  taskResourceUsage,
  toExit,
  type NetworkedTaskConfig,
} from './plugin-task-shapes.js';

export type { NetworkedTaskConfig } from './plugin-task-shapes.js';

/** Where the driver manager keeps the plugin instance a driver talks to. */
export interface DriverPluginSlot {
  /** The running instance, or undefined while the plugin is down. */
  current(): DriverPlugin | undefined;
  /**
   * Resolves with a running instance other than `not` (once the manager has
   * recovered this driver's tasks on it). Rejects with DRIVER_SHUT_DOWN once
   * the manager stopped, AbortedError when `signal` aborts.
   */
  ready(opts?: { not?: DriverPlugin; signal?: AbortSignal }): Promise<DriverPlugin>;
  /** The driver's latest fingerprint, as node driver info. */
  driverInfo(): DriverInfo;
}

interface TaskRecord {
  handle: PluginTaskHandle;
  taskName: string;
  /** The group Berth made for the task (given to the driver as its cgroup), removed with the task. */
  cgroup?: TaskCgroup;
  startedAt: number;
  exit?: ExitResult;
  completedAt?: number;
}

export interface ExternalTaskDriverOptions {
  name: string;
  slot: DriverPluginSlot;
  capabilities: PluginCapabilities;
  logger: Logger;
  /** The node, as Nomad's TaskConfig names it. */
  node: { name: string };
  /** The plugin's TaskConfigSchema (undefined: it takes no config). */
  taskConfigSchema: Spec | undefined;
  /** A task's `config {}` decoded against the schema, as go-cty msgpack. Throws on a config the schema refuses. */
  encodeTaskConfig: (schema: Spec | undefined, body: Record<string, unknown>) => Uint8Array;
  /** PATH for tasks that set none (the dev agent puts its `berth` shim first). */
  defaultPath?: string;
  /**
   * Where Berth makes each task's cgroup (named `<allocId>.<task>`, with the
   * task's limits) before StartTask; its path goes to the driver as
   * LinuxResources' cgroup (Nomad's cpuset_cgroup), so the driver's executor
   * joins Berth's group. Null or absent: no group (a host without cgroups).
   */
  cgroups?: Cgroups | null;
  /** The node's log monitor (src/client/logmon), which reads the tasks' FIFOs. */
  logmon: LogMonitor;
  now?: () => number;
}

/** A TaskDriver over a driver plugin. Task event listeners get the plugin's TaskEvents stream. */
export class ExternalTaskDriver implements TaskDriver {
  readonly name: string;
  readonly cgroups = 'none' as const;
  /** The task runner hands this driver the task's `config {}` as it is. */
  readonly takesDriverConfig = true;
  #capabilities: DriverCapabilities;
  #pluginCapabilities: PluginCapabilities;
  #taskConfigSchema: Spec | undefined;
  readonly #o: ExternalTaskDriverOptions;
  readonly #tasks = new Map<string, TaskRecord>();
  readonly #networks = new Map<string, NetworkIsolationSpec>();
  readonly #eventListeners = new Set<(ev: PluginTaskEvent) => void>();
  readonly #stopping = new AbortController();
  readonly #log: Logger;

  constructor(opts: ExternalTaskDriverOptions) {
    this.#o = opts;
    this.name = opts.name;
    this.#pluginCapabilities = opts.capabilities;
    this.#capabilities = berthCapabilities(opts.capabilities);
    this.#taskConfigSchema = opts.taskConfigSchema;
    this.#log = opts.logger.child({ component: 'external-driver', driver: opts.name });
  }

  get capabilities(): DriverCapabilities {
    return this.#capabilities;
  }

  /** The plugin's own capabilities (every field of Nomad's). */
  get pluginCapabilities(): PluginCapabilities {
    return this.#pluginCapabilities;
  }

  /** Called by the manager when a restarted plugin reports its capabilities and task config schema again. */
  update(c: PluginCapabilities, taskConfigSchema: Spec | undefined): void {
    this.#pluginCapabilities = c;
    this.#capabilities = berthCapabilities(c);
    this.#taskConfigSchema = taskConfigSchema;
  }

  /** The plugin's TaskConfigSchema. */
  get taskConfigSchema(): Spec | undefined {
    return this.#taskConfigSchema;
  }

  async fingerprint(): Promise<DriverInfo> {
    return this.#o.slot.driverInfo();
  }

  #now(): number {
    return this.#o.now?.() ?? Date.now();
  }

  #alive(): void {
    if (this.#stopping.signal.aborted) throw new DriverError('DRIVER_SHUT_DOWN', `driver ${this.name} is shut down`);
  }

  /** The running plugin instance or DRIVER_SHUT_DOWN naming the plugin. */
  #plugin(): DriverPlugin {
    this.#alive();
    const p = this.#o.slot.current();
    if (!p) throw new DriverError('DRIVER_SHUT_DOWN', `driver plugin ${this.name} is not running (plugin shut down); it is being restarted`);
    return p;
  }

  #record(taskId: string): TaskRecord {
    this.#alive();
    const rec = this.#tasks.get(taskId);
    if (!rec) throw new DriverError('DRIVER_TASK_NOT_FOUND', `task ${taskId} is not known to driver ${this.name}`);
    return rec;
  }

  /** Maps a plugin error: a gone plugin is DRIVER_SHUT_DOWN; others keep their message under `code`. */
  #fail(err: unknown, code: 'DRIVER_START_FAILED' | 'DRIVER_EXECUTOR_FAILED' | 'DRIVER_TASK_NOT_RECOVERABLE', what: string): never {
    if (err instanceof DriverError) throw err;
    if (err instanceof AbortedError) throw err;
    if (isPluginShutDown(err)) throw new DriverError('DRIVER_SHUT_DOWN', `${what}: driver plugin ${this.name} shut down`, { cause: err });
    throw new DriverError(code, `${what}: ${describeError(err)}`, { cause: err });
  }

  async startTask(cfg: NetworkedTaskConfig, opts: { signal?: AbortSignal } = {}): Promise<AnyTaskHandle> {
    const plugin = this.#plugin();
    if (this.#tasks.has(cfg.id)) throw new DriverError('DRIVER_TASK_EXISTS', `task ${cfg.id} already exists`);
    if (opts.signal?.aborted) throw new AbortedError('task start aborted', { cause: opts.signal.reason });
    let pcfg: PluginTaskConfig;
    let cgroup: TaskCgroup | undefined;
    try {
      cgroup = await this.#o.cgroups?.create(taskCgroupName(cfg.allocId, cfg.taskName), {
        cpuMhz: cfg.resources.cpuMhz,
        memoryMb: cfg.resources.memoryMb,
        ...(cfg.resources.memoryMaxMb ? { memoryMaxMb: cfg.resources.memoryMaxMb } : {}),
        ...(cfg.resources.cores ? { cores: cfg.resources.cores } : {}),
        ...(cfg.resources.pidsMax ? { pidsMax: cfg.resources.pidsMax } : {}),
      });
      pcfg = await pluginTaskConfig(cfg, cgroup, {
        logmon: this.#o.logmon,
        pluginCapabilities: this.#pluginCapabilities,
        capabilities: () => this.#capabilities,
        encodeTaskConfig: (body) => this.#o.encodeTaskConfig(this.#taskConfigSchema, body),
        nodeName: this.#o.node.name,
        ...(this.#o.defaultPath ? { defaultPath: this.#o.defaultPath } : {}),
        knownNetwork: () => this.#networks.get(cfg.allocId),
      });
    } catch (err) {
      throw new PluginStartError(`task ${cfg.taskName}: its config does not fit driver ${this.name}: ${describeError(err)}`, false, { cause: err });
    }
    let started: StartTaskResult;
    try {
      started = await plugin.startTask(pcfg, opts.signal ? { signal: opts.signal } : {});
    } catch (err) {
      if (isPluginShutDown(err)) throw new PluginStartError(`task ${cfg.taskName}: driver plugin ${this.name} shut down during StartTask`, true, { cause: err });
      const start = startErrorOf(err);
      throw new PluginStartError(`task ${cfg.taskName}: driver ${this.name} failed to start it: ${start.message}`, start.recoverable, { cause: err });
    }
    this.#tasks.set(cfg.id, { handle: started.handle, taskName: cfg.taskName, startedAt: this.#now(), ...(cgroup ? { cgroup } : {}) });
    this.#log.info({ taskId: cfg.id, task: cfg.taskName }, 'task started');
    return encodeHandle(this.name, started.handle);
  }

  async recoverTask(handle: AnyTaskHandle): Promise<void> {
    this.#alive();
    if (this.#tasks.has(handle.taskId)) return;
    const ph = decodeHandle(this.name, handle);
    const plugin = await this.#o.slot.ready({ signal: anySignal([this.#stopping.signal, AbortSignal.timeout(60_000)]) }).catch((err: unknown) => {
      throw new DriverError('DRIVER_TASK_NOT_RECOVERABLE', `task ${handle.taskId}: driver plugin ${this.name} is not running: ${describeError(err)}`, { cause: err });
    });
    try {
      await plugin.recoverTask(ph);
    } catch (err) {
      this.#fail(err, 'DRIVER_TASK_NOT_RECOVERABLE', `task ${handle.taskId}: recovery by driver plugin ${this.name} failed`);
    }
    const cgroup = this.#o.cgroups?.list().find((g) => g.name === taskCgroupName(ph.config.allocId, ph.config.name));
    this.#tasks.set(handle.taskId, { handle: ph, taskName: ph.config.name, startedAt: this.#now(), ...(cgroup ? { cgroup } : {}) });
    this.#log.info({ taskId: handle.taskId, task: ph.config.name }, 'task recovered');
  }

  /**
   * Called by the manager on a freshly (re)started plugin before it is
   * handed out: every task still running is recovered on it from its handle.
   * Never throws; a task that cannot be recovered is logged (its wait then fails).
   */
  async recoverAllOn(plugin: DriverPlugin): Promise<void> {
    for (const [taskId, rec] of this.#tasks) {
      if (rec.exit) continue;
      try {
        await plugin.recoverTask(rec.handle);
      } catch (err) {
        this.#log.warn({ taskId, err: describeError(err) }, 'task could not be recovered after the plugin restarted');
      }
    }
  }

  async waitTask(taskId: string, opts: { signal?: AbortSignal } = {}): Promise<ExitResult> {
    const rec = this.#record(taskId);
    const signal = opts.signal ? AbortSignal.any([opts.signal, this.#stopping.signal]) : this.#stopping.signal;
    let plugin = this.#o.slot.current();
    for (;;) {
      if (rec.exit) return rec.exit;
      if (signal.aborted) throw this.#stopping.signal.aborted ? new DriverError('DRIVER_SHUT_DOWN', `driver ${this.name} is shut down`) : new AbortedError('wait aborted');
      plugin ??= await this.#o.slot.ready({ signal });
      try {
        const r = await plugin.waitTask(taskId, { signal });
        rec.exit = toExit(r);
        rec.completedAt = this.#now();
        return rec.exit;
      } catch (err) {
        if (signal.aborted) continue;
        if (!isPluginShutDown(err)) throw new DriverError('DRIVER_EXECUTOR_FAILED', `waiting for task ${taskId} on driver plugin ${this.name} failed: ${describeError(err)}`, { cause: err });
        this.#log.warn({ taskId }, 'driver plugin went away while waiting for a task; waiting for its restart');
        plugin = await this.#o.slot.ready({ not: plugin, signal });
      }
    }
  }

  async stopTask(taskId: string, opts: { timeoutMs: number; signal?: string }): Promise<void> {
    const rec = this.#record(taskId);
    if (rec.exit) return;
    try {
      await this.#plugin().stopTask(taskId, opts.timeoutMs, opts.signal ?? 'SIGTERM');
    } catch (err) {
      this.#fail(err, 'DRIVER_EXECUTOR_FAILED', `stopping task ${taskId}`);
    }
    await this.waitTask(taskId, { signal: AbortSignal.timeout(opts.timeoutMs + 10_000) }).catch(() => undefined);
  }

  async destroyTask(taskId: string, opts: { force?: boolean } = {}): Promise<void> {
    this.#alive();
    const rec = this.#tasks.get(taskId);
    if (!rec) return;
    if (!rec.exit && !opts.force) throw new DriverError('DRIVER_TASK_RUNNING', `task ${rec.taskName} is still running; stop it first or force`);
    try {
      await this.#plugin().destroyTask(taskId, Boolean(opts.force));
    } catch (err) {
      this.#fail(err, 'DRIVER_EXECUTOR_FAILED', `destroying task ${taskId}`);
    }
    this.#tasks.delete(taskId);
    const { stdoutPath } = rec.handle.config;
    if (stdoutPath.endsWith('.fifo')) await this.#o.logmon.remove({ dir: path.dirname(stdoutPath), taskName: rec.handle.config.name });
    if (rec.cgroup) await this.#o.cgroups?.remove(rec.cgroup).catch((err: unknown) => this.#log.warn({ taskId, err: describeError(err) }, 'cannot remove the task’s cgroup'));
  }

  inspectTask(taskId: string): TaskStatus {
    const rec = this.#record(taskId);
    return {
      id: taskId,
      taskName: rec.taskName,
      state: rec.exit ? 'exited' : 'running',
      startedAt: rec.startedAt,
      ...(rec.completedAt ? { completedAt: rec.completedAt } : {}),
      ...(rec.exit ? { exitResult: rec.exit } : {}),
      pid: 0,
    };
  }

  async signalTask(taskId: string, signal: string): Promise<void> {
    const rec = this.#record(taskId);
    if (rec.exit) throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${rec.taskName} has exited`);
    if (!/^SIG[A-Z0-9]+$/.test(signal)) throw new DriverError('DRIVER_INVALID_SIGNAL', `"${signal}" is not a signal name`);
    try {
      await this.#plugin().signalTask(taskId, signal);
    } catch (err) {
      this.#fail(err, 'DRIVER_EXECUTOR_FAILED', `signalling task ${taskId}`);
    }
  }

  /** One sample of the plugin's TaskStats stream. Rejects DRIVER_SHUT_DOWN when the plugin is gone (never hangs on it). */
  async taskStats(taskId: string): Promise<TaskResourceUsage> {
    this.#record(taskId);
    const plugin = this.#plugin();
    const ac = new AbortController();
    try {
      for await (const u of plugin.taskStats(taskId, 1000, { signal: AbortSignal.any([ac.signal, this.#stopping.signal]) })) {
        return taskResourceUsage(u);
      }
    } catch (err) {
      this.#fail(err, 'DRIVER_EXECUTOR_FAILED', `stats of task ${taskId}`);
    } finally {
      ac.abort();
    }
    throw new DriverError('DRIVER_SHUT_DOWN', `stats of task ${taskId}: the stream of driver plugin ${this.name} ended (plugin shut down)`);
  }

  /** External drivers apply resources at start only. */
  async updateTaskResources(taskId: string): Promise<boolean> {
    this.#record(taskId);
    return false;
  }

  /** External drivers own their tasks' cgroups. */
  async reapOrphans(): Promise<string[]> {
    return [];
  }

  async execTaskStreaming(taskId: string, opts: ExecOptions): Promise<{ exitCode: number }> {
    const rec = this.#record(taskId);
    if (rec.exit) throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${rec.taskName} is not running`);
    if (opts.command.length === 0) throw new DriverError('DRIVER_START_FAILED', 'exec needs a command');
    const plugin = this.#plugin();
    const write = (s: NodeJS.WritableStream | undefined) => (c: Uint8Array) => void s?.write(c);
    try {
      const r = await plugin.execTaskStreaming(
        taskId,
        {
          command: opts.command,
          tty: Boolean(opts.tty),
          ...(opts.stdin ? { stdin: bytes(opts.stdin) } : {}),
          stdout: write(opts.stdout),
          stderr: write(opts.tty ? opts.stdout : opts.stderr),
          ...(opts.resize ? { resize: sizes(opts.size, opts.resize) } : opts.size ? { resize: sizes(opts.size, []) } : {}),
        },
        opts.signal ? { signal: opts.signal } : {},
      );
      return { exitCode: r.exitCode };
    } catch (err) {
      if (opts.signal?.aborted) throw new AbortedError('exec aborted', { cause: opts.signal.reason });
      this.#fail(err, 'DRIVER_EXECUTOR_FAILED', `exec in task ${taskId}`);
    }
  }

  /**
   * CreateNetwork on the plugin (drivers whose capabilities say
   * MustInitiateNetwork): the group's namespace, made by the driver.
   * Throws DRIVER_NETWORK_UNSUPPORTED for other drivers, DRIVER_SHUT_DOWN without a plugin.
   */
  async createNetwork(allocId: string, hostname: string): Promise<{ path: string; labels: Record<string, string> }> {
    if (!this.#pluginCapabilities.mustInitiateNetwork) throw new DriverError('DRIVER_NETWORK_UNSUPPORTED', `driver ${this.name} does not create networks`);
    try {
      const r = await this.#plugin().createNetwork(allocId, { hostname });
      this.#networks.set(allocId, r.spec);
      return { path: r.spec.path, labels: { ...r.spec.labels } };
    } catch (err) {
      this.#fail(err, 'DRIVER_EXECUTOR_FAILED', `creating the network of allocation ${allocId}`);
    }
  }

  /** DestroyNetwork on the plugin, with the spec CreateNetwork gave (or one rebuilt from the path and labels the allocation kept, after an agent restart). */
  async destroyNetwork(allocId: string, nsPath: string, labels: Record<string, string> = {}): Promise<void> {
    const spec = this.#networks.get(allocId) ?? { mode: 'group' as const, path: nsPath, labels: { ...labels } };
    try {
      await this.#plugin().destroyNetwork(allocId, spec);
    } catch (err) {
      this.#fail(err, 'DRIVER_EXECUTOR_FAILED', `destroying the network of allocation ${allocId}`);
    }
    this.#networks.delete(allocId);
  }

  /** Subscribes to the plugin's task events; returns the unsubscribe function. */
  onTaskEvent(listener: (ev: PluginTaskEvent) => void): () => void {
    this.#eventListeners.add(listener);
    return () => this.#eventListeners.delete(listener);
  }

  /** Called by the manager for each event of the plugin's TaskEvents stream. */
  emitTaskEvent(ev: PluginTaskEvent): void {
    for (const l of this.#eventListeners) {
      try {
        l(ev);
      } catch (err) {
        this.#log.warn({ err: describeError(err) }, 'task event listener failed');
      }
    }
  }

  /** The task ids this driver knows (running or exited, not destroyed). */
  taskIds(): string[] {
    return [...this.#tasks.keys()];
  }

  /** Stops watching tasks (they keep running in the plugin). Safe twice. */
  async shutdown(): Promise<void> {
    this.#stopping.abort();
  }
}
