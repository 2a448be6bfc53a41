// The berth command line: builds the commander program and runs it, turning
// every outcome into an exit code (see exit-codes.ts). Signal handling stays in
// main; commands learn about SIGINT/SIGTERM through an AbortSignal.

import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { csiCommand, type CommandContext, type RunState } from './csi-command.js';
import { describeFailure, EXIT } from './exit-codes.js';
import { Output, processIo, Redactor, type CliIo } from './output.js';
import { agentCommand } from './agent-command.js';
import { allocCommand, eventCommand, nodeCommand } from './cluster-commands.js';
import { jobCommand } from './job-command.js';
import { pluginCommand } from './plugin-command.js';
import { volumeCommand } from './volume-command.js';

/** How runCli is wired to the outside world. */
export interface RunOptions {
  /** Where output goes (default: process stdout/stderr). */
  io?: CliIo;
  /** Fires on SIGINT/SIGTERM: long-running commands stop and return 0, calls are cancelled. */
  signal?: AbortSignal;
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/**
 * Builds the `berth` program. Every command exits through exitOverride (so
 * usage errors become exit 2, not commander's 1) and writes through `io`,
 * scrubbed of the secrets given on the command line. Does not parse anything.
 */
export function buildProgram(ctx: Partial<CommandContext> = {}): Command {
  const full: CommandContext = {
    io: ctx.io ?? processIo,
    redactor: ctx.redactor ?? new Redactor([]),
    signal: ctx.signal ?? new AbortController().signal,
    state: ctx.state ?? {},
  };
  const program = new Command('berth')
    .description('Berth: a workload orchestrator with first-class CSI storage')
    .version(version(), '-V, --version')
    .enablePositionalOptions()
    .addCommand(agentCommand(full))
    .addCommand(jobCommand(full))
    .addCommand(allocCommand(full))
    .addCommand(nodeCommand(full))
    .addCommand(volumeCommand(full))
    .addCommand(pluginCommand(full))
    .addCommand(eventCommand(full))
    .addCommand(csiCommand(full));
  program.addHelpText(
    'after',
    `
Commands that talk to an agent use --address (or BERTH_ADDR, default
http://127.0.0.1:4646) and --token (or BERTH_TOKEN); --json prints one JSON
document for scripts.

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
  const redactor = Redactor.fromArgv(argv, [process.env['BERTH_TOKEN'] ?? '']);
  const state: RunState = {};
  const signal = opts.signal ?? new AbortController().signal;
  const program = buildProgram({ io, redactor, signal, state });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return state.exitCode ?? EXIT.OK;
  } catch (err) {
    const failure = describeFailure(err, { ...state, interrupted: signal.aborted });
    const out = new Output(io, redactor, false);
    for (const line of failure.lines) out.warn(line);
    const wantsJson = state.json ?? argv.includes('--json');
    if (wantsJson && failure.exitCode !== EXIT.OK && !(err instanceof CommanderError && err.code === 'commander.helpDisplayed')) {
      out.document(failure.json);
    }
    return failure.exitCode;
  }
}
