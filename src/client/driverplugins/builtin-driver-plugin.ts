// Berth's own raw_exec/exec driver seen as a task-driver plugin: what
// `berth driver serve raw_exec|exec` serves over Nomad's driver protocol, so
// the host side is exercised against a second implementation and users can
// run the built-ins out of process. The task's `config {}` is Berth's
// (command, args); the driver state in the handle is Berth's TaskHandle JSON.

import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortedError } from '../../lib/index.js';
import type { ExitResult, TaskConfig, TaskDriver, TaskHandle, TaskMount } from '../drivers/index.js';
import { DriverError } from '../drivers/index.js';
import type {
  DriverPluginPort,
  HclSpec,
  PluginCapabilities,
  PluginExecResult,
  PluginExecStreamOptions,
  PluginExitResult,
  PluginFingerprint,
  PluginInfo,
  PluginTaskConfig,
  PluginTaskEvent,
  PluginTaskHandle,
  PluginTaskResourceUsage,
  PluginTaskStatus,
} from './driver-plugin-port.js';

/** The task config schema of Berth's drivers: `command` (required) and `args`. */
export const BUILTIN_TASK_CONFIG_SCHEMA: HclSpec = {
  Object: {
    attributes: {
      command: { Attr: { name: 'command', type: 'string', required: true } },
      args: { Attr: { name: 'args', type: 'list(string)', required: false } },
    },
  },
};

/** The plugin config schema of Berth's drivers: none yet (an empty object). */
export const BUILTIN_CONFIG_SCHEMA: HclSpec = { Object: { attributes: {} } };

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

/**
 * A TaskDriver as a DriverPluginPort. Holds no state of its own beyond the
 * driver's: every task is the driver's. Calls throw the driver's DriverError.
 */
export class BuiltinDriverPlugin implements DriverPluginPort {
  readonly #driver: TaskDriver;
  readonly #version: string;
  #configured = false;

  constructor(driver: TaskDriver, opts: { version?: string } = {}) {
    this.#driver = driver;
    this.#version = opts.version ?? '0.0.0';
  }

  async pluginInfo(): Promise<PluginInfo> {
    return { type: 'driver', pluginApiVersions: ['0.1.0'], pluginVersion: this.#version, name: this.#driver.name };
  }

  async configSchema(): Promise<HclSpec> {
    return BUILTIN_CONFIG_SCHEMA;
  }

  async setConfig(): Promise<void> {
    this.#configured = true;
  }

  /** Whether SetConfig has been called (the protocol requires it before use; Berth's drivers need nothing from it). */
  get configured(): boolean {
    return this.#configured;
  }

  async taskConfigSchema(): Promise<HclSpec> {
    return BUILTIN_TASK_CONFIG_SCHEMA;
  }

  async capabilities(): Promise<PluginCapabilities> {
    const c = this.#driver.capabilities;
    return {
      sendSignals: c.sendSignals,
      exec: c.exec,
      fsIsolation: c.fsIsolation,
      netIsolationModes: [...c.networkModes],
      mustInitiateNetwork: c.mustInitiateNetwork,
      mountConfigs: c.mountConfigs === 'any' ? 'all' : 'none',
      disableLogCollection: false,
      dynamicWorkloadUsers: false,
    };
  }

  async *fingerprint(signal: AbortSignal): AsyncIterable<PluginFingerprint> {
    while (!signal.aborted) {
      const info = await this.#driver.fingerprint();
      yield {
        attributes: { [`driver.${this.#driver.name}`]: true, [`driver.${this.#driver.name}.cgroups`]: info.cgroups ?? 'none' },
        health: !info.detected ? 'undetected' : info.healthy ? 'healthy' : 'unhealthy',
        healthDescription: info.healthy ? 'Healthy' : info.healthReason,
      };
      try {
        await sleep(FINGERPRINT_PERIOD_MS, undefined, { signal });
      } catch {
        return;
      }
    }
  }

  async recoverTask(handle: PluginTaskHandle): Promise<void> {
    await this.#driver.recoverTask(this.#berthHandle(handle));
  }

  async startTask(cfg: PluginTaskConfig): Promise<{ handle: PluginTaskHandle }> {
    const command = cfg.driverConfig['command'];
    const args = cfg.driverConfig['args'] ?? [];
    if (typeof command !== 'string' || command === '') throw new DriverError('DRIVER_START_FAILED', `task ${cfg.name}: config.command must be a non-empty string`);
    if (!Array.isArray(args) || !args.every((a) => typeof a === 'string')) throw new DriverError('DRIVER_START_FAILED', `task ${cfg.name}: config.args must be a list of strings`);
    const taskRoot = path.join(cfg.allocDir, cfg.name);
    const berth: TaskConfig = {
      id: cfg.id,
      allocId: cfg.allocId,
      taskName: cfg.name,
      command,
      args: args as string[],
      env: cfg.env,
      taskDir: path.join(taskRoot, 'local'),
      allocDir: cfg.allocDir,
      secretsDir: path.join(taskRoot, 'secrets'),
      mounts: cfg.mounts.map((m) => ({ source: m.hostPath, destination: m.taskPath, readOnly: m.readonly, propagation: fromPropagation(m.propagationMode) })),
      ...(cfg.networkIsolation?.path ? { networkNamespacePath: cfg.networkIsolation.path } : {}),
      logs: { disabled: !cfg.stdoutPath, dir: cfg.stdoutPath ? path.dirname(cfg.stdoutPath) : taskRoot, maxFiles: 10, maxFileSizeMb: 10 },
      killTimeoutMs: DEFAULT_KILL_TIMEOUT_MS,
      resources: {
        cpuMhz: cfg.resources.cpuShares || 100,
        memoryMb: cfg.resources.memoryMb || 300,
        ...(cfg.resources.memoryMaxMb > cfg.resources.memoryMb ? { memoryMaxMb: cfg.resources.memoryMaxMb } : {}),
        ...(cfg.resources.cpuQuota > 0 && cfg.resources.cpuPeriod > 0 ? { cores: cfg.resources.cpuQuota / cfg.resources.cpuPeriod } : {}),
      },
    };
    const handle = await this.#driver.startTask(berth);
    return { handle: { version: 1, config: cfg, state: 'running', driverState: Buffer.from(JSON.stringify(handle)) } };
  }

  async waitTask(taskId: string, signal?: AbortSignal): Promise<PluginExitResult> {
    return toPluginExit(await this.#driver.waitTask(taskId, signal ? { signal } : {}));
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
      startedAt: s.startedAt,
      completedAt: s.completedAt ?? 0,
      ...(s.exitResult ? { exitResult: toPluginExit(s.exitResult) } : {}),
      driverAttributes: { pid: String(s.pid) },
    };
  }

  async *taskStats(taskId: string, intervalMs: number, signal: AbortSignal): AsyncIterable<PluginTaskResourceUsage> {
    while (!signal.aborted) {
      const u = await this.#driver.taskStats(taskId);
      yield {
        timestamp: u.timestamp,
        cpu: {
          userMode: u.cpu.userMs,
          systemMode: u.cpu.systemMs,
          totalTicks: u.cpu.totalMs,
          percent: u.cpu.percent,
          throttledPeriods: u.cpu.throttledPeriods,
          throttledTime: u.cpu.throttledMs,
        },
        memory: { rss: u.memory.rssBytes, cache: u.memory.cacheBytes, usage: u.memory.usageBytes, maxUsage: u.memory.maxUsageBytes },
        pids: u.pids,
      };
      try {
        await sleep(Math.max(100, intervalMs), undefined, { signal });
      } catch {
        return;
      }
    }
  }

  /** Berth's drivers emit no events of their own: the stream stays open until aborted. */
  async *taskEvents(signal: AbortSignal): AsyncIterable<PluginTaskEvent> {
    if (signal.aborted) return;
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }

  async signalTask(taskId: string, signal: string): Promise<void> {
    await this.#driver.signalTask(taskId, signal);
  }

  async execTask(taskId: string, cmd: string[], timeoutMs: number): Promise<PluginExecResult> {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const collect = (into: Buffer[]): NodeJS.WritableStream => sinkOf((c) => into.push(Buffer.from(c)));
    const signal = timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined;
    try {
      const r = await this.#driver.execTaskStreaming(taskId, { command: cmd, stdin: [], stdout: collect(out), stderr: collect(err), ...(signal ? { signal } : {}) });
      return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitResult: { exitCode: r.exitCode, signal: 0, oomKilled: false } };
    } catch (e) {
      if (e instanceof AbortedError) return { stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitResult: { exitCode: -1, signal: 9, oomKilled: false, err: 'timed out' } };
      throw e;
    }
  }

  async execTaskStreaming(taskId: string, opts: PluginExecStreamOptions): Promise<PluginExitResult> {
    const resize = opts.resize ? mapAsync(opts.resize, (s) => ({ cols: s.width, rows: s.height })) : undefined;
    const r = await this.#driver.execTaskStreaming(taskId, {
      command: opts.command,
      tty: opts.tty,
      stdin: opts.stdin ?? [],
      stdout: sinkOf(opts.stdout),
      stderr: sinkOf(opts.stderr),
      ...(resize ? { resize } : {}),
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    return { exitCode: r.exitCode, signal: 0, oomKilled: false };
  }

  #berthHandle(handle: PluginTaskHandle): TaskHandle {
    try {
      return JSON.parse(Buffer.from(handle.driverState).toString('utf8')) as TaskHandle;
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

/** A writable stream that hands each chunk to `write`. */
function sinkOf(write: (chunk: Uint8Array) => void): NodeJS.WritableStream {
  return new Writable({
    write(chunk: Buffer, _enc, cb): void {
      write(chunk);
      cb();
    },
  });
}
