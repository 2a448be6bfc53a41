/**
 * The root of every error Berth throws. `code` is stable and meant for
 * programs (HTTP status and CLI exit code are derived from it at the edges);
 * `message` is meant for people and never carries a secret.
 */
export class BerthError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Thrown by operations whose AbortSignal fired. `cause` is the signal's reason. */
export class AbortedError extends BerthError {
  constructor(message = 'operation aborted', options?: { cause?: unknown }) {
    super('ABORTED', message, options);
  }
}

/** Rejects with an AbortedError when `signal` has fired; returns otherwise. */
export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new AbortedError(abortMessage(signal), { cause: signal.reason });
}

function abortMessage(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'TimeoutError') return 'operation timed out';
  if (reason instanceof Error && reason.message) return `operation aborted: ${reason.message}`;
  return 'operation aborted';
}

/** A one-line description of any thrown value, for logs and CLI output. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
