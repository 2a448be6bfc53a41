// The node agent's own durable memory: plugin registrations, volume mount
// records and (later) allocations and task handles. Everything the agent must
// know after a crash lives here, never only in memory.

import { BerthError } from '../../lib/index.js';

/**
 * A named set of JSON records keyed by string, e.g. `plugins` or `volume-mounts`.
 * Every call is synchronous; a write is durable when it returns (it survives a
 * crash or SIGKILL of the agent; see the SQLite store for a power cut).
 */
export interface Bucket<T> {
  readonly name: string;
  /** The record under `key`, or undefined. */
  get(key: string): T | undefined;
  /** Every record, ordered by key. */
  list(): Array<{ key: string; value: T }>;
  /** Records whose key starts with `prefix`, ordered by key. */
  listPrefix(prefix: string): Array<{ key: string; value: T }>;
  /** Creates or replaces the record; safe to repeat. */
  put(key: string, value: T): void;
  /**
   * Creates or replaces the record, but may write it later: with the next
   * put, delete or transaction of the store (in the same commit, before
   * them), or at the end of this turn of the event loop, whichever comes
   * first; several calls for one key before then write its last value once.
   * Reads see it at once. For records whose last changes a crash may lose
   * (a task's progress events), never for what a restart must find before a
   * side effect (a task's handle before its spawn: put that).
   */
  putSoon(key: string, value: T): void;
  /**
   * As putSoon, and resolves once the record is durable: with the commit at
   * the end of this turn (or an earlier write's, which carries it), one for
   * every record held meanwhile; rejects when that commit failed. For a record
   * that must land before a side effect which can wait for it (task handles
   * put before their spawns in one turn: one commit for all, not one each).
   */
  putLanded(key: string, value: T): Promise<void>;
  /** Removes the record; returns whether one was there. Safe to repeat. */
  delete(key: string): boolean;
}

/**
 * The client state store. Implementations must make each write durable before
 * it returns and must refuse (with ClientStateError) to open state they cannot
 * read faithfully: a corrupt file or one written by a newer Berth.
 */
export interface ClientStateStore {
  /** A typed view of one bucket; cheap, may be called many times. */
  bucket<T>(name: string): Bucket<T>;
  /**
   * Runs `fn` as one atomic, durable write: all its puts and deletes land or
   * none do. Throws what `fn` throws (after rolling back). Not reentrant-safe
   * across awaits: `fn` must be synchronous.
   */
  transaction<R>(fn: () => R): R;
  /** Closes the store; safe to call twice. Calls after close throw STATE_CLOSED. */
  close(): void;
}

export type ClientStateErrorCode = 'STATE_CORRUPT' | 'STATE_NEWER_VERSION' | 'STATE_CLOSED' | 'STATE_BAD_RECORD' | 'STATE_IO' | 'STATE_DISK_FULL';

/** Why the client state could not be opened, read or written. */
export class ClientStateError extends BerthError<ClientStateErrorCode> {}
