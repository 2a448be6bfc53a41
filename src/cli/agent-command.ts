// `berth agent`: runs a Berth agent in the foreground until SIGINT/SIGTERM
// (main owns the signal handlers; the command sees them through ctx.signal).

import { spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Command, Option } from 'commander';
import type * as AgentModule from '../agent/index.js';
import type { AgentConfig, AgentMode } from '../agent/index.js';
import { BerthError, createLogger } from '../lib/index.js';
import type { CommandContext } from './csi-command.js';
import { packageFile } from './package-file.js';
import { UsageError } from './usage-error.js';

const BERTH_BIN = packageFile('bin/berth.js');

interface AgentFlags {
  dev?: boolean;
  server?: boolean;
  client?: boolean;
  dataDir?: string;
  port?: string;
  config?: string;
  serverAddress?: string[];
  nodeName?: string;
  etcdEndpoints?: string;
  logLevel?: string;
}

/** Builds `berth agent`. */
export function agentCommand(ctx: CommandContext): Command {
  const cmd = new Command('agent')
    .description('Run a Berth agent: server and client in one process (--dev), a server, or a client node')
    .option('--dev', 'server and client in one process, data in a fresh temp dir, API on 127.0.0.1, raw_exec and exec enabled, a random management token')
    .option('--server', 'run a server (needs --config with tokens and a data dir)')
    .option('--client', 'run a client node (needs --server-address and a node token in --config)')
    .option('--data-dir <dir>', 'state directory (dev: kept after exit; default a temp dir removed on exit)')
    .option('--port <n>', 'HTTP port (default: the config\'s ports.http, else 4646)')
    .option('--config <file>', 'agent config file, HCL or JSON')
    .option(
      '--server-address <url>',
      "the server's HTTP address for a client node; several servers of a cluster: repeat the flag or separate with commas (overrides client { server_address } and servers)",
      (v: string, prev: string[] | undefined) => [...(prev ?? []), ...v.split(',').map((a) => a.trim()).filter(Boolean)],
    )
    .option('--node-name <name>', 'this node\'s name (overrides client { node_name }; default the host name)')
    .option('--etcd-endpoints <urls>', 'a server keeps its state in etcd at these comma-separated client URLs (overrides server { store { etcd { endpoints } } })')
    .addOption(new Option('--log-level <level>', 'agent log level (the log goes to <data-dir>/agent.log, or log_file)').choices(['fatal', 'error', 'warn', 'info', 'debug', 'trace']))
    .action(async (flags: AgentFlags) => runAgent(ctx, flags));
  cmd.addHelpText(
    'after',
    `
Once ready the agent prints (and, in dev mode, writes to <data-dir>/agent.env, mode 0600):
  BERTH_ADDR=http://127.0.0.1:4646
  BERTH_TOKEN=<management token>          (dev mode)

Stopping: Ctrl-C (SIGINT) stops every allocation (workloads first, then plugin
tasks), unmounts and releases their volumes, and exits 0. SIGTERM does the same
in dev mode; a server or client agent given SIGTERM exits leaving tasks running
(a restart picks them up). A second Ctrl-C exits at once.

A client agent's own listener (alloc logs, alloc exec, /metrics) takes the
tokens of its config's tokens block, and asks its server about any other.

Config file (HCL; JSON with the same names also works):
  data_dir  = "/var/lib/berth"
  bind_addr = "127.0.0.1"
  ports { http = 4646 }
  tokens {
    management = ["..."]          # or management_file = "mgmt.tokens", one per line
    read_only  = ["..."]
    node       = ["..."]
  }
  server {
    heartbeat_ttl = "30s"
    heartbeat_grace = "10s"           # how late a heartbeat may come before its node is marked down
    max_heartbeats_per_second = 100   # all nodes' heartbeats a second: the TTL grows to keep to it
    store { etcd { endpoints = ["http://10.0.0.1:2379", "http://10.0.0.2:2379"]  prefix = "/berth"  write_timeout = "5s" } }
  }                               # no store block: the state is <data_dir>/server/state.db
  client {
    node_name      = "node-1"
    server_address = "http://127.0.0.1:4646"
    # servers      = ["http://10.0.0.1:4646", "http://10.0.0.2:4646"]   # a cluster: fail over in order
    token          = "..."        # a node token (or token_file)
    host_volume "scratch" { path = "/srv/scratch" }
    options = { "driver.raw_exec.enable" = true }   # an HCL map, as in Nomad
  }
  csi { probe_interval = "30s"  health_timeout = "2m" }
  log_level = "info"

Examples:
  $ berth agent --dev
  $ berth agent --dev --data-dir /tmp/berth --port 4747
  $ berth agent --server --config server.hcl
  $ berth agent --server --config server.hcl --etcd-endpoints http://10.0.0.1:2379,http://10.0.0.2:2379
  $ berth agent --client --server-address http://10.0.0.5:4646 --config client.hcl
  $ berth agent --client --server-address http://10.0.0.1:4646,http://10.0.0.2:4646,http://10.0.0.3:4646 --config client.hcl

Exit codes:
  0    stopped by SIGINT or SIGTERM (SIGINT: every allocation stopped and released)
  1    SIGINT could not stop or release some allocation (named on stdout)
  1    the agent failed to start (port in use, server unreachable at start, ...)
  2    bad usage or a malformed config file (file:line:col)
  130  a second SIGINT forced the exit`,
  );
  return cmd;
}

function modeOf(flags: AgentFlags): AgentMode {
  const chosen = (['dev', 'server', 'client'] as const).filter((m) => flags[m]);
  if (chosen.length === 0) throw new UsageError('choose how to run: --dev, --server or --client');
  if (chosen.length > 1) throw new UsageError(`--${chosen.join(' and --')} cannot be combined (--dev runs a server and a client in one process)`);
  return chosen[0] as AgentMode;
}

function portOf(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!/^\d+$/.test(text) || n > 65535) throw new UsageError(`--port must be a port number (0-65535), got "${text}"`);
  return n;
}

/**
 * The agent's parts (server, client, their dependencies) load only when an
 * agent starts: every other command starts without them, several hundred
 * milliseconds sooner.
 */
const loadAgentModule = (): Promise<typeof AgentModule> => import('../agent/index.js');

async function runAgent(ctx: CommandContext, flags: AgentFlags): Promise<void> {
  const { Agent, emptyAgentConfig, mountsUnder, leftBehind, describeLeftBehind, ETCD_URL, startPhase } = await loadAgentModule();
  const evaluated = performance.now();
  const mode = modeOf(flags);
  const port = portOf(flags.port);
  if (flags.serverAddress?.length && mode !== 'client') throw new UsageError('--server-address is for --client');
  if (mode !== 'dev' && !flags.config) throw new UsageError(`--${mode} needs --config <file>`);
  const config: AgentConfig = flags.config ? await loadConfig(flags.config) : emptyAgentConfig();
  if (flags.serverAddress?.length) {
    for (const a of flags.serverAddress) {
      if (!/^https?:\/\/\S+$/.test(a)) throw new UsageError(`--server-address must be an http:// URL, got "${a}"`);
    }
    config.client.serverAddress = flags.serverAddress[0] as string;
    if (flags.serverAddress.length > 1) config.client.servers = [...new Set(flags.serverAddress)];
    else delete config.client.servers;
  }
  if (flags.nodeName) config.client.nodeName = flags.nodeName;
  if (flags.etcdEndpoints !== undefined) {
    if (mode !== 'server') throw new UsageError('--etcd-endpoints is for --server');
    const endpoints = flags.etcdEndpoints.split(',').map((e) => e.trim()).filter(Boolean);
    const bad = endpoints.find((e) => !ETCD_URL.test(e));
    if (endpoints.length === 0 || bad !== undefined) throw new UsageError(`--etcd-endpoints takes comma-separated etcd client URLs such as http://127.0.0.1:2379${bad ? `, got "${bad}"` : ''}`);
    config.server.etcd = { ...config.server.etcd, endpoints };
  }
  if (mode === 'client' && !config.client.serverAddress) throw new UsageError('--client needs --server-address <url> (or client { server_address } in the config)');
  if (mode === 'client' && !config.client.token) throw new UsageError('--client needs a node token: client { token = "..." } or token_file in the config');
  if (mode === 'server' && config.tokens.management.length === 0) {
    throw new UsageError('--server needs at least one management token: tokens { management = ["..."] } or management_file in the config');
  }

  const explicitDir = flags.dataDir ?? config.dataDir;
  if (mode !== 'dev' && !explicitDir) throw new UsageError(`--${mode} needs a data dir: --data-dir or data_dir in the config`);
  const dataDir = path.resolve(explicitDir ?? mkdtempSync(path.join(tmpdir(), 'berth-dev-')));
  const temporary = !explicitDir;
  mkdirSync(dataDir, { recursive: true });
  const logFile = config.logFile ?? path.join(dataDir, 'agent.log');
  const logStream = createWriteStream(logFile, { flags: 'a', mode: 0o600 });
  // Parts may log while they close (a node connection's last words); the stream is never ended, only flushed.
  logStream.on('error', () => undefined);
  const logger = createLogger({ level: flags.logLevel ?? config.logLevel ?? 'info', destination: logStream });

  const warm = ctx.warmStart;
  // Which way this process's code was loaded (src/warm-start/), and why: a start slower than it should be says so here.
  if (warm) logger.debug({ path: warm.path, reason: warm.reason }, 'warm start');
  startPhase(logger, 'agent modules evaluated', evaluated);
  startPhase(logger, 'config read, log opened');
  const say = (line: string): void => ctx.io.stdout(`${line}\n`);
  say(`==> Starting Berth agent (${mode === 'dev' ? 'dev mode: server and client in one process' : mode})`);
  say(`    Data dir: ${dataDir}${temporary ? ' (temporary, removed on exit)' : ''}`);
  say(`    Log file: ${logFile}`);

  const agent = new Agent({ mode, config, dataDir, logger, berthBin: BERTH_BIN, version: berthVersion(),
    ...(port !== undefined ? { port } : {}),
    ...(warm ? { onWarm: () => logger.debug({ result: warm.saveCache() }, 'warm start cache') } : {}),
  });
  let stopped = false;
  let left: string[] = [];
  const cleanup = async (drain: boolean): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await agent.stop({ drain });
    // Read before a temporary data dir goes: what of it still runs or is mounted.
    left = describeLeftBehind(await settledLeftovers(() => leftBehind(dataDir)));
    if (temporary) removeDataDir(ctx, dataDir, mountsUnder);
  };
  try {
    const addr = await agent.start();
    say(`==> Berth agent running${mode === 'client' ? `; node ${agent.client?.nodeId ?? ''} joins ${(config.client.servers ?? [config.client.serverAddress ?? '']).join(', ')}` : ''}`);
    if (mode === 'dev') {
      // Paths that exist wherever berth is installed: the package's own examples, and files job init writes.
      say('    Try: export $(cat ' + path.join(dataDir, 'agent.env') + ') && berth job init && berth job run example.nomad.hcl');
      say('    The CSI hostpath plugin: berth job run ' + packageFile('examples/hostpath-plugin.hcl'));
    }
    const lines = [`BERTH_ADDR=${addr.url}`, ...(addr.managementToken ? [`BERTH_TOKEN=${addr.managementToken}`] : [])];
    if (mode === 'dev') writeFileSync(path.join(dataDir, 'agent.env'), `${lines.join('\n')}\n`, { mode: 0o600 });
    for (const line of lines) say(line);
    startPhase(logger, 'ready lines printed');
  } catch (err) {
    await cleanup(false);
    throw err;
  }

  await new Promise<void>((resolve) => {
    if (ctx.signal.aborted) resolve();
    else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  const received = (ctx.signal.reason as { signal?: string } | undefined)?.signal ?? 'SIGINT';
  const drain = mode === 'dev' || received === 'SIGINT';
  say(`==> Caught ${received}; ${drain ? 'stopping every allocation and releasing its volumes' : 'stopping the agent, leaving tasks running'}`);
  await cleanup(drain);
  const problems = agent.client?.drainProblems ?? [];
  if (!drain && left.length) {
    // SIGTERM leaves tasks running by design: say which processes (and mounts) stay, for whoever looks.
    say(`==> Left running by design (a restarted agent reattaches to them): ${left.length} process(es)/mount(s) of ${dataDir}:`);
    for (const l of left) say(`    ${l}`);
  }
  if (drain && (problems.length || left.length)) {
    // Never a clean stop that was not made: an operator draining the node must know what still runs or holds a volume.
    if (problems.length) {
      say(`==> Berth agent stopped, but ${problems.length} allocation(s) could not be stopped or released (their tasks may still run and their volumes stay mounted and claimed):`);
      for (const p of problems) say(`    ${p}`);
    }
    if (left.length) {
      say(`==> Berth agent stopped, but it left ${left.length} process(es)/mount(s) of ${dataDir} behind:`);
      for (const l of left) say(`    ${l}`);
    }
    throw new BerthError(
      'AGENT_DRAIN_INCOMPLETE',
      `the drain did not finish: ${problems.length} allocation(s) not stopped or released, ${left.length} process(es)/mount(s) left (see above)`,
    );
  }
  say('==> Berth agent stopped');
}

/**
 * What is left once processes that were told to end (a log monitor's
 * SIGTERM, an executor leaving after its task) had two seconds to do so:
 * read again every 100 ms until nothing is left or the time is up.
 */
async function settledLeftovers<T extends { processes: unknown[] }>(read: () => T): Promise<T> {
  const deadline = Date.now() + 2_000;
  let left = read();
  while (left.processes.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    left = read();
  }
  return left;
}

async function loadConfig(file: string): Promise<AgentConfig> {
  const { AgentConfigError, loadAgentConfig } = await loadAgentModule();
  try {
    return await loadAgentConfig(file);
  } catch (err) {
    // A config that cannot be read is bad usage like a malformed one (exit 2).
    if (err instanceof AgentConfigError) throw new UsageError(err.message);
    throw err;
  }
}

function removeDataDir(ctx: CommandContext, dir: string, mountsUnder: (dir: string) => string[]): void {
  // A bind mount left below the dir would make rm -r delete a volume's data: unmount first, and never remove through a mount.
  for (const m of mountsUnder(dir)) spawnSync('umount', [m], { stdio: 'ignore' });
  const left = mountsUnder(dir);
  if (left.length) {
    ctx.io.stderr(`warning: ${left.length} mount(s) remain under ${dir}; it was not removed\n`);
    return;
  }
  if (existsSync(dir)) rmSync(dir, { recursive: true, force: true });
}

/** Berth's release (package.json), as /v1/agent/self tells it; `unknown` when the file cannot be read. */
function berthVersion(): string {
  try {
    return (JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { version?: string }).version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
