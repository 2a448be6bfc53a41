// Berth's `docker` task driver: each task a container of dockerd's, made
// through the Engine API (dockerode) on the agent's endpoint. Containers
// outlive the agent as executors do; a task's handle is its container id,
// which recoverTask finds again after an agent restart. Group networks
// (bridge, none, cni/*) are made here, as Nomad's docker driver makes them:
// a pause container from `infra_image` holds the namespace, Berth's network
// manager attaches it, and the tasks join it (`container:<pause id>`).

import { createHash } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { AbortedError, silentLogger, systemClock, type Clock, type Logger } from '../../../lib/index.js';
import { defaultDockerPluginConfig, DOCKER_PLUGIN_CONFIG_SCHEMA, DOCKER_TASK_CONFIG_SCHEMA, type DockerPluginConfig, type DriverInfo } from '../../../structs/index.js';
import { DriverError } from '../driver-error.js';
import type {
  AnyTaskHandle,
  DriverCapabilities,
  ExecOptions,
  ExitResult,
  ForeignTaskHandle,
  StartTaskOptions,
  TaskConfig,
  TaskDriver,
  TaskLogConfig,
  TaskResourceUsage,
  TaskResources,
  TaskStatus,
} from '../task-driver.js';
import { containerSpec, LABEL } from './_container-spec.js';
import { ensureImage, ImageCollector, imageReference } from './_images.js';
import { ensurePauseContainer, INFRA_LABEL, pauseContainerId, removePauseContainer } from './_pause-network.js';
import { LogCollector } from './_log-collector.js';
import { dockerMessage, engineGet } from './_engine.js';
import { containerStats, execInContainer, type CpuMark } from './_task-io.js';

/** What the task runner persists for a docker task: its container. */
export interface DockerTaskHandle extends ForeignTaskHandle {
  version: 2;
  driver: 'docker';
  taskId: string;
  allocId: string;
  taskName: string;
  containerId: string;
  imageId: string;
  logs: TaskLogConfig;
  startedAt: number;
}

export interface DockerDriverOptions {
  /** The agent's `plugin "docker" { config {} }` as written (checked here; throws its problems). */
  pluginConfig?: Record<string, unknown>;
  /** `file:line:col` of a path in the agent's config (`config.volumes.enabled`), to place the plugin config's problems. */
  locate?: (configPath: string) => string | undefined;
  /** Where log positions are kept across agent restarts; also names this agent's containers (io.berth.driver). */
  stateDir: string;
  logger?: Logger;
  clock?: Clock;
}

interface TaskRecord {
  handle: DockerTaskHandle;
  exit?: ExitResult & { finishedAt: number };
  exited: Promise<ExitResult>;
  collector: LogCollector;
  /** Resolves once the container's log was followed to its end (or could not be followed). */
  logsDone: Promise<unknown>;
  lastCpu?: CpuMark;
}

const DOCKER_GONE_RETRY_MS = 1_000;

/** The Engine API endpoint: the config's, else DOCKER_HOST, else docker's default socket. */
export function dockerEndpoint(config: DockerPluginConfig): string {
  return config.endpoint ?? (process.env['DOCKER_HOST']?.startsWith('unix://') ? process.env['DOCKER_HOST'] : 'unix:///var/run/docker.sock');
}

/**
 * The docker driver. Every call on an unknown task id throws DriverError
 * DRIVER_TASK_NOT_FOUND (but destroyTask); after shutdown() calls throw
 * DRIVER_SHUT_DOWN. Construction throws DriverError DRIVER_START_FAILED
 * when the plugin config is wrong (naming the field).
 */
export class DockerDriver implements TaskDriver {
  readonly name = 'docker';
  readonly takesDriverConfig = true;
  readonly capabilities: DriverCapabilities = {
    sendSignals: true,
    exec: true,
    fsIsolation: 'image',
    networkModes: ['host', 'none', 'bridge', 'cni/*'],
    mustInitiateNetwork: true,
    mountConfigs: 'any',
  };
  readonly config: DockerPluginConfig;
  readonly endpoint: string;
  readonly #socketPath: string;
  #docker: Promise<Dockerode> | undefined;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #stateDir: string;
  readonly #owner: string;
  readonly #tasks = new Map<string, TaskRecord>();
  readonly #images: ImageCollector;
  readonly #stopping = new AbortController();
  #cgroups: 'v1' | 'v2' | 'none' = 'none';

  constructor(opts: DockerDriverOptions) {
    // No config to check (no `plugin "docker"` block): its defaults, without building the schema.
    const parsed = opts.pluginConfig === undefined ? { success: true as const, data: defaultDockerPluginConfig() } : DOCKER_PLUGIN_CONFIG_SCHEMA.safeParse(opts.pluginConfig);
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => {
        const at = ['config', ...i.path.map(String)].join('.');
        const where = opts.locate?.(at);
        return `${where ? `${where}: ` : ''}${at}: ${i.message}`;
      });
      throw new DriverError('DRIVER_START_FAILED', `plugin "docker": ${problems.join('; ')}`, { recoverable: false });
    }
    this.config = parsed.data;
    this.endpoint = dockerEndpoint(this.config);
    this.#socketPath = this.endpoint.slice('unix://'.length);
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'driver', driver: 'docker' });
    this.#clock = opts.clock ?? systemClock;
    this.#stateDir = opts.stateDir;
    this.#owner = createHash('sha256').update(opts.stateDir).digest('hex').slice(0, 12);
    this.#images = new ImageCollector({ docker: () => this.#api(), clock: this.#clock, logger: this.#log, enabled: this.config.gc.image, delayMs: this.config.gc.imageDelayMs });
  }

  /** The Engine API client, loaded on first use (dockerode takes a few hundred ms to load). */
  #api(): Promise<Dockerode> {
    this.#docker ??= import('dockerode').then((m) => new m.default({ socketPath: this.#socketPath }));
    return this.#docker;
  }

  get cgroups(): 'v1' | 'v2' | 'none' {
    return this.#cgroups;
  }

  /** Healthy when dockerd answers on the endpoint; otherwise unhealthy, saying why. Never throws. */
  async fingerprint(): Promise<DriverInfo> {
    const base = { detected: true, networkModes: [...this.capabilities.networkModes], mustInitiateNetwork: true };
    try {
      // Plain HTTP, not dockerode: an agent whose tasks never use docker does not load the client library.
      const [version, info] = await Promise.all([
        engineGet<{ Version: string }>(this.#socketPath, '/version'),
        engineGet<{ CgroupVersion?: string; Runtimes?: Record<string, unknown> }>(this.#socketPath, '/info'),
      ]);
      this.#cgroups = info.CgroupVersion === '2' ? 'v2' : 'v1';
      return {
        ...base,
        healthy: true,
        healthReason: 'Healthy',
        cgroups: this.#cgroups,
        attributes: {
          'driver.docker': 'true',
          'driver.docker.version': version.Version,
          'driver.docker.runtimes': Object.keys(info.Runtimes ?? {}).join(','),
          // Set only when true, as Nomad does: constraints and placement test for "true".
          ...(this.config.allowPrivileged ? { 'driver.docker.privileged.enabled': 'true' } : {}),
          ...(this.config.volumesEnabled ? { 'driver.docker.volumes.enabled': 'true' } : {}),
        },
      };
    } catch (err) {
      return { ...base, healthy: false, healthReason: `Failed to connect to docker daemon at ${this.endpoint}: ${(err as Error).message}` };
    }
  }

  async startTask(cfg: TaskConfig, opts: StartTaskOptions = {}): Promise<DockerTaskHandle> {
    this.#alive();
    if (opts.signal?.aborted) throw new AbortedError('task start aborted', { cause: opts.signal.reason });
    if (this.#tasks.has(cfg.id)) throw new DriverError('DRIVER_TASK_EXISTS', `task ${cfg.id} is already started`);
    const parsed = DOCKER_TASK_CONFIG_SCHEMA.safeParse(cfg.driverConfig ?? {});
    if (!parsed.success) {
      const problems = parsed.error.issues.map((i) => `config.${i.path.map(String).join('.')}: ${i.message}`).join('; ');
      throw new DriverError('DRIVER_START_FAILED', `task ${cfg.taskName}: ${problems}`, { recoverable: false });
    }
    const config = parsed.data;
    const event = (message: string): void => opts.onEvent?.({ type: 'Driver', message, details: { image: imageReference(config.image) } });
    const imageId = await this.#call(`task ${cfg.taskName}`, async () =>
      ensureImage(await this.#api(), config.image, this.#clock, {
        ...(config.auth ? { auth: config.auth } : {}),
        forcePull: config.force_pull ?? false,
        activityTimeoutMs: this.config.pullActivityTimeoutMs,
        onProgress: event,
        ...(opts.signal ? { signal: opts.signal } : {}),
      }),
    );
    const pause = !config.network_mode && cfg.networkNamespacePath ? await pauseContainerId(await this.#api(), cfg.allocId) : undefined;
    const spec = containerSpec({ cfg, config, plugin: this.config, owner: this.#owner, ...(pause ? { pauseContainerId: pause } : {}) });
    const container = await this.#create(cfg, spec);
    const handle: DockerTaskHandle = {
      version: 2,
      driver: 'docker',
      taskId: cfg.id,
      allocId: cfg.allocId,
      taskName: cfg.taskName,
      containerId: container,
      imageId,
      logs: cfg.logs,
      startedAt: this.#clock.now(),
    };
    // Persisted before the container runs: an agent killed now finds it by this handle.
    opts.onSpawned?.(handle);
    this.#images.acquire(imageId, cfg.id);
    try {
      if (opts.signal?.aborted) throw new AbortedError('task start aborted', { cause: opts.signal.reason });
      await (await this.#api()).getContainer(container).start();
    } catch (err) {
      await (await this.#api()).getContainer(container).remove({ force: true, v: true }).catch(() => undefined);
      this.#images.release(imageId, cfg.id);
      if (err instanceof AbortedError) throw err;
      const msg = dockerMessage(err);
      throw new DriverError('DRIVER_START_FAILED', `task ${cfg.taskName}: docker could not start the container: ${msg}`, { cause: err, recoverable: !/not found|no such file|permission denied|executable/i.test(msg) });
    }
    await this.#adopt(handle);
    return handle;
  }

  /** Creates the container; one left by an earlier start of the same task (an agent killed mid-start) is removed first. */
  async #create(cfg: TaskConfig, spec: ReturnType<typeof containerSpec>): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        return (await (await this.#api()).createContainer(spec)).id;
      } catch (err) {
        if ((err as { statusCode?: number }).statusCode === 409 && attempt === 0) {
          this.#log.info({ task: cfg.taskName, container: spec.name }, 'removing a container left by an earlier start');
          await (await this.#api()).getContainer(spec.name ?? '').remove({ force: true, v: true }).catch(() => undefined);
          continue;
        }
        const msg = dockerMessage(err);
        throw new DriverError('DRIVER_START_FAILED', `task ${cfg.taskName}: docker could not create the container: ${msg}`, { cause: err, recoverable: (err as { statusCode?: number }).statusCode !== 400 });
      }
    }
  }

  /** Tracks a started container: its exit (waited on) and its log (followed). */
  async #adopt(handle: DockerTaskHandle): Promise<void> {
    mkdirSync(this.#stateDir, { recursive: true });
    const collector = new LogCollector({
      docker: await this.#api(),
      containerId: handle.containerId,
      taskName: handle.taskName,
      logs: handle.logs,
      positionFile: this.#positionFile(handle.taskId),
      logger: this.#log,
    });
    // The exit is reported once the log is written to its end: a task that printed and exited at once must not look silent.
    const started = collector.start();
    const logsDone = started.then(
      () => collector.done,
      (err: unknown) => this.#log.warn({ task: handle.taskName, err: dockerMessage(err) }, 'cannot follow the container log (its log driver cannot be read back?)'),
    );
    const rec: TaskRecord = { handle, collector, logsDone, exited: Promise.resolve({ exitCode: 0, signal: null, oomKilled: false, message: '' }) };
    rec.exited = this.#waitExit(rec);
    this.#tasks.set(handle.taskId, rec);
    await started.catch(() => undefined);
  }

  #positionFile(taskId: string): string {
    return path.join(this.#stateDir, `${createHash('sha256').update(taskId).digest('hex').slice(0, 16)}.logpos`);
  }

  // Waits for the container to stop, through dockerd restarts; a container removed behind the driver's back ends the task.
  async #waitExit(rec: TaskRecord): Promise<ExitResult> {
    const c = (await this.#api()).getContainer(rec.handle.containerId);
    for (;;) {
      try {
        await c.wait({ condition: 'not-running', abortSignal: this.#stopping.signal } as object);
        const s = (await c.inspect()).State;
        if (s.Running) continue;
        const exit = { exitCode: s.ExitCode, signal: null, oomKilled: s.OOMKilled, message: s.OOMKilled ? 'OOM killed' : `exited with code ${s.ExitCode}${s.Error ? `: ${s.Error}` : ''}` };
        rec.exit = { ...exit, finishedAt: Date.parse(s.FinishedAt) || this.#clock.now() };
        await rec.logsDone;
        return exit;
      } catch (err) {
        if (this.#stopping.signal.aborted) return new Promise<ExitResult>(() => undefined);
        if ((err as { statusCode?: number }).statusCode === 404) {
          const exit = { exitCode: -1, signal: 'SIGKILL', oomKilled: false, message: 'the container was removed outside the agent' };
          rec.exit = { ...exit, finishedAt: this.#clock.now() };
          rec.collector.stop();
          return exit;
        }
        await this.#clock.sleep(DOCKER_GONE_RETRY_MS, this.#stopping.signal).catch(() => undefined);
      }
    }
  }

  async recoverTask(handle: AnyTaskHandle): Promise<DockerTaskHandle> {
    this.#alive();
    const h = handle as DockerTaskHandle;
    if (h.driver !== 'docker' || typeof h.containerId !== 'string') throw new DriverError('DRIVER_TASK_NOT_RECOVERABLE', `task ${handle.taskId}: not a docker handle`);
    if (this.#tasks.has(h.taskId)) return h;
    let state;
    try {
      state = (await (await this.#api()).getContainer(h.containerId).inspect()).State;
    } catch (err) {
      const gone = (err as { statusCode?: number }).statusCode === 404;
      throw new DriverError('DRIVER_TASK_NOT_RECOVERABLE', `task ${h.taskName}: ${gone ? `its container ${h.containerId.slice(0, 12)} is gone` : `docker cannot be asked: ${dockerMessage(err)}`}`, { cause: err });
    }
    // Created but never started: the agent died between create and start.
    if (state.Status === 'created') await (await this.#api()).getContainer(h.containerId).start();
    this.#images.acquire(h.imageId, h.taskId);
    await this.#adopt(h);
    return h;
  }

  waitTask(taskId: string, opts: { signal?: AbortSignal } = {}): Promise<ExitResult> {
    const rec = this.#task(taskId);
    if (!opts.signal) return rec.exited;
    const signal = opts.signal;
    return new Promise((resolve, reject) => {
      const onAbort = (): void => reject(new AbortedError('wait aborted', { cause: signal.reason }));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      void rec.exited.then((e) => {
        signal.removeEventListener('abort', onAbort);
        resolve(e);
      });
    });
  }

  async stopTask(taskId: string, opts: { timeoutMs: number; signal?: string }): Promise<void> {
    const rec = this.#task(taskId);
    if (rec.exit) return;
    const c = (await this.#api()).getContainer(rec.handle.containerId);
    try {
      if (!opts.signal || opts.signal === 'SIGTERM') {
        // docker's stop: the image's StopSignal (SIGTERM by default), SIGKILL after t seconds.
        await c.stop({ t: Math.max(0, Math.ceil(opts.timeoutMs / 1000)) });
      } else {
        await c.kill({ signal: opts.signal });
        const timedOut = await Promise.race([rec.exited.then(() => false), this.#clock.sleep(opts.timeoutMs).then(() => true)]);
        if (timedOut) await c.kill({ signal: 'SIGKILL' });
      }
    } catch (err) {
      const code = (err as { statusCode?: number }).statusCode;
      // 304: already stopped; 404: already gone; 409: not running.
      if (code !== 304 && code !== 404 && code !== 409) throw new DriverError('DRIVER_EXECUTOR_FAILED', `task ${rec.handle.taskName}: docker could not stop the container: ${dockerMessage(err)}`, { cause: err });
    }
    await rec.exited;
  }

  async destroyTask(taskId: string, opts: { force?: boolean } = {}): Promise<void> {
    const rec = this.#tasks.get(taskId);
    if (!rec) return;
    if (!rec.exit && !opts.force) throw new DriverError('DRIVER_TASK_RUNNING', `task ${rec.handle.taskName} is still running`);
    const c = (await this.#api()).getContainer(rec.handle.containerId);
    if (!rec.exit) await c.kill({ signal: 'SIGKILL' }).catch(() => undefined);
    rec.collector.stop();
    if (this.config.gc.container) {
      try {
        await c.remove({ force: true, v: true });
      } catch (err) {
        if ((err as { statusCode?: number }).statusCode !== 404) throw new DriverError('DRIVER_EXECUTOR_FAILED', `task ${rec.handle.taskName}: docker could not remove the container: ${dockerMessage(err)}`, { cause: err });
      }
    }
    rmSync(this.#positionFile(taskId), { force: true });
    this.#images.release(rec.handle.imageId, taskId);
    this.#tasks.delete(taskId);
  }

  inspectTask(taskId: string): TaskStatus {
    const rec = this.#task(taskId);
    return {
      id: taskId,
      taskName: rec.handle.taskName,
      state: rec.exit ? 'exited' : 'running',
      startedAt: rec.handle.startedAt,
      ...(rec.exit ? { completedAt: rec.exit.finishedAt, exitResult: rec.exit } : {}),
      pid: 0,
    };
  }

  async signalTask(taskId: string, signal: string): Promise<void> {
    const rec = this.#task(taskId);
    if (!(signal in osConstants.signals)) throw new DriverError('DRIVER_INVALID_SIGNAL', `unknown signal ${signal}`);
    if (rec.exit) throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${rec.handle.taskName} is not running`);
    await this.#call(`task ${rec.handle.taskName}`, async () => (await this.#api()).getContainer(rec.handle.containerId).kill({ signal }));
  }

  async taskStats(taskId: string): Promise<TaskResourceUsage> {
    const rec = this.#task(taskId);
    const { usage, mark } = await this.#call(`task ${rec.handle.taskName}`, async () => containerStats(await this.#api(), rec.handle.containerId, this.#clock.now(), rec.lastCpu));
    rec.lastCpu = mark;
    return usage;
  }

  async updateTaskResources(taskId: string, resources: TaskResources): Promise<boolean> {
    const rec = this.#task(taskId);
    const memory = (resources.memoryMaxMb && resources.memoryMaxMb > resources.memoryMb ? resources.memoryMaxMb : resources.memoryMb) * 1024 * 1024;
    try {
      await (await this.#api()).getContainer(rec.handle.containerId).update({ Memory: memory, MemorySwap: memory, CpuShares: Math.max(2, Math.round(resources.cpuMhz)) });
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Removes the containers this agent's driver made (its owner label) whose
   * task is not in `keep` (`<allocId>.<task>`) and not tracked, and pause
   * containers of allocations none of `keep` belongs to. Never throws.
   */
  async reapOrphans(keep: ReadonlySet<string>): Promise<string[]> {
    const removed: string[] = [];
    try {
      const list = await (await this.#api()).listContainers({ all: true, filters: { label: [`${LABEL.owner}=${this.#owner}`] } });
      const tracked = new Set([...this.#tasks.values()].map((r) => r.handle.containerId));
      const keptAllocs = new Set([...keep].map((k) => k.slice(0, k.indexOf('.'))));
      for (const c of list) {
        const alloc = c.Labels[LABEL.allocId] ?? '';
        const name = c.Labels[INFRA_LABEL] ? `${alloc}.<network>` : `${alloc}.${c.Labels[LABEL.taskName] ?? ''}`;
        const orphan = c.Labels[INFRA_LABEL] ? !keptAllocs.has(alloc) : !keep.has(name) && !tracked.has(c.Id);
        if (!orphan) continue;
        await (await this.#api()).getContainer(c.Id).remove({ force: true, v: true }).catch(() => undefined);
        this.#log.info({ container: c.Id.slice(0, 12), task: name }, 'removed a container no task owns');
        removed.push(name);
      }
    } catch (err) {
      this.#log.warn({ err: dockerMessage(err) }, 'could not list containers to reap');
    }
    return removed;
  }

  async execTaskStreaming(taskId: string, opts: ExecOptions): Promise<{ exitCode: number }> {
    const rec = this.#task(taskId);
    if (rec.exit) throw new DriverError('DRIVER_TASK_NOT_RUNNING', `task ${rec.handle.taskName} is not running`);
    return execInContainer(await this.#api(), rec.handle.containerId, opts).catch((err: unknown) => {
      if (err instanceof AbortedError) throw err;
      throw new DriverError('DRIVER_EXECUTOR_FAILED', `task ${rec.handle.taskName}: docker exec failed: ${dockerMessage(err)}`, { cause: err });
    });
  }

  /**
   * Nomad's CreateNetwork: a pause container (`infra_image`, network mode
   * none, the allocation's hostname) whose namespace (its SandboxKey) the
   * agent then attaches. The one made before is reused.
   */
  async createNetwork(allocId: string, hostname: string): Promise<{ path: string }> {
    this.#alive();
    const o = { allocId, hostname, infraImage: this.config.infraImage, owner: this.#owner, clock: this.#clock, pullActivityTimeoutMs: this.config.pullActivityTimeoutMs };
    return { path: await this.#call(`allocation ${allocId.slice(0, 8)} network`, async () => ensurePauseContainer(await this.#api(), o)) };
  }

  /** Removes the allocation's pause container. Safe to repeat. */
  async destroyNetwork(allocId: string): Promise<void> {
    this.#alive();
    await removePauseContainer(await this.#api(), allocId);
  }

  /** Stops following logs and exits (containers keep running). Safe twice. */
  async shutdown(): Promise<void> {
    if (this.#stopping.signal.aborted) return;
    this.#stopping.abort();
    this.#images.stop();
    for (const rec of this.#tasks.values()) rec.collector.stop();
    this.#tasks.clear();
  }

  #alive(): void {
    if (this.#stopping.signal.aborted) throw new DriverError('DRIVER_SHUT_DOWN', 'the docker driver was shut down');
  }

  #task(taskId: string): TaskRecord {
    this.#alive();
    const rec = this.#tasks.get(taskId);
    if (!rec) throw new DriverError('DRIVER_TASK_NOT_FOUND', `no docker task ${taskId}`);
    return rec;
  }

  /** Runs a docker call, turning what is not already a Berth error into DRIVER_EXECUTOR_FAILED naming `what`. */
  async #call<T>(what: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      if (err instanceof DriverError || err instanceof AbortedError) throw err;
      throw new DriverError('DRIVER_EXECUTOR_FAILED', `${what}: docker: ${dockerMessage(err)}`, { cause: err });
    }
  }
}
