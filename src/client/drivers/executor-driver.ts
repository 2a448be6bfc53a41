// What raw_exec and exec share: each task runs under a detached executor
// process (executor.mjs) that outlives the agent; the driver talks to it over
// its unix socket and reads the kernel's /proc for liveness and stats (a lost
// or half-started executor: _executor-loss.ts; a task's usage: _task-stats.ts;
// the executor's config and the task's handle a start writes: _executor-config.ts).
// One thing, near 500 lines: the TaskDriver contract over one executor protocol (start,
// recover, wait, stop, destroy, signal, exec, leases), each call a few lines of it.

import { createHash } from 'node:crypto';
import { existsSync, utimesSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { constants } from 'node:os';
import { join } from 'node:path';
import { AbortedError, helperScript, linkSignals, SignalFanout, systemClock, silentLogger, type Clock, type Logger } from '../../lib/index.js';
import type { DriverInfo } from '../../structs/index.js';
import { taskCgroupName, type Cgroups, type TaskCgroup } from '../cgroups/index.js';
import { DriverError } from './driver-error.js';
import { commandProblem } from './_command-path.js';
import { runAsUser } from './_task-user.js';
import { askExecutor, ExecutorUnavailable, type ExecutorAnswer, type FollowedAsk } from './_control.js';
import { ExecutorHosts, raceAbort, readExitRecord, spawnExecutor, type StartReport } from './_executor-hosts.js';
import { completeSpawnedHandle, executorAlive, lostExecutorExit } from './_executor-loss.js';
import { environOf, isAlive, readStat } from './_proc.js';
import { taskUsage } from './_task-stats.js';
import { execPipes, execTty, type ExecSessions } from './_exec-session.js';
import { cgroupLimits, checkMounts, killGroup, killPid, publicExit } from './_host.js';
import { executorConfig, newTaskHandle } from './_executor-config.js';
import type {
  DriverCapabilities,
  ExecOptions,
  ExitResult,
  StartTaskOptions,
  TaskConfig,
  TaskDriver,
  TaskHandle,
  TaskResourceUsage,
  TaskResources,
  TaskStatus,
} from './task-driver.js';

/** The executor script (also the host's log monitor, see src/client/logmon): dist/executor.cjs once built (lib's helperScript). */
export const EXECUTOR_PATH = helperScript('executor', import.meta.url);
/** Longest unix socket path Linux takes (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;

export { isRoot, missingTools } from './_host.js';

/**
 * The shared executors for `tasksPerExecutor` above 1, in `dir` (undefined: each task its own
 * executor). A driver makes its own; createDrivers makes one for raw_exec and exec together.
 */
export function sharedExecutorHosts(
  dir: string,
  opts: Pick<ExecutorDriverOptions, 'tasksPerExecutor' | 'sharedExecutorIdleMs' | 'spareExecutor' | 'logger'>,
): ExecutorHosts | undefined {
  const tasksPerExecutor = opts.tasksPerExecutor ?? 1;
  if (tasksPerExecutor <= 1) return undefined;
  return new ExecutorHosts({
    executorPath: EXECUTOR_PATH,
    dir,
    tasksPerExecutor,
    idleExitMs: opts.sharedExecutorIdleMs ?? 0,
    spare: opts.spareExecutor ?? false,
    ...(opts.logger ? { logger: opts.logger.child({ component: 'executors' }) } : {}),
  });
}

export interface ExecutorDriverOptions {
  /** Where per-task executor state (control socket, exit.json) lives; short, since socket paths are limited. */
  stateDir: string;
  logger?: Logger;
  clock?: Clock;
  /** Where tasks get their cgroup (limits, kill-all, OOM, stats); null: none here, limits not enforced. */
  cgroups?: Cgroups | null;
  /**
   * Fault injection for tests: called once a task's executor reported the
   * task running, before startTask resolves (the instant an agent killed
   * there used to leave no handle behind). Never set in production.
   */
  afterTaskStarted?: (cfg: TaskConfig) => void;
  /**
   * How many tasks one executor process runs: 1 (the default) gives each
   * task its own; more shares one Node process among that many tasks (a task
   * start is then a spawn, not a Node start; a crash of it loses all its tasks).
   */
  tasksPerExecutor?: number;
  /** How long a shared executor with no task left waits before it exits. Default 0: at once. */
  sharedExecutorIdleMs?: number;
  /** Shared executors only: keep one with room started ahead of need, from the first fingerprint on (the agent's drivers do). */
  spareExecutor?: boolean;
  /**
   * Shared executors kept by the caller for several drivers (createDrivers: raw_exec's and exec's);
   * `tasksPerExecutor`, `sharedExecutorIdleMs` and `spareExecutor` are then its own. The first of its
   * drivers to shut down closes it (its spares end; tasks keep running).
   */
  executorHosts?: ExecutorHosts;
}

interface TaskRecord {
  handle: TaskHandle;
  exit?: ExitResult & { finishedAt: number };
  /** A shared executor's word on the task's exit, on its start's connection (its exit undefined: ask the task's socket). */
  told?: Pick<FollowedAsk, 'exit' | 'hold'>;
  lastCpu?: { totalMs: number; at: number };
}

/** The shared implementation; RawExecDriver and ExecDriver choose the mode. */
export abstract class ExecutorDriver implements TaskDriver {
  abstract readonly name: 'raw_exec' | 'exec';
  abstract readonly capabilities: DriverCapabilities;
  protected readonly logger: Logger;
  readonly #stateDir: string;
  readonly #clock: Clock;
  readonly #tasks = new Map<string, TaskRecord>();
  readonly #stopping = new AbortController();
  /** Waits and calls end with #stopping through this: one listener on it, however many tasks run. */
  readonly #untilStopping = new SignalFanout(this.#stopping.signal);
  readonly #execs: ExecSessions = new Set();
  readonly #cgroups: Cgroups | null;
  readonly #afterTaskStarted: ((cfg: TaskConfig) => void) | undefined;
  readonly #hosts: ExecutorHosts | undefined;

  constructor(opts: ExecutorDriverOptions) {
    this.#stateDir = opts.stateDir;
    this.#hosts = opts.executorHosts ?? sharedExecutorHosts(opts.stateDir, opts);
    this.#afterTaskStarted = opts.afterTaskStarted;
    this.#cgroups = opts.cgroups ?? null;
    this.#clock = opts.clock ?? systemClock;
    this.logger = (opts.logger ?? silentLogger()).child({ component: 'driver' });
  }

  abstract fingerprint(): Promise<DriverInfo>;

  /** A healthy fingerprint calls this: a spare executor is kept from then on (spareExecutor). */
  protected warmExecutors(): void {
    if (!this.#stopping.signal.aborted) this.#hosts?.warm();
  }

  expectStarts(count: number): void {
    if (!this.#stopping.signal.aborted) this.#hosts?.expect(count);
  }

  get cgroups(): 'v1' | 'v2' | 'none' {
    return this.#cgroups?.version ?? 'none';
  }

  async startTask(cfg: TaskConfig, opts: StartTaskOptions = {}): Promise<TaskHandle> {
    this.#alive();
    if (opts.signal?.aborted) throw new AbortedError('task start aborted', { cause: opts.signal.reason });
    if (this.#tasks.has(cfg.id)) throw new DriverError('DRIVER_TASK_EXISTS', `task ${cfg.id} is already started`);
    checkMounts(cfg, this.name, this.capabilities.mountConfigs);
    if (cfg.networkNamespacePath && !existsSync(cfg.networkNamespacePath)) {
      throw new DriverError('DRIVER_START_FAILED', `task ${cfg.taskName}: network namespace ${cfg.networkNamespacePath} does not exist`);
    }
    const missing = commandProblem(cfg, this.name);
    if (missing) throw new DriverError('DRIVER_START_FAILED', `task ${cfg.taskName}: ${missing}`, { recoverable: false });
    const stateDir = join(this.#stateDir, createHash('sha256').update(cfg.id).digest('hex').slice(0, 16));
    const socketPath = join(stateDir, 'ctl.sock');
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH) {
      throw new DriverError('DRIVER_START_FAILED', `driver state dir ${this.#stateDir} is too long for a unix socket path`);
    }
    // Off the event loop, all of it: with hundreds of tasks starting at once, sync calls here add up.
    // A dir left by an earlier start of the same task is emptied; a new one (the usual case) costs one mkdir.
    if ((await mkdir(stateDir, { recursive: true, mode: 0o700 })) === undefined) {
      await rm(stateDir, { recursive: true, force: true });
      await mkdir(stateDir, { recursive: true, mode: 0o700 });
    }
    let cgroup: TaskCgroup | undefined;
    if (this.#cgroups) {
      try {
        cgroup = await this.#cgroups.create(taskCgroupName(cfg.allocId, cfg.taskName), cgroupLimits(cfg.resources));
      } catch (err) {
        await rm(stateDir, { recursive: true, force: true });
        throw new DriverError('DRIVER_START_FAILED', `task ${cfg.taskName}: its cgroup could not be set up: ${(err as Error).message}`, { cause: err });
      }
    }

    const leaseFile = cfg.fence ? join(stateDir, 'lease') : undefined;
    if (leaseFile) await writeFile(leaseFile, '');
    const run = cfg.user ? runAsUser(cfg.user, cfg.command, cfg.args, cfg.taskName, [cfg.taskDir, cfg.secretsDir]) : cfg;
    const place = { stateDir, socketPath, cgroup, leaseFile };
    const config = executorConfig(this.name, cfg, run, place);
    const handle = newTaskHandle(this.name, cfg, place, this.#clock.now());
    const { report: answer, told } = await this.#startExecutor(config, handle, opts);
    if (!answer.ok) {
      await rm(stateDir, { recursive: true, force: true });
      if (cgroup) await this.#cgroups?.remove(cgroup).catch(() => undefined);
      throw new DriverError('DRIVER_START_FAILED', `task ${cfg.taskName} failed to start: ${answer.error ?? 'unknown error'}`);
    }
    handle.executorStartTicks = answer.executorStartTicks ?? handle.executorStartTicks;
    handle.taskPid = answer.taskPid ?? 0;
    handle.taskStartTicks = answer.taskStartTicks ?? 0;
    this.#afterTaskStarted?.(cfg);
    this.#tasks.set(cfg.id, { handle, ...(told ? { told } : {}) });
    this.logger.info({ taskId: cfg.id, task: cfg.taskName, pid: handle.taskPid, driver: this.name }, 'task started');
    return handle;
  }

  /**
   * Has the task started by its own executor process, or on a shared one;
   * fills in the handle's executor and calls opts.onSpawned once the
   * executor is known, before it starts the task. Resolves with its report
   * and, from a shared executor, the exit it will tell on the start's connection.
   */
  async #startExecutor(
    config: { stateDir: string },
    handle: TaskHandle,
    opts: StartTaskOptions,
  ): Promise<{ report: StartReport; told?: Pick<FollowedAsk, 'exit' | 'hold'> }> {
    if (this.#hosts) {
      const { report, told } = await this.#hosts.start(
        config,
        (place) => {
          handle.executorPid = place.pid;
          handle.executorStartTicks = place.startTicks;
          handle.sharedExecutor = { socketPath: place.socketPath };
          // Nothing of the task runs before it is asked for: its handle may land with the others of this turn.
          if (opts.onSpawning) return opts.onSpawning({ ...handle });
          opts.onSpawned?.({ ...handle });
          return undefined;
        },
        opts.signal,
      );
      return { report, ...(told ? { told } : {}) };
    }
    const { child, report } = spawnExecutor(EXECUTOR_PATH, config.stateDir, config, opts.signal);
    handle.executorPid = child.pid ?? 0;
    if (handle.executorPid) {
      // Before the executor has even read its config: an agent killed from here on leaves a handle to find it by.
      handle.executorStartTicks = readStat(handle.executorPid)?.startTicks ?? 0;
      opts.onSpawned?.({ ...handle });
    }
    const answer = await report;
    if (answer.ok) child.unref();
    return { report: answer };
  }

  async recoverTask(saved: TaskHandle): Promise<TaskHandle> {
    this.#alive();
    const known = this.#tasks.get(saved.taskId);
    if (known) return { ...known.handle };
    if (saved.version !== 1 || saved.driver !== this.name || !saved.stateDir || !saved.socketPath) {
      throw new DriverError('DRIVER_TASK_NOT_RECOVERABLE', `task ${saved.taskId}: the handle is not a ${this.name} handle`);
    }
    const handle = saved.taskPid ? { ...saved } : await completeSpawnedHandle(saved, this.#clock, this.#untilStopping, (rec) => this.#killCgroup(rec));
    const recorded = readExitRecord(handle);
    if (recorded) {
      this.#tasks.set(handle.taskId, { handle, exit: recorded });
    } else if (executorAlive(handle) || isAlive(handle.taskPid, handle.taskStartTicks)) {
      this.#tasks.set(handle.taskId, { handle });
      if (handle.sharedExecutor) this.#hosts?.adopt({ pid: handle.executorPid, startTicks: handle.executorStartTicks, socketPath: handle.sharedExecutor.socketPath });
    } else {
      throw new DriverError('DRIVER_TASK_NOT_RECOVERABLE', `task ${handle.taskName}: neither its executor nor a recorded exit was found`);
    }
    this.logger.info({ taskId: handle.taskId, task: handle.taskName, exited: Boolean(recorded) }, 'task recovered');
    return { ...handle };
  }

  async waitTask(taskId: string, opts: { signal?: AbortSignal } = {}): Promise<ExitResult> {
    const rec = this.#record(taskId);
    try {
      return await this.#untilStopping.run(async (stopping) => {
        const link = opts.signal ? linkSignals([opts.signal, stopping]) : undefined;
        try {
          return await this.#waitExit(rec, link?.signal ?? stopping);
        } finally {
          link?.unlink();
        }
      });
    } catch (err) {
      if (this.#stopping.signal.aborted) throw this.#shutDownError();
      throw err;
    }
  }

  async #waitExit(rec: TaskRecord, signal: AbortSignal): Promise<ExitResult> {
    if (rec.told && !rec.exit) {
      const { exit, hold } = rec.told;
      hold(true);
      let told: ExecutorAnswer['exit'] | undefined;
      try {
        told = await raceAbort(exit, signal, 'executor request aborted');
      } finally {
        hold(false);
      }
      if (told && !rec.exit) rec.exit = told;
      // Told nothing (the connection ended): the task's socket and exit.json tell, as after a recovery.
      if (!told) delete rec.told;
    }
    while (!rec.exit) {
      let answer: ExecutorAnswer | undefined;
      try {
        answer = await askExecutor(rec.handle.socketPath, { op: 'wait' }, signal);
      } catch (err) {
        if (!(err instanceof ExecutorUnavailable)) throw err;
      }
      if (answer?.exit) {
        rec.exit = answer.exit;
        break;
      }
      const recorded = readExitRecord(rec.handle);
      if (recorded) {
        rec.exit = recorded;
        break;
      }
      if (executorAlive(rec.handle)) {
        // Between the socket closing and exit.json landing, or the socket not up yet.
        await this.#clock.sleep(20, signal);
        continue;
      }
      rec.exit = await lostExecutorExit(rec.handle, this.#clock, this.logger, (r) => this.#killCgroup(r), signal);
    }
    return publicExit(rec.exit);
  }

  async stopTask(taskId: string, opts: { timeoutMs: number; signal?: string }): Promise<void> {
    const rec = this.#record(taskId);
    if (rec.exit) return;
    const signal = opts.signal ?? 'SIGTERM';
    try {
      const answer = await this.#untilStopping.run((stopping) => askExecutor(rec.handle.socketPath, { op: 'stop', signal, timeoutMs: opts.timeoutMs }, stopping));
      if (answer.exit) rec.exit = answer.exit;
    } catch (err) {
      if (this.#stopping.signal.aborted) throw this.#shutDownError();
      if (!(err instanceof ExecutorUnavailable)) throw err;
      // No executor: signal the orphaned task's group directly, then kill it and all of its cgroup.
      if (isAlive(rec.handle.taskPid, rec.handle.taskStartTicks)) {
        killGroup(rec.handle.taskPid, signal);
        const deadline = this.#clock.now() + opts.timeoutMs;
        while (isAlive(rec.handle.taskPid, rec.handle.taskStartTicks) && this.#clock.now() < deadline) {
          await this.#untilStopping.run((stopping) => this.#clock.sleep(50, stopping));
        }
        killGroup(rec.handle.taskPid, 'SIGKILL');
      }
      await this.#killCgroup(rec);
    }
    await this.waitTask(taskId);
    this.logger.info({ taskId, task: rec.handle.taskName }, 'task stopped');
  }

  async destroyTask(taskId: string, opts: { force?: boolean } = {}): Promise<void> {
    this.#alive();
    const rec = this.#tasks.get(taskId);
    if (!rec) return;
    if (!rec.exit && this.#running(rec)) {
      if (!opts.force) throw new DriverError('DRIVER_TASK_RUNNING', `task ${rec.handle.taskName} is still running; stop it first or force`);
      await this.stopTask(taskId, { timeoutMs: 0, signal: 'SIGKILL' });
    }
    if (rec.handle.sharedExecutor) {
      // A shared executor lets go of the task once its exit is recorded, and goes on with its other tasks.
      this.#hosts?.release(rec.handle.executorPid);
    } else {
      // The executor leaves on its own once the task's exit is recorded; make sure.
      for (let i = 0; i < 50 && isAlive(rec.handle.executorPid, rec.handle.executorStartTicks); i++) {
        await this.#clock.sleep(20);
      }
      if (isAlive(rec.handle.executorPid, rec.handle.executorStartTicks)) killPid(rec.handle.executorPid, 'SIGKILL');
    }
    if (rec.handle.cgroup && this.#cgroups) {
      await this.#cgroups.remove(rec.handle.cgroup).catch((err: unknown) => {
        this.logger.warn({ taskId, task: rec.handle.taskName, err: (err as Error).message }, 'removing the task cgroup failed');
      });
    }
    await rm(rec.handle.stateDir, { recursive: true, force: true });
    this.#tasks.delete(taskId);
    this.logger.info({ taskId, task: rec.handle.taskName }, 'task destroyed');
  }

  inspectTask(taskId: string): TaskStatus {
    const rec = this.#record(taskId);
    const state = rec.exit ? 'exited' : this.#running(rec) ? 'running' : 'unknown';
    return {
      id: taskId,
      taskName: rec.handle.taskName,
      state,
      startedAt: rec.handle.startedAt,
      pid: rec.handle.taskPid,
      ...(rec.exit ? { completedAt: rec.exit.finishedAt, exitResult: publicExit(rec.exit) } : {}),
    };
  }

  async signalTask(taskId: string, signal: string): Promise<void> {
    const rec = this.#record(taskId);
    if (!(signal in constants.signals)) throw new DriverError('DRIVER_INVALID_SIGNAL', `unknown signal ${signal}`);
    if (rec.exit) throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${rec.handle.taskName} has exited`);
    let answer: ExecutorAnswer;
    try {
      answer = await this.#untilStopping.run((stopping) => askExecutor(rec.handle.socketPath, { op: 'signal', signal }, stopping));
    } catch (err) {
      if (this.#stopping.signal.aborted) throw this.#shutDownError();
      if (!(err instanceof ExecutorUnavailable)) throw err;
      if (!isAlive(rec.handle.taskPid, rec.handle.taskStartTicks)) {
        throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${rec.handle.taskName} has exited`, { cause: err });
      }
      killGroup(rec.handle.taskPid, signal);
      return;
    }
    if (answer.error) throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${rec.handle.taskName}: ${answer.error}`);
  }

  async taskStats(taskId: string): Promise<TaskResourceUsage> {
    const rec = this.#record(taskId);
    if (rec.exit || !isAlive(rec.handle.taskPid, rec.handle.taskStartTicks)) {
      throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${rec.handle.taskName} is not running`);
    }
    return taskUsage(rec, this.#cgroups, this.#clock.now());
  }

  async updateTaskResources(taskId: string, resources: TaskResources): Promise<boolean> {
    const rec = this.#record(taskId);
    if (!rec.handle.cgroup || !this.#cgroups || rec.exit) return false;
    try {
      this.#cgroups.update(rec.handle.cgroup, cgroupLimits(resources));
      this.logger.info({ taskId, task: rec.handle.taskName, memoryMb: resources.memoryMb, cpuMhz: resources.cpuMhz }, 'task resources updated');
      return true;
    } catch (err) {
      this.logger.warn({ taskId, task: rec.handle.taskName, err: (err as Error).message }, 'task resources not updated');
      return false;
    }
  }

  /**
   * Kills the processes of tasks this driver does not run: each group under
   * the Berth parent whose `<allocId>.<task>` is not in `keep` is emptied and
   * removed (an executor killed while the agent was down, a task whose
   * allocation is gone). Call once after the tasks to keep were recovered.
   * Resolves with the names of the groups removed. Never throws.
   */
  async reapOrphans(keep: ReadonlySet<string>): Promise<string[]> {
    if (!this.#cgroups) return [];
    const removed: string[] = [];
    for (const group of this.#cgroups.list()) {
      if (keep.has(group.name)) continue;
      try {
        await this.#cgroups.remove(group);
        removed.push(group.name);
      } catch (err) {
        this.logger.warn({ cgroup: group.name, err: (err as Error).message }, 'removing an orphaned task cgroup failed');
      }
    }
    if (removed.length) this.logger.warn({ cgroups: removed }, 'killed the processes of tasks no longer run');
    return removed;
  }

  renewLeases(): void {
    if (this.#stopping.signal.aborted) return;
    const now = new Date();
    for (const rec of this.#tasks.values()) {
      if (!rec.handle.leaseFile || rec.exit) continue;
      try {
        utimesSync(rec.handle.leaseFile, now, now);
      } catch {
        // the task ended and its state went with it
      }
    }
  }

  async #killCgroup(rec: Pick<TaskRecord, 'handle'>): Promise<void> {
    if (!rec.handle.cgroup || !this.#cgroups) return;
    await this.#cgroups.killAll(rec.handle.cgroup).catch((err: unknown) => {
      this.logger.warn({ taskId: rec.handle.taskId, err: (err as Error).message }, 'killing the task cgroup failed');
    });
  }

  async execTaskStreaming(taskId: string, opts: ExecOptions): Promise<{ exitCode: number }> {
    const rec = this.#record(taskId);
    if (opts.command.length === 0) throw new DriverError('DRIVER_START_FAILED', 'exec needs a command');
    if (rec.exit || !isAlive(rec.handle.taskPid, rec.handle.taskStartTicks)) {
      throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${rec.handle.taskName} is not running`);
    }
    if (opts.signal?.aborted) throw new AbortedError('exec aborted', { cause: opts.signal.reason });
    const { argv, env, cwd } = this.execTarget(rec.handle, opts.command, Boolean(opts.tty));
    const [file, ...args] = argv as [string, ...string[]];
    const session = opts.tty ? execTty(this.#execs, file, args, env, cwd, opts) : execPipes(this.#execs, file, args, env, cwd, opts);
    return session;
  }

  /** How to run a command inside the task: argv (with nsenter when needed), its env and cwd. */
  protected abstract execTarget(handle: TaskHandle, command: string[], tty: boolean): { argv: string[]; env: Record<string, string>; cwd: string };

  /** The env the task process started with (what a command run inside it should see). */
  protected taskEnv(pid: number): Record<string, string> {
    try {
      return environOf(pid);
    } catch {
      return { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' };
    }
  }

  async shutdown(): Promise<void> {
    if (this.#stopping.signal.aborted) return;
    this.#stopping.abort(this.#shutDownError());
    this.#hosts?.close();
    for (const s of this.#execs) s.kill();
    this.#execs.clear();
    this.#tasks.clear();
    this.#cgroups?.prune();
    this.logger.info({ driver: this.name }, 'driver shut down; tasks keep running');
  }

  #running(rec: TaskRecord): boolean {
    return isAlive(rec.handle.taskPid, rec.handle.taskStartTicks) || executorAlive(rec.handle);
  }

  #alive(): void {
    if (this.#stopping.signal.aborted) throw this.#shutDownError();
  }

  #shutDownError(): DriverError {
    return new DriverError('DRIVER_SHUT_DOWN', `the ${this.name} driver is shut down`);
  }

  #record(taskId: string): TaskRecord {
    this.#alive();
    const rec = this.#tasks.get(taskId);
    if (!rec) throw new DriverError('DRIVER_TASK_NOT_FOUND', `no task ${taskId} in the ${this.name} driver`);
    return rec;
  }
}
