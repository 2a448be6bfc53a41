// What every command that talks to an agent shares: the --address, --token,
// --json, --namespace and --client-timeout flags (with BERTH_* / NOMAD_* variables), the API
// client, help with examples and exit codes, colours only on a terminal, and
// the small formatting helpers of Nomad-like tables.

import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import type { Command } from 'commander';
import { addressList, addressSetting, clientTimeoutSetting, namespaceSetting, tokenSetting } from './agent-address.js';
import { ApiClient, DEFAULT_ADDRESS } from './api-client.js';
import { UsageError } from './usage-error.js';
import { parseDuration } from './values.js';
import type { CommandContext } from './csi-command.js';
import { API_EXIT_CODES_HELP, STALE_WARNING } from './exit-codes.js';
import { Output, processIo } from './output.js';

export interface ApiCommandOptions {
  address?: string[];
  token?: string;
  retryFor?: number;
  clientTimeout?: string;
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

/** Commands whose `--json` says the job file is JSON (Nomad's `job run -json`): their output is JSON with `--json-output`. */
const JSON_INPUT = new WeakSet<Command>();

/**
 * Adds the API flags, examples and the exit-code table to a leaf command.
 * With `jsonInput`, `--json` is Nomad's: the file argument is JSON (and
 * `--json-output` asks for a JSON document). `shortNamespace: false` leaves
 * `-n` to the command (Nomad's `alloc logs -n <lines>`).
 * `examples` are the argument lines after `berth `.
 */
export function apiCommand(cmd: Command, examples: readonly string[], opts: { jsonInput?: boolean; shortNamespace?: boolean } = {}): Command {
  if (opts.jsonInput) JSON_INPUT.add(cmd);
  cmd
    .option(
      '--address <urls>',
      `the agent's HTTP API; several servers of a cluster: a,b,c or the flag repeated (default: $BERTH_ADDR, $NOMAD_ADDR, then "address" in ${CLI_CONFIG_HINT}, then ${DEFAULT_ADDRESS})`,
      (value: string, prev: string[] | undefined) => [...(prev ?? []), value],
    )
    .option('--retry-for <duration>', 'how long to retry while the cluster cannot serve (no leader, no etcd quorum, a server down); 0: never', parseRetryFor, DEFAULT_RETRY_FOR_MS)
    .option('--client-timeout <duration>', 'how long a server may take to start answering before the next one is tried (default: $BERTH_CLIENT_TIMEOUT or 10s; a blocking read: its wait plus this)')
    .option('--token <token>', 'bearer token (default: $BERTH_TOKEN or $NOMAD_TOKEN); never printed')
    .option('--json', opts.jsonInput ? "the job file is Nomad's API JSON, whatever its name (Nomad's -json); --json-output prints the result as JSON" : 'print one JSON document on stdout (for scripts)')
    .option(`${opts.shortNamespace === false ? '' : '-n, '}--namespace <ns>`, 'namespace of jobs and volumes (default: $BERTH_NAMESPACE, $NOMAD_NAMESPACE or "default")');
  if (opts.jsonInput) cmd.option('--json-output', 'print one JSON document on stdout (for scripts)');
  // Nomad's -t: the JSON document through a Go template. A command that formats its own keeps its flag;
  // one whose -t is something else (alloc exec's TTY) gets the long form only.
  if (!cmd.options.some((o) => o.long === '--template')) {
    const short = cmd.options.some((o) => o.short === '-t') ? '' : '-t, ';
    cmd.option(`${short}--template <template>`, 'format the JSON document (what --json prints) with a Go template, as Nomad\'s -t');
  }
  // An example is a berth command line, or a whole pipeline that feeds berth (`cat f | berth ...`).
  const lines = examples.map((e) => (/\|\s*berth /.test(e) ? `  $ ${e}` : `  $ berth ${e}`)).join('\n');
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
    ctx.state.json = Boolean(JSON_INPUT.has(cmd) ? opts['jsonOutput'] : opts.json);
    const address = addressList(addressSetting(opts.address, process.env, configuredAddress));
    const token = tokenSetting(opts.token);
    const template = typeof opts['template'] === 'string' ? opts['template'] : undefined;
    const out = new Output(ctx.io, ctx.redactor, ctx.state.json, template);
    ctx.state.json = out.json;
    const onStale = (): void => out.warn(STALE_WARNING);
    const onRetry = (why: string): void => out.warn(`retrying: ${why}`);
    const answerTimeoutMs = clientTimeoutSetting(opts.clientTimeout);
    const api = new ApiClient({
      address,
      signal: ctx.signal,
      onStale,
      onRetry,
      retryForMs: opts.retryFor ?? DEFAULT_RETRY_FOR_MS,
      ...(token ? { token } : {}),
      ...(answerTimeoutMs !== undefined ? { answerTimeoutMs } : {}),
    });
    const color = ctx.io === processIo && Boolean(process.stdout.isTTY) && !('NO_COLOR' in process.env) && process.env['TERM'] !== 'dumb';
    await run({ api, out, style: new Style(color), namespace: namespaceSetting(opts.namespace), signal: ctx.signal }, cmd.processedArgs as string[], opts);
  };
}

const DEFAULT_RETRY_FOR_MS = 15_000;
const CLI_CONFIG_HINT = '$BERTH_CLI_CONFIG or ~/.config/berth/cli.json';

/** `--retry-for`: a duration, or 0. */
function parseRetryFor(text: string): number {
  if (/^0+(ms|s|m)?$/.test(text.trim())) return 0;
  return parseDuration(text);
}

/**
 * The `address` of the CLI's config file (JSON: `{ "address": ["http://a:4646", ...] }`
 * or one string), at $BERTH_CLI_CONFIG or $XDG_CONFIG_HOME/berth/cli.json
 * (~/.config/berth/cli.json). Undefined when there is no file; UsageError
 * when it is unreadable or malformed.
 */
function configuredAddress(): string | string[] | undefined {
  const named = process.env['BERTH_CLI_CONFIG'];
  const file = named ?? path.join(process.env['XDG_CONFIG_HOME'] ?? path.join(homedir(), '.config'), 'berth', 'cli.json');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (!named && (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new UsageError(`cannot read the CLI config ${file}: ${(err as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${file}: not JSON: ${(err as Error).message}`);
  }
  const address = (doc as { address?: unknown } | null)?.address;
  if (address === undefined) return undefined;
  if (typeof address === 'string' || (Array.isArray(address) && address.every((a) => typeof a === 'string'))) return address as string | string[];
  throw new UsageError(`${file}: "address" must be a URL or a list of URLs`);
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
  return `${elapsed(ms, now)} ago`;
}

/** How long since epoch milliseconds `ms`, as `4s`, `3m10s`, `2h5m`, `3d` (an uptime). */
export function elapsed(ms: number, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d`;
}
