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
}
