// `berth driver serve raw_exec|exec`: Berth's own task drivers served as
// external plugins over Nomad's driver plugin protocol (go-plugin over gRPC),
// what an agent launches from plugin_dir or with driver.<name>.mode = "external".
// `berth driver-plugin PATH ...`: the launcher for driver authors, which
// starts one plugin binary and calls one RPC at a time (Nomad's plugin launcher).

import { readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Command, Option } from 'commander';
import { BuiltinDriverPlugin, createDrivers, DOCKER_CONFIG_SPEC, DOCKER_TASK_CONFIG_SPEC, DockerDriver, type TaskDriver } from '../client/index.js';
import { createLogger, describeError, type Logger } from '../lib/index.js';
import * as Plugins from '../plugins/index.js';
import type { CommandContext } from './command-context.js';
import { UsageError } from './usage-error.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const BUILTIN = ['raw_exec', 'exec', 'docker'] as const;

// Static imports on purpose: this file is loaded only for `driver` and
// `driver-plugin`, and the bundler then keeps only the parts of the client
// these use (a plugin process should start fast: the agent waits for it).
const loadPlugins = async (): Promise<typeof Plugins> => Plugins;

interface ServeOptions {
  stateDir?: string;
  logLevel: string;
}

/** Builds `berth driver` (serve). */
export function driverCommand(ctx: CommandContext): Command {
  const driver = new Command('driver').description("Serve Berth's own task drivers (raw_exec, exec, docker) as external driver plugins");
  driver
    .command('serve')
    .description("Serve a built-in driver (raw_exec, exec or docker) over Nomad's driver plugin protocol; an agent launches it")
    .argument('<driver>', `the driver to serve: ${BUILTIN.join(' or ')}`)
    .option('--state-dir <dir>', "where the tasks' executor state lives: the same dir across plugin restarts lets a new plugin recover the tasks (default: <tmp>/berth-driver)")
    .addOption(new Option('--log-level <level>', 'log level (JSON lines on stderr, which the agent copies into its log)').choices(LOG_LEVELS).default('info'))
    .addHelpText(
      'after',
      `
An agent starts this command itself: from an executable in its plugin_dir
(a wrapper script running \`berth driver serve raw_exec\`), or when its
config says client { options = { "driver.raw_exec.mode" = "external" } }.
Run by hand it refuses to start ("This binary is a plugin..."), as every
go-plugin does without the agent's handshake environment.

Like every go-plugin it ignores SIGINT (the agent decides when it stops)
and exits on SIGTERM or when the agent asks it to shut down. Its tasks keep
running; the next plugin started with the same --state-dir recovers them.

Examples:
  $ printf '#!/bin/sh\\nexec berth driver serve raw_exec --state-dir /var/lib/berth/raw_exec\\n' > /opt/berth/plugins/raw_exec
  $ chmod +x /opt/berth/plugins/raw_exec`,
    )
    .action(async (name: string, opts: ServeOptions) => serveBuiltin(ctx, name, opts));
  return driver;
}

async function serveBuiltin(ctx: CommandContext, name: string, opts: ServeOptions): Promise<void> {
  if (!(BUILTIN as readonly string[]).includes(name)) throw new UsageError(`unknown driver "${name}": choose ${BUILTIN.join(' or ')}`);
  const logger = createLogger({ level: opts.logLevel, destination: { write: (line: string) => ctx.io.stderr(ctx.redactor.apply(line)) } });
  const { serveDriverPlugin, decodeMsgpack } = await loadPlugins();
  const stateDir = path.resolve(opts.stateDir ?? path.join(tmpdir(), 'berth-driver'));
  const drivers = createDrivers({ stateDir, logger });
  const chosen = drivers.get(name) as TaskDriver;
  for (const [other, d] of drivers) if (other !== name) await d.shutdown();
  const impl = new BuiltinDriverPlugin(chosen, {
    decodeTaskConfig: decodeMsgpack,
    // docker is configured by the agent's `plugin "docker" { config {} }`, which SetConfig brings.
    ...(name === 'docker'
      ? {
          configSchema: DOCKER_CONFIG_SPEC,
          taskConfigSchema: DOCKER_TASK_CONFIG_SPEC,
          configure: (config: Record<string, unknown>) => new DockerDriver({ stateDir: path.join(stateDir, 'docker'), pluginConfig: config, logger }),
        }
      : {}),
  });
  const server = await serveDriverPlugin(impl, { logger });
  const log = logger.child({ component: 'driver-serve', driver: name });
  log.info({ socket: server.socketPath, stateDir }, 'serving driver plugin');
  await untilStopped(ctx.signal, server.stopped);
  log.info('driver plugin stopping (tasks keep running)');
  await server.stop();
  await impl.shutdown();
}

/**
 * Resolves when the host stopped the plugin or on SIGTERM. A plugin ignores
 * SIGINT by design (go-plugin): main turns SIGINT into an abort of
 * ctx.signal, so after that this listens for SIGTERM itself.
 */
function untilStopped(signal: AbortSignal, stopped: Promise<void>): Promise<void> {
  return new Promise((resolve) => {
    void stopped.then(resolve);
    const onAbort = (): void => {
      const reason = signal.reason as { signal?: string } | undefined;
      if (reason?.signal === 'SIGINT') {
        process.once('SIGTERM', () => resolve());
        return;
      }
      resolve();
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}

// ---------------------------------------------------------------------------
// The launcher.

const OPS = ['info', 'schema', 'capabilities', 'fingerprint', 'start', 'stop', 'stats', 'exec'] as const;
type Op = (typeof OPS)[number];

interface LauncherOptions {
  config?: string;
  json?: boolean;
  task?: string;
  handle?: string;
  handleOut?: string;
  timeout: string;
  logLevel: string;
}

/** Builds `berth driver-plugin PATH [--config FILE] <op>`. */
export function driverPluginCommand(ctx: CommandContext): Command {
  return new Command('driver-plugin')
    .description('Start one task-driver plugin binary and call it by hand (for driver authors)')
    .argument('<path>', 'the plugin executable')
    .argument('<op>', OPS.join('|'))
    .argument('[command...]', 'exec: the command to run in the task')
    .option('--config <file>', "the plugin's config {} body, HCL or JSON, decoded against its ConfigSchema and sent with SetConfig")
    .option('--task <file>', 'start: the task, JSON {"name", "config": {...}, "env": {...}, "allocDir"?}')
    .option('--handle <file>', 'stop|stats|exec: a handle file written by start (the task is recovered from it)')
    .option('--handle-out <file>', 'start: write the task handle here (default: printed)')
    .option('--timeout <duration>', 'stop: grace before the kill', '5s')
    .option('--json', 'print one JSON document')
    .addOption(new Option('--log-level <level>', "the plugin's and the launcher's log level (stderr)").choices(LOG_LEVELS).default('warn'))
    .addHelpText(
      'after',
      `
Each call starts the plugin with the go-plugin handshake, checks PluginInfo
(type driver), sends SetConfig, runs one operation and shuts the plugin down.
A task started with "start" keeps running (the plugin's own executor or
runtime holds it); later calls recover it from its handle.

  info          PluginInfo: type, name, versions
  schema        ConfigSchema and TaskConfigSchema (hclspec trees)
  capabilities  Capabilities, every field
  fingerprint   the first fingerprint: health and attributes
  start         StartTask (--task FILE), prints or writes the handle
  stop          RecoverTask then StopTask (--handle FILE), then DestroyTask
  stats         RecoverTask then one TaskStats sample
  exec          RecoverTask then ExecTask with the command after --

Examples:
  $ berth driver-plugin ./my-driver info
  $ berth driver-plugin ./my-driver --config driver.hcl schema --json
  $ berth driver-plugin ./my-driver start --task task.json --handle-out h.json
  $ berth driver-plugin ./my-driver exec --handle h.json -- cat /etc/hostname
  $ berth driver-plugin ./my-driver stop --handle h.json`,
    )
    .action(async (pluginPath: string, op: string, command: string[], opts: LauncherOptions) => runLauncher(ctx, pluginPath, op, command, opts));
}

async function runLauncher(ctx: CommandContext, pluginPath: string, opArg: string, command: string[], opts: LauncherOptions): Promise<void> {
  if (!(OPS as readonly string[]).includes(opArg)) throw new UsageError(`unknown operation "${opArg}": choose ${OPS.join(', ')}`);
  const op = opArg as Op;
  if (op === 'start' && !opts.task) throw new UsageError('start needs --task <file>');
  if ((op === 'stop' || op === 'stats' || op === 'exec') && !opts.handle) throw new UsageError(`${op} needs --handle <file> (written by start)`);
  if (op === 'exec' && command.length === 0) throw new UsageError('exec needs a command after --');
  const logger = createLogger({ level: opts.logLevel, destination: { write: (line: string) => ctx.io.stderr(ctx.redactor.apply(line)) } });
  const plugins = await loadPlugins();
  const configBody = opts.config ? await readConfigBody(opts.config) : {};
  const { driver, process: proc } = await plugins.launchDriverPlugin({ path: path.resolve(pluginPath), logger, signal: ctx.signal });
  const print = (human: string, json: unknown): void => ctx.io.stdout(opts.json ? `${JSON.stringify(json, jsonBytes, 2)}\n` : `${human}\n`);
  try {
    const info = await driver.pluginInfo({ signal: ctx.signal });
    if (info.type !== 'driver') throw new UsageError(`${pluginPath} is a ${info.type} plugin, not a task driver`);
    const schema = await driver.configSchema({ signal: ctx.signal });
    await driver.setConfig({ apiVersion: info.pluginApiVersions[0] ?? 'v0.1.0', pluginConfig: plugins.encodeConfig(schema, configBody, { path: 'config' }) }, { signal: ctx.signal });
    switch (op) {
      case 'info':
        print(`Name         = ${info.name}\nType         = ${info.type}\nVersion      = ${info.pluginVersion}\nAPI versions = ${info.pluginApiVersions.join(', ')}`, info);
        break;
      case 'schema': {
        const task = await driver.taskConfigSchema({ signal: ctx.signal });
        print(`Config schema:\n${JSON.stringify(schema ?? null, null, 2)}\nTask config schema:\n${JSON.stringify(task ?? null, null, 2)}`, { configSchema: schema ?? null, taskConfigSchema: task ?? null });
        break;
      }
      case 'capabilities': {
        const c = await driver.capabilities({ signal: ctx.signal });
        print(
          Object.entries(c)
            .map(([k, v]) => `${k.padEnd(21)}= ${Array.isArray(v) ? v.join(', ') : String(v)}`)
            .join('\n'),
          c,
        );
        break;
      }
      case 'fingerprint': {
        const ac = new AbortController();
        for await (const fp of driver.fingerprint({ signal: AbortSignal.any([ac.signal, ctx.signal]) })) {
          const attrs = Object.entries(fp.attributes).map(([k, a]) => `  ${k} = ${String(a.string ?? a.int ?? a.float ?? a.bool ?? '')}`);
          print(`Health      = ${fp.health}\nDescription = ${fp.healthDescription}\nAttributes:\n${attrs.join('\n')}`, fp);
          ac.abort();
          break;
        }
        break;
      }
      case 'start': {
        const handle = await startFromFile(driver, plugins, opts.task as string, ctx.signal);
        const text = JSON.stringify(handle, jsonBytes, 2);
        if (opts.handleOut) await writeFile(opts.handleOut, `${text}\n`, { mode: 0o600 });
        print(opts.handleOut ? `Task ${handle.config.id} started; handle written to ${opts.handleOut}` : text, opts.handleOut ? { taskId: handle.config.id, handle: opts.handleOut } : handle);
        break;
      }
      case 'stop':
      case 'stats':
      case 'exec': {
        const handle = reviveHandle(JSON.parse(await readFile(opts.handle as string, 'utf8')) as Record<string, unknown>);
        await driver.recoverTask(handle, { signal: ctx.signal });
        const id = handle.config.id;
        if (op === 'stop') {
          await driver.stopTask(id, durationMs(opts.timeout), 'SIGTERM', { signal: ctx.signal });
          const exit = await driver.waitTask(id, { signal: ctx.signal });
          await driver.destroyTask(id, true, { signal: ctx.signal });
          print(`Task ${id} stopped: exit code ${exit.exitCode}, signal ${exit.signal}`, { taskId: id, exit });
        } else if (op === 'stats') {
          const ac = new AbortController();
          for await (const u of driver.taskStats(id, 1000, { signal: AbortSignal.any([ac.signal, ctx.signal]) })) {
            const cpu = u.resourceUsage.cpu;
            const mem = u.resourceUsage.memory;
            print(`CPU percent = ${cpu?.percent ?? 0}\nCPU ticks   = ${cpu?.totalTicks ?? 0}\nMemory RSS  = ${mem?.rss ?? 0}\nPids        = ${Object.keys(u.pids).join(', ')}`, u);
            ac.abort();
            break;
          }
        } else {
          const r = await driver.execTask(id, command, 30_000, { signal: ctx.signal });
          if (opts.json) print('', { exitResult: r.exitResult, stdout: Buffer.from(r.stdout).toString('utf8'), stderr: Buffer.from(r.stderr).toString('utf8') });
          else {
            ctx.io.stdout(Buffer.from(r.stdout).toString('utf8'));
            ctx.io.stderr(Buffer.from(r.stderr).toString('utf8'));
          }
          ctx.state.exitCode = r.exitResult.exitCode;
        }
        break;
      }
    }
  } finally {
    await proc.shutdown().catch((err: unknown) => logger.warn({ err: describeError(err) }, 'the plugin did not stop cleanly'));
  }
}

/** The `config {}` body of a plugin config file: HCL (in hcl2json's shape) or JSON; a top-level `config` block is unwrapped. */
async function readConfigBody(file: string): Promise<Record<string, unknown>> {
  const text = await readFile(file, 'utf8');
  let body: Record<string, unknown>;
  if (/\.json$/i.test(file) || text.trimStart().startsWith('{')) body = JSON.parse(text) as Record<string, unknown>;
  else {
    const { evaluateConfig, toJsonShape, HclError } = await import('../hcl/index.js');
    const evaluated = evaluateConfig(file, text);
    if (evaluated.diagnostics.length) throw new HclError(evaluated.diagnostics);
    body = toJsonShape(evaluated.body);
  }
  const inner = body['config'];
  if (inner && Object.keys(body).length === 1) return (Array.isArray(inner) ? inner[0] : inner) as Record<string, unknown>;
  return body;
}

async function startFromFile(driver: Plugins.DriverPlugin, plugins: typeof Plugins, file: string, signal: AbortSignal): Promise<Plugins.TaskHandle> {
  const task = JSON.parse(await readFile(file, 'utf8')) as { name?: string; config?: Record<string, unknown>; env?: Record<string, string>; allocDir?: string };
  if (!task.name) throw new UsageError(`${file}: the task needs a "name"`);
  const schema = await driver.taskConfigSchema({ signal });
  const allocId = `launcher-${Date.now().toString(36)}`;
  const allocDir = path.resolve(task.allocDir ?? path.join(tmpdir(), 'berth-launcher', allocId));
  const { mkdir } = await import('node:fs/promises');
  const logs = path.join(allocDir, 'alloc', 'logs');
  for (const d of [logs, path.join(allocDir, task.name, 'local'), path.join(allocDir, task.name, 'secrets')]) await mkdir(d, { recursive: true });
  const stdoutPath = path.join(logs, `${task.name}.stdout.0`);
  const stderrPath = path.join(logs, `${task.name}.stderr.0`);
  for (const f of [stdoutPath, stderrPath]) await writeFile(f, '', { flag: 'a' });
  const { handle } = await driver.startTask(
    {
      id: `${allocId}/${task.name}/0`,
      jobName: 'launcher',
      jobId: 'launcher',
      taskGroupName: 'launcher',
      parentJobId: '',
      name: task.name,
      namespace: 'default',
      nodeName: 'launcher',
      nodeId: 'launcher',
      env: task.env ?? {},
      deviceEnv: {},
      devices: [],
      mounts: [],
      user: '',
      allocDir,
      msgpackDriverConfig: plugins.encodeConfig(schema, task.config ?? {}, { path: 'config' }),
      stdoutPath,
      stderrPath,
      allocId,
    },
    { signal },
  );
  return handle;
}

/** JSON.stringify replacer: byte strings as base64. */
function jsonBytes(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array) return { base64: Buffer.from(value).toString('base64') };
  if (value && typeof value === 'object' && (value as { type?: unknown }).type === 'Buffer' && Array.isArray((value as { data?: unknown }).data)) {
    return { base64: Buffer.from((value as { data: number[] }).data).toString('base64') };
  }
  return value;
}

/** A handle read back from JSON: base64 byte strings made bytes again. */
function reviveHandle(raw: Record<string, unknown>): Plugins.TaskHandle {
  const revive = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(revive);
    if (v && typeof v === 'object') {
      const o = v as Record<string, unknown>;
      if (Object.keys(o).length === 1 && typeof o['base64'] === 'string') return Buffer.from(o['base64'], 'base64');
      return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, revive(x)]));
    }
    return v;
  };
  return revive(raw) as Plugins.TaskHandle;
}

function durationMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)$/.exec(text);
  if (!m) throw new UsageError(`--timeout: "${text}" is not a duration such as 5s`);
  return Math.round(Number(m[1]) * ({ ms: 1, s: 1000, m: 60_000 } as Record<string, number>)[m[2] as string]!);
}

export type { Logger };
