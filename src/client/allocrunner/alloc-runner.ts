// The allocation runner (Nomad's client/allocrunner): one per allocation the
// server assigns to this node. Runs its hooks (task drivers; then alloc dir,
// network, host volumes beside CSI volumes: prerun-stages.ts), then tasks;
// once every task ended (or the allocation is stopped) runs postrun in
// reverse (volume binds, CSI unmount and release, network); destroy removes
// the allocation directory. Status goes to `onStatus` as it changes. Which
// hooks and task runners it has is wired in alloc-runner-hooks.ts.
// One thing, near 500 lines: one allocation's lifecycle (run, restore, update,
// stop, destroy) over one state, and what other parts ask of it (status,
// mounts, events, its tasks); its wiring, records and stages are apart, as
// are the status derived from its tasks (alloc-status.ts) and a new job
// version taken in place (in-place-update.ts).

import { describeError, silentLogger, systemClock, type Clock, type Logger } from '../../lib/index.js';
import { type Allocation, type CsiPluginType, type Job, type NodeEvent, type TaskGroup, type TaskState } from '../../structs/index.js';
import { AllocDir } from '../allocdir/index.js';
import type { Bucket } from '../state/index.js';
import {
  forgetTaskRunner,
  type PluginSupervisorHook,
  TASK_EVENTS,
  type TaskRunner,
} from '../taskrunner/index.js';
import { AllocRunnerError, type AllocHook, type AllocHookContext, type ResolvedVolume } from './alloc-hook.js';
import { ALLOC_RUNNERS_BUCKET, jobWithoutMountFlags, type AllocRunnerRecord } from './alloc-records.js';
import type { AllocRunnerOptions } from './alloc-runner-options.js';
import { allocHooks, allocRunnerBackoff, wireTaskRunners } from './alloc-runner-hooks.js';
import { type CsiHook } from './csi-hook.js';
import { armMaxRunDuration, MAX_RUN_EXCEEDED, maxRunDeadline } from './max-run-duration.js';
import { runPrerunStages, type PrerunStage } from './prerun-stages.js';
import { lifecycleRole, TaskLifecycle } from './task-lifecycle.js';
import { allocStatus } from './alloc-status.js';
import { updateInPlace } from './in-place-update.js';

export type { AllocRunnerOptions, AllocRunnerStatus, WantedMount } from './alloc-runner-options.js';
import type { AllocRunnerStatus, WantedMount } from './alloc-runner-options.js';

type RunnerState = 'new' | 'running' | 'stopping' | 'shutdown' | 'destroyed';

/**
 * Runs one allocation. Lifecycle: `run()` for a new allocation, or
 * `restore()` after an agent restart; `update()` with every new version of
 * the allocation from the server; `destroy()` once the server no longer
 * lists it; `shutdown()` when the agent stops (tasks keep running).
 *
 * After restore() the runner takes no destructive action (no postrun, no
 * restart of a task lost meanwhile) until the first update() brings the
 * server's view of the allocation (docs/csi-rules.md scenario 19).
 */
export class AllocRunner {
  readonly id: string;
  readonly #o: AllocRunnerOptions;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #bucket: Bucket<AllocRunnerRecord>;
  readonly #record: AllocRunnerRecord;
  readonly #group: TaskGroup;
  readonly #allocDir: AllocDir;
  readonly #tasks = new Map<string, TaskRunner>();
  readonly #supervisors = new Map<string, PluginSupervisorHook>();
  readonly #volumes = new Map<string, ResolvedVolume>();
  readonly #prerunStages: PrerunStage[];
  readonly #postrunHooks: AllocHook[];
  readonly #destroyHooks: AllocHook[];
  readonly #csiHook: CsiHook;
  readonly #lifecycle: TaskLifecycle;
  /** Fires on stop, destroy and shutdown: ends prerun waits. */
  readonly #stopAbort = new AbortController();
  /** Fires on shutdown only: ends postrun retries (they resume after the restart). */
  readonly #shutdownAbort = new AbortController();
  #state: RunnerState = 'new';
  #held = false;
  /** Restored tasks that were never started (restore() said 'new' in the running phase). */
  readonly #unstarted = new Set<string>();
  #running: Promise<void> | undefined;
  #postrun: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #lastStatus = '';
  #cleanedUp!: () => void;
  #launchedNow!: () => void;
  /** Resolves once a task was handed to its driver, or run() ended (launched()). */
  readonly #launched = new Promise<void>((resolve) => (this.#launchedNow = resolve));
  /** Resolves once postrun finished (volumes unmounted and released) or the runner was destroyed. */
  readonly #whenCleanedUp = new Promise<void>((resolve) => (this.#cleanedUp = resolve));

  /** Throws AllocRunnerError ALLOC_BAD_SPEC when the job has no group of the allocation's name. */
  constructor(opts: AllocRunnerOptions) {
    this.#o = opts;
    this.id = opts.alloc.id;
    this.#clock = opts.clock ?? systemClock;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'alloc-runner', allocId: opts.alloc.id });
    const group = opts.job.groups.find((g) => g.name === opts.alloc.taskGroup);
    if (!group) throw new AllocRunnerError('ALLOC_BAD_SPEC', `job "${opts.job.id}" has no group "${opts.alloc.taskGroup}"`);
    this.#group = group;
    this.#bucket = opts.store.bucket<AllocRunnerRecord>(ALLOC_RUNNERS_BUCKET);
    const saved = this.#bucket.get(this.id);
    this.#record = saved ? { ...saved, alloc: opts.alloc } : { alloc: opts.alloc, job: jobWithoutMountFlags(opts.job), phase: 'new', csi: {}, binds: [] };
    // A new record can wait for the first write that must land (a hook's record of a claim or mount, a task's handle): restore() starts a missing one afresh.
    if (saved) this.#save();
    else this.#saveSoon();
    if (this.#record.phase === 'done') this.#cleanedUp();
    this.#allocDir = new AllocDir({ root: opts.allocDirRoot, allocId: this.id, ...(opts.chroot ? { chroot: opts.chroot } : {}), logger: this.#logger });
    const wiring = { opts, group, allocDir: this.#allocDir, record: this.#record, clock: this.#clock, logger: this.#logger, backoff: allocRunnerBackoff(opts) };
    wireTaskRunners({
      ...wiring,
      volumes: this.#volumes,
      save: () => this.#save(),
      taskChanged: () => this.#taskChanged(),
      handedOff: () => this.#launchedNow(),
      tasks: this.#tasks,
      supervisors: this.#supervisors,
    });
    ({ csiHook: this.#csiHook, prerunStages: this.#prerunStages, postrunHooks: this.#postrunHooks, destroyHooks: this.#destroyHooks } = allocHooks(wiring));
    this.#lifecycle = new TaskLifecycle({
      tasks: group.tasks.map((t) => ({ runner: this.#tasks.get(t.name) as TaskRunner, role: lifecycleRole(t), leader: t.leader === true })),
      logger: this.#logger,
      mayAct: () => this.#state !== 'shutdown' && this.#state !== 'destroyed' && !this.#record.maxRunExceeded,
    });
  }

  /** The allocation as last given (constructor or update). */
  get alloc(): Allocation {
    return this.#record.alloc;
  }

  /**
   * Runs the prerun hooks, then starts every task; resolves once the tasks
   * started (it does not wait for them to exit), once prerun failed (the
   * allocation is then failed and cleaned up), or once the allocation was
   * stopped meanwhile. Waits as long as a CSI plugin is not registered or a
   * claim is not granted. Never throws. Call once.
   */
  run(): Promise<void> {
    if (this.#state !== 'new' || this.#stopAbort.signal.aborted) return this.#running ?? Promise.resolve();
    this.#state = 'running';
    this.#running = this.#run().finally(() => this.#launchedNow());
    return this.#running;
  }

  /**
   * Resolves once the first of its tasks was handed to its driver (its
   * handle recorded, the executor about to start it), or run() ended without
   * one: the point the client's admission window frees this allocation's
   * slot. Pending before run(). Never rejects.
   */
  launched(): Promise<void> {
    return this.#launched;
  }

  async #run(): Promise<void> {
    this.#record.phase = 'prerun';
    this.#saveSoon();
    this.#pushStatus();
    const failFast = new AbortController();
    const ctx = this.#ctx(AbortSignal.any([this.#stopAbort.signal, this.#shutdownAbort.signal, failFast.signal]));
    const outcome = await runPrerunStages(this.#prerunStages, ctx, failFast);
    if (outcome.kind === 'aborted') return;
    if (outcome.kind === 'failed') {
      const message = `${outcome.hook.name}: ${describeError(outcome.err)}`;
      this.#logger.error({ hook: outcome.hook.name, err: describeError(outcome.err) }, 'prerun hook failed');
      this.#record.failure = message;
      this.#save();
      this.#event(TASK_EVENTS.setupFailure, `Allocation setup failed: ${message}`);
      await Promise.all([...this.#tasks.values()].map((t) => t.kill('the allocation failed to set up', { failed: true })));
      await this.#runPostrun();
      return;
    }
    if (this.#stopAbort.signal.aborted || this.#shutdownAbort.signal.aborted) return;
    // Before any task's spawn, whose handle's put writes this too: restore() needs 'running' to adopt them.
    this.#record.phase = 'running';
    this.#saveSoon();
    this.#watchTasks();
    await this.#lifecycle.run(ctx.signal);
  }

  /**
   * After an agent restart: reloads the record, reattaches every task from
   * its saved handle (no task is started again), and re-adopts running
   * plugins. Takes no destructive action until update(). Never throws.
   */
  async restore(): Promise<void> {
    if (this.#state !== 'new') return;
    this.#held = true;
    const ctx = this.#ctx(this.#shutdownAbort.signal);
    for (const hook of [...this.#prerunStages.flat(2), ...this.#postrunHooks]) hook.restore?.(ctx);
    const phase = this.#record.phase;
    if (phase === 'new' || phase === 'prerun') {
      // Prerun never finished: it runs again (claims and mounts are safe to repeat) on update().
      this.#pushStatus();
      return;
    }
    this.#state = 'running';
    const results = await Promise.all([...this.#tasks.values()].map(async (t) => [t.name, await t.restore()] as const));
    // Tasks the previous agent never got to start (it died first) start once the server's view arrives.
    for (const [name, result] of results) if (result === 'new' && phase === 'running') this.#unstarted.add(name);
    this.#logger.info({ tasks: Object.fromEntries(results), phase }, 'allocation restored');
    if (phase === 'running') this.#watchTasks();
    this.#pushStatus();
  }

  /**
   * A new version of the allocation from the server. desiredStatus stop or
   * evict stops the tasks and runs postrun (unmount, release, network). The
   * first update after restore() lets the runner act again. Never throws.
   */
  update(alloc: Allocation, job?: Job): void {
    const before = this.#record.alloc;
    this.#record.alloc = alloc;
    // The server moved the allocation to a new job version without a stop: what changed its tasks take as they run (resources, the restart policy).
    const inPlace = job && alloc.desiredStatus === 'run' && alloc.jobVersion > before.jobVersion && alloc.jobVersion === job.version;
    if (inPlace) this.#record.job = jobWithoutMountFlags(job);
    this.#save();
    if (inPlace) void updateInPlace(job, this.#record.alloc.taskGroup, this.#tasks, this.#logger);
    if (alloc.desiredStatus !== 'run') {
      void this.#stop(`allocation ${alloc.desiredStatus === 'evict' ? 'evicted' : 'stopped'}${alloc.desiredDescription ? `: ${alloc.desiredDescription}` : ''}`);
      return;
    }
    if (!this.#held) return;
    this.#held = false;
    const phase = this.#record.phase;
    if (phase === 'new' || phase === 'prerun') {
      this.#state = 'new';
      void this.run();
      return;
    }
    for (const t of this.#tasks.values()) t.resume();
    const unstarted = [...this.#unstarted].map((name) => this.#tasks.get(name)).filter((t): t is TaskRunner => t !== undefined);
    this.#unstarted.clear();
    if (unstarted.length) this.#logger.info({ tasks: unstarted.map((t) => t.name) }, 'starting tasks the previous agent did not start');
    // Picks up the lifecycle where the previous agent left it: tasks not started yet (restore() already
    // watches them) start when their stage comes, and poststop tasks run once the main tasks end.
    if (phase === 'running') void this.#lifecycle.run(AbortSignal.any([this.#stopAbort.signal, this.#shutdownAbort.signal]));
    this.#maybePostrun();
  }

  /** An event an external driver reported about one of this allocation's tasks ("Driver" event). Never throws. */
  driverEvent(taskName: string, message: string, details: Record<string, string> = {}): void {
    this.#tasks.get(taskName)?.event('Driver', message, details);
  }

  /**
   * Stops everything, runs postrun if it has not run, runs the destroy hooks (the allocation
   * directory is unmounted and removed) and forgets the runner's records; after shutdown(), keeps
   * them all for the next start. Safe to repeat. Throws AllocDirError when something under the
   * allocation directory cannot be unmounted (nothing is removed).
   */
  async destroy(): Promise<void> {
    if (this.#state === 'destroyed') return;
    await this.#stop('allocation destroyed');
    if (this.#state === 'shutdown') return;
    const ctx = this.#ctx(this.#shutdownAbort.signal);
    for (const hook of this.#destroyHooks) await hook.destroy?.(ctx);
    this.#state = 'destroyed';
    this.#cleanedUp();
    this.#bucket.delete(this.id);
    for (const name of this.#tasks.keys()) forgetTaskRunner(this.#o.store, this.id, name);
  }

  /**
   * The agent is stopping: leaves tasks running (and mounts in place), stops
   * watching them and ends waits. Resolves once nothing of the runner is in
   * flight. Safe to repeat.
   */
  async shutdown(): Promise<void> {
    if (this.#state === 'shutdown' || this.#state === 'destroyed') return;
    this.#state = 'shutdown';
    this.#shutdownAbort.abort();
    for (const t of this.#tasks.values()) t.detach();
    await Promise.allSettled([this.#running, this.#postrun]);
  }

  /**
   * The allocation's status now. Its task states are the runners' live ones
   * (TaskRunner.view): read them now, copy what is kept; never write to them.
   */
  status(): AllocRunnerStatus {
    const taskStates: Record<string, TaskState> = {};
    for (const [name, t] of this.#tasks) taskStates[name] = t.view() as TaskState;
    return allocStatus(this.#record, taskStates);
  }

  /**
   * Whether garbage collection may destroy it now: cleanup (postrun) done,
   * every task dead, no CSI volume or bind still recorded as mounted, and
   * the agent not shutting down. Never blocks.
   */
  collectable(): boolean {
    if (this.#state === 'shutdown' || this.#state === 'destroyed' || this.#held) return false;
    if (this.#record.phase !== 'done') return false;
    if (Object.keys(this.#record.csi).length > 0 || this.#record.binds.length > 0) return false;
    return [...this.#tasks.values()].every((t) => t.view().state === 'dead');
  }

  /**
   * Resolves once the allocation's cleanup is done: its tasks exited, its
   * volumes unpublished, unstaged and released (postrun finished), or the
   * runner was destroyed. Never rejects; pending while the agent is down.
   */
  cleanedUp(): Promise<void> {
    return this.#whenCleanedUp;
  }

  /** The CSI mounts this allocation needs while it is live (none once its postrun began). */
  wanted(): WantedMount[] {
    if (this.#record.phase === 'postrun' || this.#record.phase === 'done' || this.#state === 'destroyed') return [];
    if (this.#stopAbort.signal.aborted) return [];
    return this.volumesToUnmount();
  }

  /** Its CSI volumes claimed or mounted and not yet unpublished: their unmount needs the node plugin. Never blocks. */
  volumesToUnmount(): WantedMount[] {
    const held = Object.values(this.#record.csi).filter((r) => r.pluginId && (r.state === 'claimed' || r.state === 'mounted'));
    return held.map((r) => ({ pluginId: r.pluginId as string, volumeId: r.volumeId, allocId: this.id }));
  }

  /**
   * After restore() and VolumeManager.reconcile: mounts the recorded CSI
   * volumes again through mountVolume, which sends nothing for intact steps
   * and redoes uncertain ones. Throws what mountVolume throws.
   */
  async remountVolumes(opts: { signal?: AbortSignal; reclaim?: (volumeId: string) => boolean } = {}): Promise<void> {
    const signals = [this.#stopAbort.signal, this.#shutdownAbort.signal, ...(opts.signal ? [opts.signal] : [])];
    await this.#csiHook.remount(this.#ctx(AbortSignal.any(signals)), opts.reclaim ? { reclaim: opts.reclaim } : {});
  }

  /**
   * A node event of the CSI manager (wire CsiManager's emitNodeEvent here):
   * a health change of a plugin this allocation runs becomes a task event.
   */
  pluginEvent(event: NodeEvent): void {
    if (event.subsystem !== 'csi' || event.details['allocId'] !== this.id) return;
    if (!/ is healthy$| is unhealthy: /.test(event.message)) return;
    for (const [taskName, sup] of this.#supervisors) {
      if (sup.pluginId !== event.details['plugin']) continue;
      const runner = this.#tasks.get(taskName);
      if (runner && runner.view().state === 'running') sup.noteHealth(runner, event.details['healthy'] === 'true', event.details['reason'] ?? '');
    }
  }

  /** A volume of this allocation changed condition: recorded as a task event on every task. Does not block. */
  volumeEvent(type: string, message: string, details: Record<string, string>): void {
    this.#event(type, message, details);
  }

  /**
   * The CSI manager's onHealthTimeout, for a plugin this allocation runs
   * (wire `onHealthTimeout: (p, type, reason) => runnerOf(p.allocId)?.pluginHealthTimeout(p, type, reason)`):
   * restarts the plugin's task. Returns whether a task of this allocation
   * runs the plugin. Does not block.
   */
  pluginHealthTimeout(plugin: { name: string }, _type: CsiPluginType, reason: string): boolean {
    let found = false;
    for (const [taskName, sup] of this.#supervisors) {
      if (sup.pluginId !== plugin.name) continue;
      found = true;
      void this.#tasks.get(taskName)?.restart(`CSI plugin "${plugin.name}" stayed unhealthy past its health timeout: ${reason}`);
    }
    return found;
  }

  /** Restarts one running task (check_restart). Does nothing for a task that does not run. */
  async restartTask(taskName: string, reason: string): Promise<void> {
    const task = this.#tasks.get(taskName);
    if (task && task.view().state === 'running') await task.restart(reason);
  }

  /** Host paths of the plugin sockets this allocation's plugin tasks serve on, by task name. */
  pluginSockets(): Record<string, string> {
    return Object.fromEntries([...this.#supervisors].map(([name, s]) => [name, s.socketPath]));
  }

  /** The driver task ID of each task's current run (for exec, stats and logs); absent when it does not run. */
  taskIds(): Record<string, string | undefined> {
    return Object.fromEntries([...this.#tasks].map(([name, t]) => [name, t.taskId]));
  }

  /** A task's runner (operator restarts and signals), undefined for an unknown name. */
  task(name: string): TaskRunner | undefined {
    return this.#tasks.get(name);
  }

  /** The allocation directory (for logs and tests). */
  get allocDir(): AllocDir {
    return this.#allocDir;
  }

  // ---- internals ---------------------------------------------------------------

  #stop(reason: string): Promise<void> {
    this.#stopping ??= (async () => {
      this.#held = false;
      this.#stopAbort.abort();
      await this.#running?.catch(() => undefined);
      await this.#lifecycle.kill(reason, { poststop: false });
      // Poststop tasks run once the others stopped, if the allocation got as far as running its tasks.
      if (this.#lifecycle.hasPoststop && this.#state !== 'shutdown') {
        if (this.#record.phase === 'running' && !this.#record.failure && !this.#record.maxRunExceeded) await this.#lifecycle.poststop();
        await this.#lifecycle.kill(reason, { poststop: true });
      }
      if (this.#state !== 'shutdown') await this.#runPostrun();
    })();
    return this.#stopping;
  }

  #watchTasks(): void {
    armMaxRunDuration(maxRunDeadline(this.#record.alloc, this.#group), this.#clock, AbortSignal.any([this.#stopAbort.signal, this.#shutdownAbort.signal]), () => {
      if (this.#record.phase !== 'running' || [...this.#tasks.values()].every((t) => t.view().state === 'dead')) return;
      this.#record.maxRunExceeded = true;
      this.#save();
      this.#logger.info({ maxRunDuration: this.#group.maxRunDuration }, MAX_RUN_EXCEEDED);
      void this.#stop(MAX_RUN_EXCEEDED);
    });
    for (const t of this.#tasks.values()) {
      void t.done.then(() => {
        const st = t.state();
        if (st.state === 'dead' && st.failed && !this.#stopAbort.signal.aborted && this.#state === 'running') {
          // A failed task fails the allocation: its siblings are stopped.
          for (const other of this.#tasks.values()) {
            // Poststop tasks still run after the others stopped (TaskLifecycle).
            if (other !== t && !this.#lifecycle.isPoststop(other.name)) void other.kill(`sibling task "${t.name}" failed`);
          }
        }
        this.#maybePostrun();
      });
    }
  }

  #maybePostrun(): void {
    if (this.#held || this.#state !== 'running' || this.#record.phase === 'done') return;
    if (![...this.#tasks.values()].every((t) => t.view().state === 'dead')) return;
    void this.#runPostrun();
  }

  #runPostrun(): Promise<void> {
    this.#postrun ??= (async () => {
      if (this.#record.phase === 'done') return;
      this.#record.phase = 'postrun';
      this.#save();
      const ctx = this.#ctx(this.#shutdownAbort.signal);
      for (const hook of this.#postrunHooks) {
        if (!hook.postrun) continue;
        try {
          await hook.postrun(ctx);
        } catch (err) {
          if (this.#shutdownAbort.signal.aborted) return;
          this.#logger.error({ hook: hook.name, err: describeError(err) }, 'postrun hook failed');
          this.#event(TASK_EVENTS.setupFailure, `Allocation cleanup step ${hook.name} failed: ${describeError(err)}`);
        }
      }
      this.#record.phase = 'done';
      this.#save();
      this.#cleanedUp();
      this.#pushStatus();
    })();
    return this.#postrun;
  }

  #ctx(signal: AbortSignal): AllocHookContext {
    return {
      alloc: this.#record.alloc,
      job: this.#o.job,
      group: this.#group,
      signal,
      logger: this.#logger,
      record: this.#record,
      save: () => this.#save(),
      event: (type, message, details) => this.#event(type, message, details),
      volumes: this.#volumes,
    };
  }

  #event(type: string, message: string, details: Record<string, string> = {}): void {
    for (const t of this.#tasks.values()) t.event(type, message, details);
  }

  #save(): void {
    if (this.#state === 'destroyed') return;
    this.#bucket.put(this.id, this.#record);
  }

  /** #save() through Bucket.putSoon: written with the next write that must land, or at the end of this turn. */
  #saveSoon(): void {
    if (this.#state === 'destroyed') return;
    this.#bucket.putSoon(this.id, this.#record);
  }

  #taskChanged(): void {
    this.#pushStatus();
  }

  #pushStatus(): void {
    const json = JSON.stringify(this.status());
    if (json === this.#lastStatus) return;
    this.#lastStatus = json;
    try {
      // A copy (of the live task states) only when it changed.
      this.#o.onStatus({ allocId: this.id, ...(JSON.parse(json) as AllocRunnerStatus) });
    } catch (err) {
      this.#logger.error({ err: describeError(err) }, 'onStatus failed');
    }
  }
}
