// The driver plugin manager (Nomad's client/pluginmanager/drivermanager):
// finds the executables in plugin_dir, launches each, checks it is a task
// driver, configures it from its `plugin "<file>" { config {...} }` block,
// follows its fingerprint and task-event streams, and restarts it with
// backoff when it exits, recovering the running tasks from their handles.

import { readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { anySignal, BACKOFF, backoffDelay, describeError, systemClock, type BackoffPolicy, type Clock, type Logger } from '../../lib/index.js';
import type { DriverInfo } from '../../structs/index.js';
import type { Capabilities, DriverPlugin, Fingerprint, Spec } from '../../plugins/index.js';
import type { Cgroups } from '../cgroups/index.js';
import { EXECUTOR_PATH } from '../drivers/index.js';
import { LogMonitor } from '../logmon/index.js';
import { ExternalTaskDriver, type DriverPluginSlot } from './external-task-driver.js';
import { DriverManagerError, isPluginShutDown } from './plugin-errors.js';

/** One candidate plugin: an executable in plugin_dir (or a command the agent runs, e.g. `berth driver serve raw_exec`). */
export interface DriverPluginEntry {
  /** The executable's file name: what `plugin "<name>" {}` blocks match. */
  name: string;
  file: string;
  args: string[];
  /** The plugin block's `config {}` (hcl2json shape), when there is one. */
  config?: Record<string, unknown>;
  /** Where a config path (`config.volumes.enabled`) is in the agent's config file: `file:line:col`. */
  locate?: (configPath: string) => string | undefined;
}

/** A launched plugin process and its driver client. */
export interface LaunchedDriverPlugin {
  driver: DriverPlugin;
  pid?: number;
  /** Resolves once the process has exited, whatever the reason. */
  exited: Promise<unknown>;
  /** Asks the plugin to stop (GRPCController), kills it if it does not. Safe twice. */
  stop(): Promise<void>;
}

/** Launches one plugin: handshake, health, stdio forwarded to `logger`. Rejects with an error naming the plugin. */
export type DriverPluginLauncher = (entry: DriverPluginEntry, opts: { logger: Logger; signal: AbortSignal }) => Promise<LaunchedDriverPlugin>;

/** go-cty msgpack of a config block decoded against a schema; throws on a config the schema refuses (message with the path). */
export type ConfigEncoder = (schema: Spec | undefined, body: Record<string, unknown>) => Uint8Array;

export interface DriverManagerOptions {
  plugins: DriverPluginEntry[];
  launch: DriverPluginLauncher;
  encodeConfig: ConfigEncoder;
  logger: Logger;
  node: { name: string };
  /** Told when a driver's health, attributes or presence changed (re-fingerprint the node). Must not throw. */
  onChange?: () => void;
  backoff?: BackoffPolicy;
  clock?: Clock;
  /** PATH for tasks that set none (see ExternalTaskDriverOptions). */
  defaultTaskPath?: string;
  /**
   * The control socket of the node's log monitor (keep it stable across
   * agent restarts: the monitor outlives the agent). Default: one in the
   * temp dir, per process.
   */
  logmonSocket?: string;
  /** Where Berth makes the tasks' cgroups (see ExternalTaskDriverOptions.cgroups). */
  cgroups?: Cgroups | null;
  /** How long the first launch of each plugin may take before start() gives up on it (default 30 s). */
  launchTimeoutMs?: number;
}

/**
 * Executables in `dir` (regular files with an execute bit), matched with
 * their plugin blocks by file name. A block naming no file is reported in
 * `unmatched`. Throws nothing: an unreadable dir yields no entries and a warning.
 */
export function discoverDriverPlugins(
  dir: string,
  blocks: Record<string, { config?: Record<string, unknown>; args?: string[] }>,
  locate?: (name: string, configPath: string) => string | undefined,
): { entries: DriverPluginEntry[]; unmatched: string[]; error?: string } {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch (err) {
    return { entries: [], unmatched: Object.keys(blocks), error: `plugin_dir ${dir} cannot be read: ${(err as NodeJS.ErrnoException).code ?? describeError(err)}` };
  }
  const entries: DriverPluginEntry[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      const st = statSync(file);
      if (!st.isFile() || (st.mode & 0o111) === 0) continue;
    } catch {
      continue;
    }
    const block = blocks[name];
    entries.push({
      name,
      file,
      args: block?.args ?? [],
      ...(block?.config ? { config: block.config } : {}),
      ...(locate ? { locate: (p: string) => locate(name, p) } : {}),
    });
  }
  const found = new Set(entries.map((e) => e.name));
  return { entries, unmatched: Object.keys(blocks).filter((n) => !found.has(n)) };
}

type InstanceState = 'starting' | 'running' | 'restarting' | 'failed' | 'stopped';

/** One plugin: its process across restarts, and the slot its driver reads. */
class PluginInstance implements DriverPluginSlot {
  readonly entry: DriverPluginEntry;
  state: InstanceState = 'starting';
  /** The name the plugin registered under (PluginInfo name). */
  driverName?: string;
  driver?: ExternalTaskDriver;
  lastError?: string;
  restarts = 0;
  #launched?: LaunchedDriverPlugin;
  #ready?: DriverPlugin;
  #waiters: Array<() => void> = [];
  #fingerprint?: Fingerprint;
  readonly #m: DriverManager;
  readonly #log: Logger;
  #streams?: AbortController;

  constructor(entry: DriverPluginEntry, manager: DriverManager, log: Logger) {
    this.entry = entry;
    this.#m = manager;
    this.#log = log.child({ plugin: entry.name });
  }

  current(): DriverPlugin | undefined {
    return this.#ready;
  }

  ready(opts: { not?: DriverPlugin; signal?: AbortSignal } = {}): Promise<DriverPlugin> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        if (this.state === 'stopped' || this.state === 'failed') {
          reject(new DriverManagerError('DRIVER_MANAGER_STOPPED', `driver plugin ${this.entry.name} is ${this.state} (plugin shut down)`));
          return true;
        }
        if (opts.signal?.aborted) {
          reject(opts.signal.reason instanceof Error ? opts.signal.reason : new Error('aborted'));
          return true;
        }
        if (this.#ready && this.#ready !== opts.not) {
          resolve(this.#ready);
          return true;
        }
        return false;
      };
      if (check()) return;
      const waiter = (): void => {
        if (check()) {
          this.#waiters = this.#waiters.filter((w) => w !== waiter);
          opts.signal?.removeEventListener('abort', waiter);
        }
      };
      this.#waiters.push(waiter);
      opts.signal?.addEventListener('abort', waiter, { once: true });
    });
  }

  #wake(): void {
    for (const w of [...this.#waiters]) w();
  }

  driverInfo(): DriverInfo {
    const fp = this.#fingerprint;
    const modes = this.driver?.capabilities.networkModes ?? [];
    if (this.state !== 'running' || !fp) {
      const plugin = `driver plugin ${this.entry.name}`;
      const why = this.state === 'restarting' ? `${plugin} shut down; restarting` : this.state === 'starting' ? `${plugin} starting` : `${plugin} ${this.state}`;
      return { detected: true, healthy: false, healthReason: this.lastError ? `${why}: ${this.lastError}` : why, networkModes: [...modes], external: true };
    }
    return {
      detected: fp.health !== 'undetected',
      healthy: fp.health === 'healthy',
      healthReason: fp.healthDescription || fp.health,
      networkModes: [...modes],
      ...(this.driver?.capabilities.mustInitiateNetwork ? { mustInitiateNetwork: true } : {}),
      cgroups: 'none',
      external: true,
      attributes: Object.fromEntries(Object.entries(fp.attributes).map(([k, a]) => [k, String(a.string ?? a.int ?? a.float ?? a.bool ?? '')])),
      ...(this.driver?.taskConfigSchema ? { taskConfigSchema: this.driver.taskConfigSchema as unknown as Record<string, unknown> } : {}),
    };
  }

  /** One launch: process, PluginInfo, config, capabilities; the driver made or updated. Throws naming the plugin. */
  async launch(signal: AbortSignal): Promise<void> {
    const name = this.entry.name;
    const launched = await this.#m.opts.launch(this.entry, { logger: this.#log, signal }).catch((err: unknown) => {
      throw new DriverManagerError('DRIVER_MANAGER_LAUNCH_FAILED', `driver plugin ${name} (${this.entry.file}) failed to start: ${describeError(err)}`, { cause: err });
    });
    this.#launched = launched;
    try {
      const p = launched.driver;
      const info = await p.pluginInfo({ signal });
      if (info.type !== 'driver') throw new DriverManagerError('DRIVER_MANAGER_NOT_A_DRIVER', `plugin ${name} is a ${info.type} plugin, not a task driver`);
      if (this.driverName && info.name !== this.driverName) {
        throw new DriverManagerError('DRIVER_MANAGER_NOT_A_DRIVER', `plugin ${name} now calls itself ${info.name}, not ${this.driverName}`);
      }
      const schema = await p.configSchema({ signal });
      let config: Uint8Array;
      try {
        config = this.#m.opts.encodeConfig(schema, this.entry.config ?? {});
      } catch (err) {
        const at = this.entry.locate?.(configPathOf(err)) ?? '';
        throw new DriverManagerError('DRIVER_MANAGER_CONFIG_INVALID', `${at ? `${at}: ` : ''}plugin "${name}" config: ${describeError(err)}`, { cause: err });
      }
      await p.setConfig({ apiVersion: info.pluginApiVersions[0] ?? 'v0.1.0', pluginConfig: config, agentConfig: { driver: { clientMinPort: 14000, clientMaxPort: 14512 } } }, { signal });
      const caps = await p.capabilities({ signal });
      const taskSchema = await p.taskConfigSchema({ signal });
      this.driverName = info.name;
      if (this.driver) this.driver.update(caps, taskSchema);
      else this.driver = this.#newDriver(info.name, caps, taskSchema);
      // Tasks running before the plugin went away are recovered before anyone is handed the new instance.
      await this.driver.recoverAllOn(p);
      this.#ready = p;
      this.state = 'running';
      this.lastError = undefined;
      this.#followStreams(p);
      this.#log.info({ driver: info.name, version: info.pluginVersion, pid: launched.pid, restarts: this.restarts }, 'driver plugin running');
      this.#wake();
      void launched.exited.then(() => this.#onExit(launched));
    } catch (err) {
      await launched.stop().catch(() => undefined);
      throw err;
    }
  }

  /**
   * A plugin that never started still names a driver: an unhealthy one
   * (driverInfo gives the reason), under its file name less Nomad's
   * `nomad-driver-` prefix.
   */
  standIn(): void {
    if (this.driver) return;
    this.driverName = this.entry.name.replace(/^nomad-driver-/, '');
    const none: Capabilities = {
      sendSignals: false,
      exec: false,
      fsIsolation: 'none',
      netIsolationModes: [],
      mustInitiateNetwork: false,
      mountConfigs: 'none',
      disableLogCollection: false,
      dynamicWorkloadUsers: false,
    };
    this.driver = this.#newDriver(this.driverName, none, undefined);
  }

  #newDriver(name: string, caps: Capabilities, taskSchema: Spec | undefined): ExternalTaskDriver {
    return new ExternalTaskDriver({
      name,
      slot: this,
      capabilities: caps,
      taskConfigSchema: taskSchema,
      encodeTaskConfig: this.#m.opts.encodeConfig,
      ...(this.#m.opts.defaultTaskPath ? { defaultPath: this.#m.opts.defaultTaskPath } : {}),
      ...(this.#m.opts.cgroups ? { cgroups: this.#m.opts.cgroups } : {}),
      logmon: this.#m.logmon,
      logger: this.#log,
      node: this.#m.opts.node,
      now: () => this.#m.clock.now(),
    });
  }

  #followStreams(p: DriverPlugin): void {
    this.#streams?.abort();
    const ac = new AbortController();
    this.#streams = ac;
    void (async () => {
      try {
        for await (const fp of p.fingerprint({ signal: ac.signal })) {
          const changed = fp.health !== this.#fingerprint?.health || JSON.stringify(fp.attributes) !== JSON.stringify(this.#fingerprint?.attributes);
          this.#fingerprint = fp;
          if (changed) this.#m.changed();
        }
      } catch (err) {
        if (!ac.signal.aborted && !isPluginShutDown(err)) this.#log.warn({ err: describeError(err) }, 'fingerprint stream failed');
      }
    })();
    void (async () => {
      try {
        for await (const ev of p.taskEvents({ signal: ac.signal })) this.driver?.emitTaskEvent(ev);
      } catch (err) {
        if (!ac.signal.aborted && !isPluginShutDown(err)) this.#log.warn({ err: describeError(err) }, 'task event stream failed');
      }
    })();
  }

  /** The process exited: calls now fail with "plugin shut down"; relaunch with backoff unless stopping. */
  #onExit(launched: LaunchedDriverPlugin): void {
    if (this.#launched !== launched || this.state === 'stopped') return;
    this.#streams?.abort();
    this.#ready = undefined;
    this.#fingerprint = undefined;
    this.state = 'restarting';
    this.#log.warn({ pid: launched.pid }, 'driver plugin exited; restarting it');
    this.#m.changed();
    void this.#relaunchLoop();
  }

  async #relaunchLoop(): Promise<void> {
    const policy = this.#m.opts.backoff ?? BACKOFF.pluginDial;
    for (let attempt = 1; this.state === 'restarting'; attempt++) {
      try {
        await this.#m.clock.sleep(backoffDelay(policy, attempt), this.#m.stopSignal);
      } catch {
        return;
      }
      this.restarts += 1;
      try {
        await this.launch(this.#m.stopSignal);
        this.#m.changed();
        return;
      } catch (err) {
        this.lastError = describeError(err);
        this.#log.error({ err: this.lastError, attempt }, 'driver plugin restart failed');
        if (err instanceof DriverManagerError && err.code === 'DRIVER_MANAGER_CONFIG_INVALID') {
          this.state = 'failed';
          this.#wake();
          return;
        }
      }
    }
  }

  async stop(): Promise<void> {
    this.state = 'stopped';
    this.#streams?.abort();
    this.#ready = undefined;
    this.#wake();
    await this.driver?.shutdown();
    await this.#launched?.stop().catch((err: unknown) => this.#log.warn({ err: describeError(err) }, 'driver plugin did not stop cleanly'));
  }
}

/** The config path an encoder error names (`config.x.y`), when it names one. */
function configPathOf(err: unknown): string {
  const p = (err as { path?: unknown }).path;
  if (typeof p === 'string') return p.startsWith('config') ? p : p ? `config.${p}` : 'config';
  if (Array.isArray(p)) return ['config', ...p.map(String)].join('.');
  return 'config';
}

/**
 * Runs the driver plugins. Lifecycle: start() launches every plugin once
 * (a plugin that fails is logged and left out; the others run), drivers()
 * gives the running ones by driver name, stop() stops them (their tasks keep
 * running) and is safe twice.
 */
export class DriverManager {
  readonly opts: DriverManagerOptions;
  readonly clock: Clock;
  readonly logmon: LogMonitor;
  readonly #instances: PluginInstance[] = [];
  readonly #stop = new AbortController();
  readonly #log: Logger;

  constructor(opts: DriverManagerOptions) {
    this.opts = opts;
    this.clock = opts.clock ?? systemClock;
    this.logmon = new LogMonitor({ socketPath: opts.logmonSocket ?? path.join(tmpdir(), `berth-logmon-${process.pid}.sock`), script: EXECUTOR_PATH });
    this.#log = opts.logger.child({ component: 'driver-manager' });
  }

  get stopSignal(): AbortSignal {
    return this.#stop.signal;
  }

  changed(): void {
    try {
      this.opts.onChange?.();
    } catch (err) {
      this.#log.warn({ err: describeError(err) }, 'driver change listener failed');
    }
  }

  /**
   * Launches every plugin (in parallel) and resolves once each is running or
   * has failed; never rejects. Failures are logged with the plugin's name
   * and listed in the result.
   */
  async start(): Promise<{ failed: Array<{ plugin: string; error: string }> }> {
    const failed: Array<{ plugin: string; error: string; code?: string }> = [];
    await Promise.all(
      this.opts.plugins.map(async (entry) => {
        const inst = new PluginInstance(entry, this, this.#log);
        this.#instances.push(inst);
        const signal = anySignal([this.#stop.signal, AbortSignal.timeout(this.opts.launchTimeoutMs ?? 30_000)]);
        try {
          await inst.launch(signal);
        } catch (err) {
          inst.state = 'failed';
          inst.lastError = describeError(err);
          failed.push({ plugin: entry.name, error: inst.lastError, ...(err instanceof DriverManagerError ? { code: err.code } : {}) });
          this.#log.error({ plugin: entry.name, file: entry.file, err: inst.lastError }, 'driver plugin not loaded');
          inst.standIn();
        }
      }),
    );
    // A plugin block its schema refuses is the user's mistake in the agent's config: the agent does not start (as Nomad).
    const refused = failed.find((f) => f.code === 'DRIVER_MANAGER_CONFIG_INVALID');
    if (refused) {
      await this.stop();
      throw new DriverManagerError('DRIVER_MANAGER_CONFIG_INVALID', refused.error);
    }
    return { failed: failed.map(({ plugin, error }) => ({ plugin, error })) };
  }

  /** The drivers of the plugins that started, by driver name (a later plugin with the same name wins). */
  drivers(): Map<string, ExternalTaskDriver> {
    const out = new Map<string, ExternalTaskDriver>();
    for (const inst of this.#instances) if (inst.driver && inst.driverName) out.set(inst.driverName, inst.driver);
    return out;
  }

  /** Each plugin's state, for status output and tests. */
  status(): Array<{ plugin: string; driver?: string; state: InstanceState; restarts: number; error?: string }> {
    return this.#instances.map((i) => ({
      plugin: i.entry.name,
      ...(i.driverName ? { driver: i.driverName } : {}),
      state: i.state,
      restarts: i.restarts,
      ...(i.lastError ? { error: i.lastError } : {}),
    }));
  }

  /**
   * Stops every plugin (tasks keep running; a later agent recovers them).
   * The log monitor stays for tasks that keep running; when the drivers
   * hold none (an agent that stopped its allocations, a dev agent's
   * Ctrl-C), it is stopped too, so nothing of the agent is left. Safe twice.
   */
  async stop(): Promise<void> {
    if (this.#stop.signal.aborted) return;
    this.#stop.abort();
    // Counted before the plugins go: only a task whose process still runs has output left to collect
    // (an exited task not yet destroyed, or one whose destroy failed, has none).
    const held = this.#instances.reduce((n, i) => n + (i.driver?.taskIds().filter((id) => runs(i.driver, id)).length ?? 0), 0);
    try {
      await Promise.all(this.#instances.map((i) => i.stop()));
    } finally {
      if (held === 0) this.logmon.stop();
      else this.#log.info({ tasks: held }, 'the log monitor keeps collecting the output of tasks left running');
    }
  }
}

/** Whether the driver's task `id` still runs (an unknown state counts as running: its output may still flow). */
function runs(driver: { inspectTask(id: string): { state: string } } | undefined, id: string): boolean {
  try {
    return driver?.inspectTask(id).state !== 'exited';
  } catch {
    return true;
  }
}
