// What every CLI command is built with and shares with runCli. Types only:
// importing this file loads nothing (commands stay lazily loaded).

import type { CliIo, Redactor } from './output.js';

/** What a command run shares with runCli, so that a failure can be worded (see describeFailure). */
export interface RunState {
  /** The exit code a command chose (alloc exec: the remote command's). */
  exitCode?: number;
  endpoint?: string;
  json?: boolean;
  timeout?: string;
  timedOut?: boolean;
}

/** What the commands are built with. */
export interface CommandContext {
  io: CliIo;
  redactor: Redactor;
  /** Fires on SIGINT/SIGTERM (main owns the signal handlers). */
  signal: AbortSignal;
  state: RunState;
  /** How this process's code was loaded (src/warm-start/), when a warm start loaded it: the agent logs it and saves the cache. */
  warmStart?: WarmStart;
}

/**
 * What the warm-start loader (src/warm-start/) tells the command it loaded:
 * which path ran and why, and how to save a code cache once the process has
 * compiled what a start and a first job use.
 */
export interface WarmStart {
  /** `code-cache` (the bundle compiled with a cache V8 accepted), `compiled` (the bundle compiled without one), ... */
  path: string;
  /** Why that path: the cache file, or why it was absent, rejected or unreadable. */
  reason: string;
  /** Writes the code cache of what has been compiled so far, if this start has none worth keeping. Never throws; safe to repeat (writes once); returns what it did. */
  saveCache(): string;
}
