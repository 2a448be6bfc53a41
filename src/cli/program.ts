// The berth command line: builds the commander program and runs it, turning
// every outcome into an exit code (see exit-codes.ts). Signal handling stays in
// main; commands learn about SIGINT/SIGTERM through an AbortSignal.

import { readFileSync } from 'node:fs';
import { Command, CommanderError, Help } from 'commander';
import type { CommandContext, RunState } from './csi-command.js';
import type { WarmStart } from './command-context.js';
import { describeFailure, EXIT } from './exit-codes.js';
import { Output, processIo, Redactor, type CliIo } from './output.js';
import { packageFile } from './package-file.js';
import { normalizeFlags } from './single-dash-flags.js';

/**
 * The top-level commands, in `berth --help` order. Each one's module (and what
 * it imports: the agent, gRPC, the spec parser, ...) loads only when that
 * command runs or its help is asked for; the others are listed from this
 * table. `term` and `description` are what the command's own definition
 * shows in `berth --help` (a test keeps them equal).
 */
export const COMMANDS: readonly TopCommand[] = [
  {
    name: 'agent',
    term: 'agent [options]',
    description: 'Run a Berth agent: server and client in one process (--dev), a server, or a client node',
    load: async (ctx) => (await import('./agent-command.js')).agentCommand(ctx),
  },
  { name: 'job', term: 'job', description: 'Run, inspect and stop jobs', load: async (ctx) => (await import('./job-command.js')).jobCommand(ctx) },
  {
    name: 'run',
    term: 'run [options] <file>',
    description: 'Alias of `job run` (as in Nomad)',
    load: async (ctx) => aliasOf((await import('./job-command.js')).jobCommand(ctx), 'run', 'Alias of `job run` (as in Nomad)'),
  },
  {
    name: 'status',
    term: 'status [options] [id]',
    description: 'Alias of `job status` (as in Nomad)',
    load: async (ctx) => aliasOf((await import('./job-command.js')).jobCommand(ctx), 'status', 'Alias of `job status` (as in Nomad)'),
  },
  {
    name: 'alloc',
    term: 'alloc',
    description: 'Inspect allocations, read their logs, run commands in their tasks',
    load: async (ctx) => (await import('./cluster-commands.js')).allocCommand(ctx),
  },
  {
    name: 'server',
    term: 'server',
    description: 'Inspect the servers of the cluster (members, leader)',
    load: async (ctx) => (await import('./server-command.js')).serverCommand(ctx),
  },
  { name: 'service', term: 'service', description: "List, inspect and delete service registrations (Nomad's native service discovery)", load: async (ctx) => (await import('./service-command.js')).serviceCommand(ctx) },
  { name: 'namespace', term: 'namespace', description: 'Create, list, inspect and delete namespaces', load: async (ctx) => (await import('./namespace-command.js')).namespaceCommand(ctx) },
  { name: 'node', term: 'node', description: 'Inspect client nodes, drain them, set their eligibility and meta', load: async (ctx) => (await import('./cluster-commands.js')).nodeCommand(ctx) },
  {
    name: 'volume',
    term: 'volume',
    description: 'Register, create and inspect CSI volumes',
    load: async (ctx) => (await import('./volume-command.js')).volumeCommand(ctx),
  },
  {
    name: 'plugin',
    term: 'plugin',
    description: 'Show the CSI plugins of the cluster, or run one that ships with Berth',
    load: async (ctx) => (await import('./plugin-command.js')).pluginCommand(ctx),
  },
  {
    name: 'system',
    term: 'system',
    description: 'Cluster maintenance: garbage collection, job summary reconciliation',
    load: async (ctx) => (await import('./system-command.js')).systemCommand(ctx),
  },
  {
    name: 'scaling',
    term: 'scaling',
    description: "Inspect the groups' scaling policies (min and max of their counts, the autoscaler's policy)",
    load: async (ctx) => (await import('./scaling-command.js')).scalingCommand(ctx),
  },
  { name: 'eval', term: 'eval', description: "Inspect the scheduler's evaluations", load: async (ctx) => (await import('./eval-command.js')).evalCommand(ctx) },
  { name: 'deployment', term: 'deployment', description: 'Follow and steer rolling updates', load: async (ctx) => (await import('./deployment-command.js')).deploymentCommand(ctx) },
  { name: 'event', term: 'event', description: 'Follow changes in the cluster', load: async (ctx) => (await import('./cluster-commands.js')).eventCommand(ctx) },
  {
    name: 'operator',
    term: 'operator',
    description: "Cluster operations: backup and restore of the server state, the scheduler's configuration, metrics",
    load: async (ctx) => (await import('./operator-command.js')).operatorCommand(ctx),
  },
  {
    name: 'csi',
    term: 'csi [options]',
    description: 'Call a CSI plugin directly, one RPC at a time (for plugin authors and debugging)',
    load: async (ctx) => (await import('./csi-command.js')).csiCommand(ctx),
  },
  {
    name: 'driver',
    term: 'driver',
    description: "Serve Berth's own task drivers (raw_exec, exec, docker) as external driver plugins",
    load: async (ctx) => (await import('./driver-command.js')).driverCommand(ctx),
  },
  {
    name: 'version',
    term: 'version [options]',
    description: 'Print the version of berth',
    load: async (ctx) => (await import('./version-command.js')).versionCommand(ctx, version()),
  },
  {
    name: 'completion',
    term: 'completion <shell>',
    description: 'Print a shell completion script (bash, zsh or fish) for every berth command and flag',
    load: async (ctx) => (await import('./completion-command.js')).completionCommand(ctx, () => buildProgram(ctx)),
  },
  {
    name: 'driver-plugin',
    term: 'driver-plugin [options] <path> <op> [command...]',
    description: 'Start one task-driver plugin binary and call it by hand (for driver authors)',
    load: async (ctx) => (await import('./driver-command.js')).driverPluginCommand(ctx),
  },
];

/** One top-level command: how `berth --help` lists it, and how to build it. */
export interface TopCommand {
  name: string;
  term: string;
  description: string;
  load: (ctx: CommandContext) => Promise<Command>;
}

/** How runCli is wired to the outside world. */
export interface RunOptions {
  /** Where output goes (default: process stdout/stderr). */
  io?: CliIo;
  /** Fires on SIGINT/SIGTERM: long-running commands stop and return 0, calls are cancelled. */
  signal?: AbortSignal;
  /** How the process's code was loaded, when src/warm-start/ loaded it (`berth agent`). */
  warmStart?: WarmStart;
}

/** `parent`'s subcommand `name`, taken out of it to stand at the top level as an alias. */
function aliasOf(parent: Command, name: string, description: string): Command {
  const index = parent.commands.findIndex((c) => c.name() === name);
  const [sub] = (parent.commands as Command[]).splice(index, 1);
  if (!sub) throw new Error(`no ${parent.name()} ${name} command to alias`);
  return sub.description(description);
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(packageFile('package.json'), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Builds the `berth` program with every command (what `berth --help` and
 * each command's help describe), or, with `only`, with that command built
 * and the others listed by name. Every command exits through exitOverride
 * (so usage errors become exit 2, not commander's 1) and writes through
 * `io`, scrubbed of the secrets given on the command line. Does not parse
 * anything.
 */
export async function buildProgram(ctx: Partial<CommandContext> = {}, opts: { only?: string } = {}): Promise<Command> {
  const full: CommandContext = {
    io: ctx.io ?? processIo,
    redactor: ctx.redactor ?? new Redactor([]),
    signal: ctx.signal ?? new AbortController().signal,
    state: ctx.state ?? {},
    ...(ctx.warmStart ? { warmStart: ctx.warmStart } : {}),
  };
  const listed = new Map<Command, string>();
  const program = new Command('berth')
    .description('Berth: a workload orchestrator with first-class CSI storage')
    .version(version(), '-V, --version')
    .enablePositionalOptions()
    .configureHelp({
      subcommandTerm(cmd: Command): string {
        return listed.get(cmd) ?? Help.prototype.subcommandTerm.call(this, cmd);
      },
    });
  const built = await Promise.all(
    COMMANDS.map(async (top) => {
      if (opts.only === undefined || opts.only === top.name) return top.load(full);
      const stub = new Command(top.name).description(top.description);
      listed.set(stub, top.term);
      return stub;
    }),
  );
  for (const cmd of built) program.addCommand(cmd);
  program.addHelpText(
    'after',
    `
Commands that talk to an agent use --address (or BERTH_ADDR, then NOMAD_ADDR;
default http://127.0.0.1:4646) and --token (or BERTH_TOKEN, then NOMAD_TOKEN);
--json prints one JSON document for scripts. Flags take one dash or two, as
Nomad's do: -detach, -json, -address=http://10.0.0.5:4646.

Examples:
  $ berth agent --dev
  $ berth job run examples/writer.hcl
  $ berth volume create examples/volume.hcl
  $ berth plugin status hostpath
  $ BERTH_TOKEN=... berth node status --json

Run \`berth <command> --help\` for a command's flags, examples and exit codes.`,
  );
  configureTree(program, full);
  return program;
}

/**
 * The top-level command `argv` runs (or asks help for: `help <command>`), if
 * any. berth itself has no option that takes a value, so it is the first word
 * that is not an option.
 */
export function invokedCommand(argv: readonly string[]): string | undefined {
  const words = argv.filter((a) => !a.startsWith('-'));
  const first = words[0] === 'help' ? words[1] : words[0];
  return COMMANDS.some((c) => c.name === first) ? first : undefined;
}

function configureTree(cmd: Command, ctx: CommandContext): void {
  cmd
    .exitOverride()
    .configureOutput({
      writeOut: (text) => ctx.io.stdout(ctx.redactor.apply(text)),
      writeErr: (text) => ctx.io.stderr(ctx.redactor.apply(text)),
    })
    .showHelpAfterError('(add --help for usage)');
  for (const sub of cmd.commands) configureTree(sub, ctx);
}

/**
 * Runs berth with `argv` (without the node and script paths) and resolves to
 * the exit code; never rejects, never calls process.exit. A long-running
 * command (plugin) resolves once `signal` fired and it has stopped.
 */
export async function runCli(argv: readonly string[], opts: RunOptions = {}): Promise<number> {
  const io = opts.io ?? processIo;
  const redactor = Redactor.fromArgv(argv, [process.env['BERTH_TOKEN'] ?? '', process.env['NOMAD_TOKEN'] ?? '']);
  const state: RunState = {};
  const signal = opts.signal ?? new AbortController().signal;
  try {
    // Only the command being run is built (and its modules loaded); the rest
    // are listed by name, as `berth --help` shows them.
    const program = await buildProgram({ io, redactor, signal, state, ...(opts.warmStart ? { warmStart: opts.warmStart } : {}) }, { only: invokedCommand(argv) ?? '' });
    await program.parseAsync(normalizeFlags(program, argv), { from: 'user' });
    return state.exitCode ?? EXIT.OK;
  } catch (err) {
    const failure = describeFailure(err, { ...state, interrupted: signal.aborted });
    const out = new Output(io, redactor, false);
    for (const line of failure.lines) out.warn(line);
    const wantsJson = state.json ?? (argv.includes('--json') || argv.includes('-json'));
    if (wantsJson && failure.exitCode !== EXIT.OK && !(err instanceof CommanderError && err.code === 'commander.helpDisplayed')) {
      out.document(failure.json);
    }
    return failure.exitCode;
  }
}
