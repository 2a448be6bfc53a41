// A chroot task-driver plugin for the test kit, written the way a Nomad
// driver trusts its client: it declares FSIsolation = chroot and then simply
// chroots into `<AllocDir>/<Name>` (the task directory the host built, with
// its chroot, alloc/, local/, secrets/, tmp/), binds each of TaskConfig's
// Mounts at its task path, writes stdout/stderr into the host's FIFOs
// (StdoutPath/StderrPath), and puts the task in the cgroup it is given
// (LinuxResources' cgroup). Every TaskConfig it receives is written down as
// JSON (`<record_dir>/<task>.<n>.json`, the driver config decoded) so a test
// can assert each field. Served by a tsx executable (see plugin-fixtures.ts):
//
//   import { serveRecordingDriver } from '<repo>/test/support/recording-driver-plugin.ts';
//   await serveRecordingDriver();

import { spawn, type ChildProcess } from 'node:child_process';
import { constants, mkdirSync, openSync, closeSync, writeFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { constants as osConstants } from 'node:os';
import {
  decodeMsgpack,
  DriverPluginError,
  DRIVER_API_VERSION,
  hclspec,
  serveDriverPlugin,
  type Capabilities,
  type CreateNetworkResult,
  type DriverPlugin,
  type ExecTaskResult,
  type ExitResult,
  type Fingerprint,
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

/** The name the plugin registers under. */
export const RECORDING_DRIVER = 'chrootrec';

interface Running {
  config: TaskConfig;
  pid: number;
  startedAt: Date;
  exited: Promise<ExitResult>;
  exit?: ExitResult;
  child?: ChildProcess;
}

const q = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
const waitForever = (signal?: AbortSignal): Promise<void> => new Promise((r) => signal?.addEventListener('abort', () => r(), { once: true }));

/** A stream with nothing in it, open until `signal` fires. */
function idle<T>(signal?: AbortSignal): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: () => ({
      next: async (): Promise<IteratorResult<T>> => {
        await waitForever(signal);
        return { done: true, value: undefined };
      },
    }),
  };
}

/** The chroot driver. Tasks are real processes; the plugin's state is in memory (recovery polls the pid). */
export class RecordingChrootDriver implements DriverPlugin {
  readonly #tasks = new Map<string, Running>();
  #recordDir = '';

  async pluginInfo(): Promise<PluginInfo> {
    return { type: 'driver', pluginApiVersions: [DRIVER_API_VERSION], pluginVersion: '0.1.0', name: RECORDING_DRIVER };
  }
  async configSchema(): Promise<Spec> {
    return hclspec.object({ record_dir: hclspec.attr('record_dir', 'string', true) });
  }
  async setConfig(c: PluginConfig): Promise<void> {
    const cfg = decodeMsgpack(c.pluginConfig) as { record_dir?: string } | null;
    this.#recordDir = cfg?.record_dir ?? '';
    mkdirSync(this.#recordDir, { recursive: true });
  }
  async taskConfigSchema(): Promise<Spec> {
    return hclspec.object({ command: hclspec.attr('command', 'string', true), args: hclspec.attr('args', 'list(string)', false) });
  }
  async capabilities(): Promise<Capabilities> {
    return {
      sendSignals: true,
      exec: false,
      fsIsolation: 'chroot',
      netIsolationModes: ['host'],
      mustInitiateNetwork: false,
      mountConfigs: 'all',
      disableLogCollection: false,
      dynamicWorkloadUsers: false,
    };
  }
  async *fingerprint(opts: StreamOptions = {}): AsyncIterable<Fingerprint> {
    yield { attributes: { [`driver.${RECORDING_DRIVER}`]: { bool: true } }, health: 'healthy', healthDescription: 'Healthy' };
    await waitForever(opts.signal);
  }

  async startTask(config: TaskConfig): Promise<StartTaskResult> {
    const task = decodeMsgpack(config.msgpackDriverConfig) as { command: string; args?: string[] };
    const root = path.join(config.allocDir, config.name);
    const lines = ['set -e', `R=${q(root)}`];
    for (const m of config.mounts) {
      lines.push(`mkdir -p "$R"${q(m.taskPath)}`, `mount --rbind ${q(m.hostPath)} "$R"${q(m.taskPath)}`);
      if (m.readonly) lines.push(`mount -o remount,bind,ro "$R"${q(m.taskPath)}`);
    }
    lines.push('mkdir -p "$R/proc" && mount -t proc proc "$R/proc"', 'exec chroot "$R" "$@"');
    const fd = (p: string): number | 'ignore' => (p ? openSync(p, constants.O_WRONLY) : 'ignore');
    const stdio: Array<number | 'ignore'> = ['ignore', fd(config.stdoutPath), fd(config.stderrPath)];
    const child = spawn('unshare', ['--mount', '--pid', '--fork', '--kill-child', '--propagation', 'private', '--', '/bin/sh', '-c', lines.join('\n'), 'chrootrec', task.command, ...(task.args ?? [])], {
      stdio,
      detached: true,
      env: { ...config.env },
    });
    for (const s of stdio) if (typeof s === 'number') closeSync(s);
    const pid = child.pid ?? 0;
    // The executor joins the cgroup the host made for the task (its children follow).
    let cgroupJoined = '';
    const cgroup = config.resources?.linux?.cpusetCgroupPath ?? '';
    if (cgroup) {
      try {
        writeFileSync(path.join(cgroup, 'cgroup.procs'), String(pid));
        cgroupJoined = cgroup;
      } catch (err) {
        cgroupJoined = `failed: ${(err as Error).message}`;
      }
    }
    const exited = new Promise<ExitResult>((resolve) =>
      child.once('exit', (code, signal) => resolve({ exitCode: code ?? 128 + (signal ? (osConstants.signals[signal] ?? 0) : 0), signal: signal ? (osConstants.signals[signal] ?? 0) : 0, oomKilled: false })),
    );
    const run: Running = { config, pid, startedAt: new Date(), exited, child };
    void exited.then((e) => (run.exit = e));
    this.#tasks.set(config.id, run);
    this.#record(config, task, cgroupJoined);
    return { handle: { version: 1, config, state: 'running', driverState: Buffer.from(JSON.stringify({ pid })) } };
  }

  #record(config: TaskConfig, task: unknown, cgroupJoined: string): void {
    const n = readdirSync(this.#recordDir).filter((f) => f.startsWith(`${config.name}.`)).length;
    const { msgpackDriverConfig: _bytes, ...rest } = config;
    writeFileSync(path.join(this.#recordDir, `${config.name}.${n}.json`), JSON.stringify({ ...rest, driverConfig: task, cgroupJoined }, null, 2));
  }

  async recoverTask(handle: TaskHandle): Promise<void> {
    if (this.#tasks.has(handle.config.id)) return;
    const { pid } = JSON.parse(Buffer.from(handle.driverState).toString('utf8')) as { pid: number };
    const exited = (async (): Promise<ExitResult> => {
      for (;;) {
        try {
          process.kill(pid, 0);
        } catch {
          return { exitCode: 0, signal: 0, oomKilled: false };
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    const run: Running = { config: handle.config, pid, startedAt: new Date(), exited };
    void exited.then((e) => (run.exit = e));
    this.#tasks.set(handle.config.id, run);
  }

  #task(id: string): Running {
    const t = this.#tasks.get(id);
    if (!t) throw new DriverPluginError('DRIVER_PLUGIN_TASK_NOT_FOUND', `task ${id} not found`);
    return t;
  }
  async waitTask(id: string): Promise<ExitResult> {
    return this.#task(id).exited;
  }
  async stopTask(id: string, timeoutMs: number, signal: string): Promise<void> {
    const t = this.#task(id);
    if (t.exit) return;
    try {
      process.kill(-t.pid, (signal || 'SIGTERM') as NodeJS.Signals);
    } catch {
      return;
    }
    const timer = setTimeout(() => {
      try {
        process.kill(-t.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }, timeoutMs);
    await t.exited;
    clearTimeout(timer);
  }
  async destroyTask(id: string, force: boolean): Promise<void> {
    const t = this.#tasks.get(id);
    if (!t) return;
    if (!t.exit && force) await this.stopTask(id, 0, 'SIGKILL');
    this.#tasks.delete(id);
  }
  async inspectTask(id: string): Promise<TaskStatus> {
    const t = this.#task(id);
    return { id, name: t.config.name, state: t.exit ? 'exited' : 'running', startedAt: t.startedAt, ...(t.exit ? { exitResult: t.exit } : {}), driverAttributes: { pid: String(t.pid) } };
  }
  taskStats(_id: string, _intervalMs: number, opts: StreamOptions = {}): AsyncIterable<TaskResourceUsage> {
    return idle(opts.signal);
  }
  taskEvents(opts: StreamOptions = {}): AsyncIterable<TaskEvent> {
    return idle(opts.signal);
  }
  async signalTask(id: string, signal: string): Promise<void> {
    process.kill(-this.#task(id).pid, signal as NodeJS.Signals);
  }
  async execTask(): Promise<ExecTaskResult> {
    throw new DriverPluginError('DRIVER_PLUGIN_UNSUPPORTED', 'exec is not supported');
  }
  async execTaskStreaming(): Promise<ExitResult> {
    throw new DriverPluginError('DRIVER_PLUGIN_UNSUPPORTED', 'exec is not supported');
  }
  async createNetwork(): Promise<CreateNetworkResult> {
    throw new DriverPluginError('DRIVER_PLUGIN_UNSUPPORTED', 'no networks');
  }
  async destroyNetwork(): Promise<void> {
    throw new DriverPluginError('DRIVER_PLUGIN_UNSUPPORTED', 'no networks');
  }
}

/** Serves the driver over go-plugin until the host stops it. */
export async function serveRecordingDriver(): Promise<void> {
  process.on('SIGINT', () => undefined);
  const server = await serveDriverPlugin(new RecordingChrootDriver());
  await server.stopped;
  await server.stop();
  process.exit(0);
}
