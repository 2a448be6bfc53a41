// Berth's own raw_exec/exec/docker driver seen as a task-driver plugin: what
// `berth driver serve raw_exec|exec|docker` serves over Nomad's driver
// protocol, so the host side is exercised against a second implementation
// and users can run the built-ins out of process. The task's `config {}` is
// Berth's (command, args) or, for a driver that reads its own config
// (docker), that driver's; the driver state in the handle is the driver's
// handle JSON.

import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortedError } from '../../lib/index.js';
import {
  DRIVER_API_VERSION,
  hclspec,
  type Capabilities,
  type CreateNetworkResult,
  type DriverPlugin,
  type ExecOptions as PluginExecOptions,
  type ExecTaskResult,
  type ExitResult as PluginExitResult,
  type Fingerprint,
  type NetworkCreateRequest,
  type NetworkIsolationSpec,
  type PluginConfig,
  type PluginInfo,
  type Spec,
  type StartTaskResult,
  type StreamOptions,
  type TaskConfig as PluginTaskConfig,
  type TaskEvent,
  type TaskHandle as PluginTaskHandle,
  type TaskResourceUsage as PluginTaskResourceUsage,
  type TaskStatus as PluginTaskStatus,
} from '../../plugins/index.js';
import { DriverError, type AnyTaskHandle, type ExitResult, type TaskConfig, type TaskDriver, type TaskMount } from '../drivers/index.js';
import { withoutNulls } from './docker-specs.js';

/** The task config schema of Berth's drivers: `command` (required) and `args`. */
export const BUILTIN_TASK_CONFIG_SCHEMA: Spec = hclspec.object({
  command: hclspec.attr('command', 'string', true),
  args: hclspec.attr('args', 'list(string)', false),
});

/** The plugin config schema of Berth's drivers: none yet (an empty object). */
export const BUILTIN_CONFIG_SCHEMA: Spec = hclspec.object({});

const FINGERPRINT_PERIOD_MS = 30_000;
const DEFAULT_KILL_TIMEOUT_MS = 5_000;

/** Signal number of a name such as 'SIGKILL' (0 when unknown or null). */
export function signalNumber(name: string | null | undefined): number {
  if (!name) return 0;
  return (osConstants.signals as Record<string, number | undefined>)[name] ?? 0;
}

function toPluginExit(exit: ExitResult): PluginExitResult {
  return { exitCode: exit.exitCode, signal: signalNumber(exit.signal), oomKilled: exit.oomKilled };
}

function fromPropagation(p: string): TaskMount['propagation'] {
  return p === 'host-to-task' || p === 'bidirectional' ? p : 'private';
}

/** A writable stream that hands each chunk to `write`. */
function sinkOf(write: (chunk: Uint8Array) => void): NodeJS.WritableStream {
  return new Writable({
    write(chunk: Buffer, _enc, cb): void {
      write(chunk);
      cb();
    },
  });
}

export interface BuiltinDriverPluginOptions {
  /** Decodes StartTask's msgpack task config (go-cty msgpack) to plain JSON. */
  decodeTaskConfig: (bytes: Uint8Array) => unknown;
  version?: string;
  /** The driver's plugin config schema (default: none) and task config schema (default: command and args). */
  configSchema?: Spec;
  taskConfigSchema?: Spec;
  /**
   * Builds the driver from SetConfig's plugin config (plain JSON, nulls
   * dropped), replacing the one given to the constructor; throws the
   * driver's error for a wrong config. Absent: the config is ignored.
   */
  configure?: (config: Record<string, unknown>) => TaskDriver;
}

/**
 * A TaskDriver as a DriverPlugin. Holds no state of its own beyond the
 * driver's: every task is the driver's. Calls throw the driver's DriverError.
 */
export class BuiltinDriverPlugin implements DriverPlugin {
  #driver: TaskDriver;
  readonly #o: BuiltinDriverPluginOptions;
  #configured = false;

  constructor(driver: TaskDriver, opts: BuiltinDriverPluginOptions) {
    this.#driver = driver;
    this.#o = opts;
  }

  async pluginInfo(): Promise<PluginInfo> {
    return { type: 'driver', pluginApiVersions: [DRIVER_API_VERSION], pluginVersion: this.#o.version ?? '0.0.0', name: this.#driver.name };
  }

  async configSchema(): Promise<Spec> {
    return this.#o.configSchema ?? BUILTIN_CONFIG_SCHEMA;
  }

  async setConfig(config?: PluginConfig): Promise<void> {
    if (this.#o.configure) {
      const raw = config?.pluginConfig.length ? withoutNulls(this.#o.decodeTaskConfig(config.pluginConfig)) : {};
      const next = this.#o.configure((raw ?? {}) as Record<string, unknown>);
      const previous = this.#driver;
      this.#driver = next;
      if (previous !== next) await previous.shutdown();
    }
    this.#configured = true;
  }

  /** Whether SetConfig has been called (Berth's drivers need nothing from it). */
  get configured(): boolean {
    return this.#configured;
  }

  async taskConfigSchema(): Promise<Spec> {
    return this.#o.taskConfigSchema ?? BUILTIN_TASK_CONFIG_SCHEMA;
  }

  async capabilities(): Promise<Capabilities> {
    const c = this.#driver.capabilities;
    return {
      sendSignals: c.sendSignals,
      exec: c.exec,
      fsIsolation: c.fsIsolation,
      // Berth's none/bridge/cni group networks are a namespace made for the group: Nomad's `group` isolation.
      netIsolationModes: [...new Set(c.networkModes.map((m) => (m === 'host' ? 'host' : 'group')))],
      mustInitiateNetwork: c.mustInitiateNetwork,
      mountConfigs: c.mountConfigs === 'any' ? 'all' : 'none',
      disableLogCollection: false,
      dynamicWorkloadUsers: false,
    };
  }

  async *fingerprint(opts: StreamOptions = {}): AsyncIterable<Fingerprint> {
    const signal = opts.signal;
    while (!signal?.aborted) {
      const info = await this.#driver.fingerprint();
      // The driver's own attributes (docker: version, privileged.enabled), "true" as the bool Nomad reports.
      const own = Object.fromEntries(Object.entries(info.attributes ?? {}).map(([k, v]) => [k, v === 'true' ? { bool: true } : { string: v }]));
      yield {
        attributes: { ...own, [`driver.${this.#driver.name}`]: { bool: true }, [`driver.${this.#driver.name}.cgroups`]: { string: info.cgroups ?? 'none' } },
        health: !info.detected ? 'undetected' : info.healthy ? 'healthy' : 'unhealthy',
        healthDescription: info.healthy ? 'Healthy' : info.healthReason,
      };
      try {
        await sleep(FINGERPRINT_PERIOD_MS, undefined, signal ? { signal } : {});
      } catch {
        return;
      }
    }
  }

  async recoverTask(handle: PluginTaskHandle): Promise<void> {
    await this.#driver.recoverTask(this.#berthHandle(handle));
  }

  async startTask(cfg: PluginTaskConfig): Promise<StartTaskResult> {
    const decoded = (cfg.msgpackDriverConfig.length ? this.#o.decodeTaskConfig(cfg.msgpackDriverConfig) : {}) as Record<string, unknown> | null;
    const own = this.#driver.takesDriverConfig === true;
    const command = own ? '' : decoded?.['command'];
    const args = own ? [] : (decoded?.['args'] ?? []);
    if (typeof command !== 'string' || (command === '' && !own)) throw new DriverError('DRIVER_START_FAILED', `task ${cfg.name}: config.command must be a non-empty string`, { recoverable: false });
    if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) throw new DriverError('DRIVER_START_FAILED', `task ${cfg.name}: config.args must be a list of strings`, { recoverable: false });
    const taskRoot = path.join(cfg.allocDir, cfg.name);
    const allocated = cfg.resources?.allocated;
    const linux = cfg.resources?.linux;
    const berth: TaskConfig = {
      id: cfg.id,
      allocId: cfg.allocId,
      taskName: cfg.name,
      command,
      args: args as string[],
      env: { ...cfg.env },
      taskDir: path.join(taskRoot, 'local'),
      allocDir: cfg.allocDir,
      secretsDir: path.join(taskRoot, 'secrets'),
      mounts: cfg.mounts.map((m) => ({ source: m.hostPath, destination: m.taskPath, readOnly: m.readonly, propagation: fromPropagation(m.propagationMode) })),
      ...(cfg.networkIsolation?.path ? { networkNamespacePath: cfg.networkIsolation.path, networkMode: 'group' } : {}),
      ...(cfg.resources?.ports.length ? { ports: cfg.resources.ports.map((p) => ({ label: p.label, value: p.value, to: p.to, hostIp: p.hostIp })) } : {}),
      ...(own ? { driverConfig: withoutNulls(decoded ?? {}) as Record<string, unknown>, jobId: cfg.jobId, jobName: cfg.jobName, groupName: cfg.taskGroupName, namespace: cfg.namespace, nodeId: cfg.nodeId } : {}),
      // The host's FIFOs (its log monitor rotates), as any Nomad driver writes them.
      logs: {
        disabled: !cfg.stdoutPath,
        dir: cfg.stdoutPath ? path.dirname(cfg.stdoutPath) : taskRoot,
        maxFiles: 10,
        maxFileSizeMb: 10,
        ...(cfg.stdoutPath && cfg.stderrPath ? { fifos: { stdout: cfg.stdoutPath, stderr: cfg.stderrPath } } : {}),
      },
      killTimeoutMs: DEFAULT_KILL_TIMEOUT_MS,
      ...(cfg.user ? { user: cfg.user } : {}),
      resources: {
        cpuMhz: allocated?.cpuShares || 100,
        memoryMb: allocated?.memoryMb || 300,
        ...(allocated && allocated.memoryMaxMb > allocated.memoryMb ? { memoryMaxMb: allocated.memoryMaxMb } : {}),
        ...(linux && linux.cpuQuota > 0 && linux.cpuPeriod > 0 ? { cores: linux.cpuQuota / linux.cpuPeriod } : {}),
      },
    };
    const handle = await this.#driver.startTask(berth, { onEvent: (e) => this.#emit({ taskId: cfg.id, taskName: cfg.name, allocId: cfg.allocId, timestamp: new Date(), message: e.message, annotations: e.details ?? {} }) });
    return { handle: { version: 1, config: cfg, state: 'running', driverState: Buffer.from(JSON.stringify(handle)) } };
  }

  async waitTask(taskId: string, opts: { signal?: AbortSignal } = {}): Promise<PluginExitResult> {
    return toPluginExit(await this.#driver.waitTask(taskId, opts.signal ? { signal: opts.signal } : {}));
  }

  async stopTask(taskId: string, timeoutMs: number, signal: string): Promise<void> {
    await this.#driver.stopTask(taskId, { timeoutMs, ...(signal ? { signal } : {}) });
  }

  async destroyTask(taskId: string, force: boolean): Promise<void> {
    await this.#driver.destroyTask(taskId, { force });
  }

  async inspectTask(taskId: string): Promise<PluginTaskStatus> {
    const s = this.#driver.inspectTask(taskId);
    return {
      id: s.id,
      name: s.taskName,
      state: s.state,
      startedAt: new Date(s.startedAt),
      ...(s.completedAt ? { completedAt: new Date(s.completedAt) } : {}),
      ...(s.exitResult ? { exitResult: toPluginExit(s.exitResult) } : {}),
      driverAttributes: { pid: String(s.pid) },
    };
  }

  async *taskStats(taskId: string, intervalMs: number, opts: StreamOptions = {}): AsyncIterable<PluginTaskResourceUsage> {
    const signal = opts.signal;
    while (!signal?.aborted) {
      const u = await this.#driver.taskStats(taskId);
      yield {
        taskId,
        timestamp: new Date(u.timestamp),
        resourceUsage: {
          cpu: {
            userMode: u.cpu.userMs,
            systemMode: u.cpu.systemMs,
            totalTicks: u.cpu.totalMs,
            percent: u.cpu.percent,
            throttledPeriods: u.cpu.throttledPeriods,
            throttledTime: u.cpu.throttledMs,
            measured: ['user_mode', 'system_mode', 'total_ticks', 'percent', 'throttled_periods', 'throttled_time'],
          },
          memory: {
            rss: u.memory.rssBytes,
            cache: u.memory.cacheBytes,
            swap: 0,
            usage: u.memory.usageBytes,
            maxUsage: u.memory.maxUsageBytes,
            kernelUsage: 0,
            kernelMaxUsage: 0,
            measured: ['rss', 'cache', 'usage', 'max_usage'],
          },
        },
        pids: Object.fromEntries(u.pids.map((pid) => [String(pid), {}])),
      };
      try {
        await sleep(Math.max(100, intervalMs), undefined, signal ? { signal } : {});
      } catch {
        return;
      }
    }
  }

  /** The driver's events (docker: image pulls) as they happen, until aborted. */
  taskEvents(opts: StreamOptions = {}): AsyncIterable<TaskEvent> {
    const signal = opts.signal;
    const queue: TaskEvent[] = [];
    let wake: (() => void) | undefined;
    const listener = (e: TaskEvent): void => {
      queue.push(e);
      wake?.();
    };
    this.#listeners.add(listener);
    const stop = (): void => {
      this.#listeners.delete(listener);
      wake?.();
    };
    signal?.addEventListener('abort', stop, { once: true });
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<TaskEvent>> => {
          while (queue.length === 0 && signal && !signal.aborted) await new Promise<void>((resolve) => (wake = resolve));
          const value = queue.shift();
          if (value) return { done: false, value };
          this.#listeners.delete(listener);
          return { done: true, value: undefined };
        },
      }),
    };
  }

  readonly #listeners = new Set<(e: TaskEvent) => void>();

  #emit(e: TaskEvent): void {
    for (const l of this.#listeners) l(e);
  }

  async signalTask(taskId: string, signal: string): Promise<void> {
    await this.#driver.signalTask(taskId, signal);
  }

  async execTask(taskId: string, command: readonly string[], timeoutMs: number): Promise<ExecTaskResult> {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const signal = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
    try {
      const r = await this.#driver.execTaskStreaming(taskId, {
        command: [...command],
        stdin: [],
        stdout: sinkOf((c) => out.push(Buffer.from(c))),
        stderr: sinkOf((c) => err.push(Buffer.from(c))),
        ...(signal ? { signal } : {}),
      });
      return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitResult: { exitCode: r.exitCode, signal: 0, oomKilled: false } };
    } catch (e) {
      if (e instanceof AbortedError) return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitResult: { exitCode: -1, signal: 9, oomKilled: false, err: 'timed out' } };
      throw e;
    }
  }

  async execTaskStreaming(taskId: string, exec: PluginExecOptions, opts: { signal?: AbortSignal } = {}): Promise<PluginExitResult> {
    const resize = exec.resize ? mapAsync(exec.resize, (s) => ({ cols: s.width, rows: s.height })) : undefined;
    const r = await this.#driver.execTaskStreaming(taskId, {
      command: [...exec.command],
      tty: exec.tty,
      stdin: exec.stdin ?? [],
      stdout: sinkOf((c) => exec.stdout(c)),
      stderr: sinkOf((c) => exec.stderr(c)),
      ...(resize ? { resize } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    return { exitCode: r.exitCode, signal: 0, oomKilled: false };
  }

  /** The driver's own network (docker's pause container); Berth's other drivers join the one the agent made. */
  async createNetwork(allocId: string, request: NetworkCreateRequest): Promise<CreateNetworkResult> {
    if (!this.#driver.createNetwork) throw new DriverError('DRIVER_NETWORK_UNSUPPORTED', `driver ${this.#driver.name} does not create networks`);
    const { path: nsPath } = await this.#driver.createNetwork(allocId, request.hostname);
    return { spec: { mode: 'group', path: nsPath, labels: {} }, created: true };
  }

  async destroyNetwork(allocId: string, spec: NetworkIsolationSpec | undefined): Promise<void> {
    if (!this.#driver.destroyNetwork) throw new DriverError('DRIVER_NETWORK_UNSUPPORTED', `driver ${this.#driver.name} does not create networks`);
    await this.#driver.destroyNetwork(allocId, spec?.path ?? '');
  }

  #berthHandle(handle: PluginTaskHandle): AnyTaskHandle {
    try {
      return JSON.parse(Buffer.from(handle.driverState).toString('utf8')) as AnyTaskHandle;
    } catch (err) {
      throw new DriverError('DRIVER_TASK_NOT_RECOVERABLE', `task ${handle.config.id}: the handle's driver state is not a ${this.#driver.name} handle`, { cause: err });
    }
  }

  /** Stops watching tasks (they keep running). Safe twice. */
  async shutdown(): Promise<void> {
    await this.#driver.shutdown();
  }
}

async function* mapAsync<A, B>(src: AsyncIterable<A>, f: (a: A) => B): AsyncIterable<B> {
  for await (const a of src) yield f(a);
}
