// The one place where an error becomes a CLI exit code and the words shown
// for it (STYLE.md: translate only at the edges).

import { CommanderError } from 'commander';
import type { CsiEndpointError, CsiError, CsiProtocolError, CsiRequestError } from '../csi/index.js';
import { AbortedError, BerthError, describeError } from '../lib/index.js';
import type { SpecFileError } from '../spec-files/index.js';
import { ApiClientError } from './api-client.js';
import { UsageError } from './usage-error.js';

/** Exit codes of every berth command. Stable: scripts depend on them. */
export const EXIT = {
  /** The command did what was asked. */
  OK: 0,
  /** The plugin answered with an error (or a local step such as creating a directory failed). */
  FAILED: 1,
  /** Bad usage: unknown command or flag, missing argument, malformed value, a request the spec forbids. Nothing was sent. */
  USAGE: 2,
  /** The plugin could not be reached, or did not answer in time (UNAVAILABLE, DEADLINE_EXCEEDED). */
  UNREACHABLE: 3,
  /** The plugin answered out of spec. */
  OUT_OF_SPEC: 4,
  /** The agent refused the token: missing, unknown, or without the role the command needs. */
  AUTH: 5,
  /** No object with that ID or prefix. */
  NOT_FOUND: 6,
  /** The server's state store (etcd) cannot commit: no quorum or unreachable. Nothing was changed; retry later. */
  STORE_UNAVAILABLE: 7,
  /** The cluster could not serve the request while --retry-for allowed (no leader: an election); nothing was changed; retry. */
  RETRYABLE: 8,
  /** The server went away before answering: the request may or may not have been applied; check before retrying. */
  UNCERTAIN: 9,
  /** Interrupted by SIGINT/SIGTERM before the command finished (128 + SIGINT). */
  INTERRUPTED: 130,
} as const;

/** The exit-code table, as `--help` shows it. */
export const EXIT_CODES_HELP = `Exit codes:
  0    success
  1    the plugin answered with an error (stderr: "error: <RPC> failed: <GRPC_CODE>: <details>")
  2    bad usage: unknown command or flag, missing argument, malformed size or
       duration, or a request the CSI spec forbids; nothing was sent to the plugin
  3    the plugin could not be reached or did not answer in time
       (UNAVAILABLE, DEADLINE_EXCEEDED)
  4    the plugin answered out of spec
  130  interrupted (SIGINT/SIGTERM)`;

/** The exit-code table of the commands that talk to an agent (job, alloc, node, volume, ...). */
export const API_EXIT_CODES_HELP = `Exit codes:
  0    success (job run: every allocation running, or complete for batch jobs)
  1    the agent refused or failed the request; job run: an allocation
       failed, was lost (its node down) with no replacement, or could
       not be placed
  2    bad usage, a malformed job or volume file (file:line:col), or an
       ambiguous ID prefix; nothing was submitted
  3    no agent could be reached (--address, BERTH_ADDR, the CLI config);
       with several servers listed, none answered within --retry-for
  5    the token is missing, unknown or lacks the role (--token, BERTH_TOKEN)
  6    no object with that ID or prefix
  7    the server's state store (etcd) is unavailable: no quorum or
       unreachable; nothing was changed, retry once it is back
  8    the cluster could not serve the request within --retry-for (no
       leader while an election runs); nothing was changed; retry
  9    a server went away before answering: the request may or may not
       have been applied; check (e.g. berth job status) before retrying
  (3, 7 and 8 are retryable as they are; job run checks a submission
  whose answer was lost and never registers it twice)
  130  interrupted (SIGINT/SIGTERM) before the request finished`;

/** What the API commands print (stderr) when the server says its reads may be stale. */
export const STALE_WARNING =
  "warning: the server cannot reach its state store's quorum (etcd); what is shown may be stale";

/** The exit codes of a long-running `berth plugin` command. */
export const PLUGIN_EXIT_CODES_HELP = `Exit codes:
  0    stopped by SIGINT or SIGTERM
  1    the plugin failed to start (socket in use, data dir not writable, ...)
  2    bad usage: unknown or missing flag, malformed value, bad endpoint`;

/** What the CLI knew when the command failed, to word the message. */
export interface FailureContext {
  /** The plugin endpoint the command talked to, if any. */
  endpoint?: string;
  /** The command's own --timeout fired. */
  timedOut?: boolean;
  /** The --timeout value as typed, for the message. */
  timeout?: string;
  /** SIGINT/SIGTERM arrived. */
  interrupted?: boolean;
}

/** The JSON error object printed on stdout under --json. */
export interface JsonFailure {
  error: {
    code: string;
    message: string;
    grpcCode?: string;
    rpc?: string;
    field?: string;
    final?: boolean;
    retryable?: boolean;
    exitCode: number;
  };
}

/** How a failure is reported: exit code, lines for stderr, JSON for stdout. */
export interface Failure {
  exitCode: number;
  /** Lines for stderr, the first starting with `error: `. Empty when already printed (commander). */
  lines: string[];
  json: JsonFailure;
}

const UNREACHABLE_CODES = new Set(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);

// The CSI and spec-file errors are known by their class name (BerthError sets
// `name` to it), not by instanceof: importing their classes would load the CSI
// client (gRPC, protobuf) and the spec parser into every command, even those
// that only talk to the HTTP API. Only what threw them can have loaded them.
interface ErrorsByName {
  CsiError: CsiError;
  CsiRequestError: CsiRequestError;
  CsiProtocolError: CsiProtocolError;
  CsiEndpointError: CsiEndpointError;
  SpecFileError: SpecFileError;
}

/** As structs' formatFileProblem: `writer.hcl:12:7: groups[0].count: expected number`. */
function fileProblemText(p: SpecFileError['problems'][number]): string {
  const where = p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file;
  return `${where}: ${p.field ? `${p.field}: ` : ''}${p.message}`;
}

function is<K extends keyof ErrorsByName>(err: unknown, name: K): err is ErrorsByName[K] {
  return err instanceof BerthError && err.name === name;
}

/** Translates any thrown value into the exit code and the words shown for it. Pure. */
export function describeFailure(err: unknown, ctx: FailureContext = {}): Failure {
  const hint = ctx.endpoint ? `is the plugin running at ${ctx.endpoint}?` : 'is the plugin running?';

  if (err instanceof CommanderError) {
    // commander has printed its own message already; help and version exit 0.
    const exitCode = err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    return { exitCode, lines: [], json: jsonError(exitCode, 'CLI_USAGE', stripErrorPrefix(err.message)) };
  }
  if (is(err, 'CsiError')) {
    if (ctx.interrupted) return simple(EXIT.INTERRUPTED, 'CLI_INTERRUPTED', `${err.rpc} interrupted; the plugin may have acted`);
    if (UNREACHABLE_CODES.has(err.grpcCodeName) || (err.grpcCodeName === 'CANCELLED' && ctx.timedOut)) {
      const why = ctx.timedOut || err.grpcCodeName === 'DEADLINE_EXCEEDED' ? `no answer within ${ctx.timeout ?? 'the deadline'}; ` : '';
      return {
        exitCode: EXIT.UNREACHABLE,
        lines: [`error: ${err.message}`, `${why}${hint}`],
        json: csiJson(err, EXIT.UNREACHABLE),
      };
    }
    const lines = [`error: ${err.message}`];
    if (err.grpcCodeName === 'UNIMPLEMENTED') lines.push('the plugin does not serve this call; see `berth csi capabilities`');
    return { exitCode: EXIT.FAILED, lines, json: csiJson(err, EXIT.FAILED) };
  }
  if (is(err, 'CsiRequestError')) {
    const failure = simple(EXIT.USAGE, err.code, `invalid request: ${err.message}`);
    failure.json.error.field = err.field;
    return failure;
  }
  if (is(err, 'CsiEndpointError') || err instanceof UsageError) return simple(EXIT.USAGE, err.code, err.message);
  if (is(err, 'SpecFileError')) {
    const failure = simple(EXIT.USAGE, err.code, err.message);
    failure.lines = err.problems.map((p) => `error: ${fileProblemText(p)}`);
    return failure;
  }
  if (err instanceof ApiClientError) return apiFailure(err);
  if (is(err, 'CsiProtocolError')) {
    const failure = simple(EXIT.OUT_OF_SPEC, err.code, err.message);
    failure.json.error.rpc = err.rpc;
    return failure;
  }
  if (err instanceof AbortedError) {
    if (ctx.timedOut) return simple(EXIT.UNREACHABLE, 'CLI_TIMEOUT', `no answer within ${ctx.timeout ?? 'the deadline'}; ${hint}`);
    return simple(EXIT.INTERRUPTED, 'CLI_INTERRUPTED', 'interrupted');
  }
  const code = err instanceof BerthError ? err.code : errnoCode(err) ?? 'CLI_FAILED';
  return simple(EXIT.FAILED, code, describeError(err));
}

function apiFailure(err: ApiClientError): Failure {
  switch (err.code) {
    case 'API_UNREACHABLE':
      return simple(EXIT.UNREACHABLE, err.code, `${err.message}; is the agent running? (set --address or BERTH_ADDR)`);
    case 'UNAUTHENTICATED':
      return simple(EXIT.AUTH, err.code, `the agent refused the token: ${err.message} (set --token or BERTH_TOKEN)`);
    case 'FORBIDDEN':
      return simple(EXIT.AUTH, err.code, `permission denied: ${err.message}`);
    case 'NOT_FOUND':
      return simple(EXIT.NOT_FOUND, err.code, err.message);
    case 'STORE_UNAVAILABLE':
      return simple(EXIT.STORE_UNAVAILABLE, err.code, `the server could not save the change: ${err.message}`);
    case 'SERVER_LEADER_UNAVAILABLE':
      return simple(EXIT.RETRYABLE, err.code, `the cluster has no leader to take the request now: ${err.message} (nothing was changed; retry, or raise --retry-for)`);
    case 'API_UNCERTAIN':
      return simple(EXIT.UNCERTAIN, err.code, err.message);
    case 'CLI_AMBIGUOUS_PREFIX': {
      const failure = simple(EXIT.USAGE, err.code, err.message);
      const matches = Array.isArray(err.details['matches']) ? (err.details['matches'] as string[]) : [];
      failure.lines.push(...matches.map((m) => `  ${m}`));
      return failure;
    }
    default:
      return simple(EXIT.FAILED, err.code, err.message);
  }
}

function simple(exitCode: number, code: string, message: string): Failure {
  return { exitCode, lines: [`error: ${message}`], json: jsonError(exitCode, code, message) };
}

function jsonError(exitCode: number, code: string, message: string): JsonFailure {
  return { error: { code, message, exitCode } };
}

function csiJson(err: CsiError, exitCode: number): JsonFailure {
  return {
    error: {
      code: err.code,
      grpcCode: err.grpcCodeName,
      rpc: err.rpc,
      message: err.message,
      final: err.final,
      retryable: err.retryable,
      exitCode,
    },
  };
}

function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function stripErrorPrefix(message: string): string {
  return message.replace(/^error: /, '');
}
