// What every command that talks to an agent shares: the --address, --token,
// --json and --namespace flags (with BERTH_* / NOMAD_* variables), the API
// client, help with examples and exit codes, colours only on a terminal, and
// the small formatting helpers of Nomad-like tables.

import type { Command } from 'commander';
import { addressSetting, namespaceSetting, normalizeAddress, tokenSetting } from './agent-address.js';
import { ApiClient, DEFAULT_ADDRESS } from './api-client.js';
import type { CommandContext } from './csi-command.js';
import { API_EXIT_CODES_HELP, STALE_WARNING } from './exit-codes.js';
import { Output, processIo } from './output.js';

export interface ApiCommandOptions {
  address?: string;
  token?: string;
  json?: boolean;
  namespace?: string;
}

/** One command run against the API. */
export interface ApiSession {
  api: ApiClient;
  out: Output;
  style: Style;
  namespace: string;
  /** SIGINT/SIGTERM. */
  signal: AbortSignal;
}

/**
 * Adds the API flags, examples and the exit-code table to a leaf command.
 * `examples` are the argument lines after `berth `.
 */
export function apiCommand(cmd: Command, examples: readonly string[]): Command {
  cmd
    .option('--address <url>', `the agent's HTTP API (default: $BERTH_ADDR, $NOMAD_ADDR or ${DEFAULT_ADDRESS})`)
    .option('--token <token>', 'bearer token (default: $BERTH_TOKEN or $NOMAD_TOKEN); never printed')
    .option('--json', 'print one JSON document on stdout (for scripts)')
    .option('-n, --namespace <ns>', 'namespace of jobs and volumes (default: $BERTH_NAMESPACE, $NOMAD_NAMESPACE or "default")');
  const lines = examples.map((e) => `  $ berth ${e}`).join('\n');
  cmd.addHelpText('after', `\nExamples:\n${lines}\n\n${API_EXIT_CODES_HELP}`);
  return cmd;
}

/**
 * Wraps an action: builds the session from the flags and environment and
 * runs it. The action throws; runCli turns errors into exit codes.
 */
export function apiAction(
  ctx: CommandContext,
  run: (session: ApiSession, args: string[], opts: Record<string, unknown>) => Promise<void>,
): (...params: unknown[]) => Promise<void> {
  return async (...params) => {
    const cmd = params[params.length - 1] as Command;
    const opts = cmd.optsWithGlobals<ApiCommandOptions & Record<string, unknown>>();
    ctx.state.json = Boolean(opts.json);
    const setting = addressSetting(opts.address);
    const address = normalizeAddress(setting.value, setting.source);
    const token = tokenSetting(opts.token);
    const out = new Output(ctx.io, ctx.redactor, ctx.state.json);
    const onStale = (): void => out.warn(STALE_WARNING);
    const api = new ApiClient({ address, signal: ctx.signal, onStale, ...(token ? { token } : {}) });
    const color = ctx.io === processIo && Boolean(process.stdout.isTTY) && !('NO_COLOR' in process.env) && process.env['TERM'] !== 'dumb';
    await run({ api, out, style: new Style(color), namespace: namespaceSetting(opts.namespace), signal: ctx.signal }, cmd.processedArgs as string[], opts);
  };
}

const GREEN = ['running', 'complete', 'ready', 'healthy', 'true', 'taken', 'successful'];
const RED = ['failed', 'lost', 'down', 'unhealthy', 'false', 'blocked', 'dead'];
const YELLOW = ['pending', 'initializing', 'unpublishing', 'node-detached', 'controller-detached', 'stop', 'evict'];

/** ANSI colour for status words, or nothing when not on a terminal (or NO_COLOR is set). */
export class Style {
  readonly enabled: boolean;

  constructor(enabled: boolean) {
    this.enabled = enabled;
  }

  /** A status word, coloured by meaning. Pads must be applied by the caller after measuring the plain text. */
  status(word: string): string {
    if (!this.enabled) return word;
    if (GREEN.includes(word)) return `\x1b[32m${word}\x1b[0m`;
    if (RED.includes(word)) return `\x1b[31m${word}\x1b[0m`;
    if (YELLOW.includes(word)) return `\x1b[33m${word}\x1b[0m`;
    return word;
  }

  bold(text: string): string {
    return this.enabled ? `\x1b[1m${text}\x1b[0m` : text;
  }
}

/** The first 8 characters of a long ID, as Nomad shows them. */
export function shortId(id: string | undefined): string {
  return (id ?? '').slice(0, 8);
}

/** `2026-01-02T03:04:05Z` for epoch milliseconds; `-` for 0. */
export function timestamp(ms: number | undefined): string {
  return ms ? new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z') : '-';
}

/** "3m ago" style age of epoch milliseconds, relative to now. */
export function age(ms: number | undefined, now = Date.now()): string {
  if (!ms) return '-';
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m ago`;
  return `${Math.floor(s / 86400)}d ago`;
}
