// A small DriverPlugin for the driver plugin tests: tasks are records, not
// processes, and what the host sent comes back in InspectTask's driver
// attributes, so a test sees through the wire what arrived at the plugin.
// Served with serveDriverPlugin by a fixture executable (see plugin-fixtures.ts):
//   import { FakeDriver } from '@berth/../test/support/fake-driver-plugin.ts';

import {
  decodeMsgpack,
  DriverPluginError,
  DRIVER_API_VERSION,
  encodeMsgpack,
  hclspec,
  type Capabilities,
  type CallOptions,
  type CreateNetworkResult,
  type DriverPlugin,
  type ExecOptions,
  type ExecTaskResult,
  type ExitResult,
  type Fingerprint,
  type NetworkCreateRequest,
  type NetworkIsolationSpec,
  type PluginConfig,
  type PluginInfo,
  type Spec,
  type StartTaskResult,
  type StreamOptions,
  type TaskConfig,
  type TaskEvent,
  type TaskHandle,
  type TaskResourceUsage,
  type TaskStatus,
} from '../../src/plugins/index.js';

interface FakeTask {
  config: TaskConfig;
  startedAt: Date;
  exit?: ExitResult;
  exited: Promise<ExitResult>;
  finish: (e: ExitResult) => void;
  attrs: Record<string, string>;
}

const never = (signal?: AbortSignal): Promise<never> =>
  new Promise((_, reject) => signal?.addEventListener('abort', () => reject(new Error('cancelled')), { once: true }));

const untilAborted = (signal?: AbortSignal): Promise<void> => never(signal).catch(() => undefined);

export class FakeDriver implements DriverPlugin {
  readonly tasks = new Map<string, FakeTask>();
  readonly #events: ((e: TaskEvent) => void)[] = [];
  #config: unknown = null;

  async pluginInfo(): Promise<PluginInfo> {
    return { type: 'driver', pluginApiVersions: [DRIVER_API_VERSION], pluginVersion: '0.0.1', name: 'fake' };
  }
  async configSchema(): Promise<Spec> {
    return hclspec.object({
      enabled: hclspec.attr('enabled', 'bool'),
      no_cgroups: hclspec.withDefault(hclspec.attr('no_cgroups', 'bool'), hclspec.literal('false')),
    });
  }
  async setConfig(c: PluginConfig): Promise<void> {
    this.#config = { apiVersion: c.apiVersion, hex: Buffer.from(c.pluginConfig).toString('hex'), decoded: decodeMsgpack(c.pluginConfig), agent: c.agentConfig ?? null };
  }
  async taskConfigSchema(): Promise<Spec> {
    return hclspec.object({ command: hclspec.attr('command', 'string', true), args: hclspec.attr('args', 'list(string)') });
  }
  async capabilities(): Promise<Capabilities> {
    return {
      sendSignals: true,
      exec: true,
      fsIsolation: 'chroot',
      netIsolationModes: ['host', 'group', 'task'],
      mustInitiateNetwork: true,
      mountConfigs: 'all',
      disableLogCollection: false,
      dynamicWorkloadUsers: true,
    };
  }
  async *fingerprint(opts?: StreamOptions): AsyncIterable<Fingerprint> {
    yield {
      health: 'healthy',
      healthDescription: 'Healthy',
      attributes: {
        'driver.fake': { bool: true },
        'driver.fake.config': { string: JSON.stringify(this.#config) },
        'driver.fake.cores': { int: 4 },
        'driver.fake.load': { float: 0.5, unit: 'ratio' },
      },
    };
    await untilAborted(opts?.signal);
  }

  #task(id: string): FakeTask {
    const t = this.tasks.get(id);
    if (!t) throw new DriverPluginError('DRIVER_PLUGIN_TASK_NOT_FOUND', `task not found for given id ${id}`);
    return t;
  }

  #add(config: TaskConfig, attrs: Record<string, string>): FakeTask {
    let finish!: (e: ExitResult) => void;
    const exited = new Promise<ExitResult>((r) => (finish = r));
    const t: FakeTask = { config, startedAt: new Date(), exited, finish: (e) => ((t.exit = e), finish(e)), attrs };
    this.tasks.set(config.id, t);
    return t;
  }

  async recoverTask(handle: TaskHandle): Promise<void> {
    if (this.tasks.has(handle.config.id)) return;
    const state = decodeMsgpack(handle.driverState) as Record<string, unknown>;
    this.#add(handle.config, { recovered: 'true', recoveredState: JSON.stringify(state) });
  }

  async startTask(config: TaskConfig, opts?: CallOptions): Promise<StartTaskResult> {
    if (config.name === 'fail-recoverable') throw new DriverPluginError('DRIVER_PLUGIN_FAILED', 'image pull timed out', { recoverable: true });
    if (config.name === 'fail-fatal') throw new DriverPluginError('DRIVER_PLUGIN_FAILED', 'no such image', { recoverable: false });
    if (config.name === 'hang') await never(opts?.signal);
    const driverConfig = decodeMsgpack(config.msgpackDriverConfig);
    const t = this.#add(config, {
      driverConfig: JSON.stringify(driverConfig),
      env: JSON.stringify(config.env),
      mounts: JSON.stringify(config.mounts),
      user: config.user,
      logs: `${config.stdoutPath} ${config.stderrPath}`,
      resources: JSON.stringify(config.resources ?? null),
      network: JSON.stringify(config.networkIsolation ?? null),
    });
    for (const push of this.#events) push({ taskId: config.id, taskName: config.name, allocId: config.allocId, timestamp: t.startedAt, message: 'Started by the fake driver', annotations: { fake: 'yes' } });
    return {
      handle: { version: 1, config, state: 'running', driverState: encodeMsgpack({ pid: 4242, command: (driverConfig as { command?: string })?.command ?? null }) },
      network: { portMap: { http: 8080 }, ip: '10.0.0.2', autoAdvertise: true },
    };
  }

  async waitTask(taskId: string, opts?: CallOptions): Promise<ExitResult> {
    return Promise.race([this.#task(taskId).exited, never(opts?.signal)]);
  }
  async stopTask(taskId: string, timeoutMs: number, signal: string): Promise<void> {
    const t = this.#task(taskId);
    t.attrs.stopTimeoutMs = String(timeoutMs);
    t.attrs.stopSignal = signal;
    t.finish({ exitCode: 0, signal: 15, oomKilled: false });
  }
  async destroyTask(taskId: string, force: boolean): Promise<void> {
    const t = this.#task(taskId);
    if (!t.exit && !force) throw new DriverPluginError('DRIVER_PLUGIN_FAILED', 'task is still running');
    t.finish({ exitCode: 137, signal: 9, oomKilled: false });
    this.tasks.delete(taskId);
  }
  async inspectTask(taskId: string): Promise<TaskStatus> {
    const t = this.#task(taskId);
    return {
      id: taskId,
      name: t.config.name,
      state: t.exit ? 'exited' : 'running',
      startedAt: t.startedAt,
      ...(t.exit ? { completedAt: new Date(), exitResult: t.exit } : {}),
      driverAttributes: { ...t.attrs },
      networkOverride: { portMap: { http: 8080 }, ip: '10.0.0.2', autoAdvertise: true },
    };
  }
  async *taskStats(taskId: string, intervalMs: number, opts?: StreamOptions): AsyncIterable<TaskResourceUsage> {
    this.#task(taskId);
    for (let i = 1; !opts?.signal?.aborted; i++) {
      yield {
        taskId,
        timestamp: new Date(),
        resourceUsage: {
          cpu: { systemMode: 1, userMode: 2, totalTicks: 3, throttledPeriods: 0, throttledTime: 0, percent: 12.5, measured: ['percent', 'total_ticks'] },
          memory: { rss: 1024 * i, cache: 0, swap: 0, usage: 2048, maxUsage: 4096, kernelUsage: 0, kernelMaxUsage: 0, measured: ['rss', 'usage'] },
        },
        pids: { '4242': { memory: { rss: 1024, cache: 0, swap: 0, usage: 0, maxUsage: 0, kernelUsage: 0, kernelMaxUsage: 0, measured: ['rss'] } } },
      };
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
  async *taskEvents(opts?: StreamOptions): AsyncIterable<TaskEvent> {
    const queue: TaskEvent[] = [];
    let wake: (() => void) | undefined;
    const push = (e: TaskEvent): void => {
      queue.push(e);
      wake?.();
    };
    this.#events.push(push);
    opts?.signal?.addEventListener('abort', () => wake?.(), { once: true });
    try {
      while (!opts?.signal?.aborted) {
        const e = queue.shift();
        if (e) yield e;
        else await new Promise<void>((r) => (wake = r));
      }
    } finally {
      this.#events.splice(this.#events.indexOf(push), 1);
    }
  }
  async signalTask(taskId: string, signal: string): Promise<void> {
    this.#task(taskId).attrs.lastSignal = signal;
  }
  async execTask(taskId: string, command: readonly string[], timeoutMs: number): Promise<ExecTaskResult> {
    this.#task(taskId);
    return { stdout: Buffer.from(`ran ${command.join(' ')} within ${timeoutMs}`), stderr: Buffer.from('warn'), exitResult: { exitCode: 3, signal: 0, oomKilled: false } };
  }
  /** Echoes stdin upper-cased on stdout, reports terminal sizes on stderr, exits 7 when stdin ends; `hang` never ends. */
  async execTaskStreaming(taskId: string, exec: ExecOptions, opts?: CallOptions): Promise<ExitResult> {
    this.#task(taskId);
    exec.stdout(Buffer.from(`ready ${exec.command.join(' ')} tty=${exec.tty}\n`));
    if (exec.command[0] === 'hang') await never(opts?.signal);
    const sizes = (async () => {
      for await (const s of exec.resize ?? []) exec.stderr(Buffer.from(`size ${s.width}x${s.height}\n`));
    })();
    for await (const chunk of exec.stdin ?? []) exec.stdout(Buffer.from(Buffer.from(chunk).toString().toUpperCase()));
    void sizes;
    return { exitCode: 7, signal: 0, oomKilled: false };
  }
  async createNetwork(allocId: string, request: NetworkCreateRequest): Promise<CreateNetworkResult> {
    return { spec: { mode: 'group', path: `/var/run/netns/${allocId}`, labels: { by: 'fake' }, hostsConfig: { hostname: request.hostname, address: '10.0.0.2' } }, created: true };
  }
  async destroyNetwork(allocId: string, spec: NetworkIsolationSpec | undefined): Promise<void> {
    if (!spec || spec.path !== `/var/run/netns/${allocId}`) throw new DriverPluginError('DRIVER_PLUGIN_INVALID', `unexpected network spec ${JSON.stringify(spec)}`);
  }
}
