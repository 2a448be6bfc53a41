// The options of the etcd StateStore, and its write fence. Private to
// src/server/state: others take them from etcd-state-store.ts (and the
// folder door), which re-exports them.

import type { Logger } from '../../lib/index.js';

/**
 * Who may write, for a store shared by several servers: `key` is a key the
 * holder created (e.g. an election key bound to its lease) and
 * `createRevision` its create_revision. Every write compares it; when the key
 * is gone or was re-created, the write fails with STORE_FENCED.
 */
export interface StoreFence {
  key: string;
  createRevision: string;
}

export interface EtcdStateStoreOptions {
  /** etcd client URLs, e.g. ['http://127.0.0.1:2379']. */
  endpoints: readonly string[];
  /** The key prefix all state lives under. Default '/berth'. Several clusters may share one etcd under different prefixes. */
  prefix?: string;
  logger?: Logger;
  /** How many events are kept in memory for the event stream. Default 10,000. */
  eventHistory?: number;
  /** How long a write (and open) may wait for etcd before failing with STORE_UNAVAILABLE. Default 5 s. */
  writeTimeoutMs?: number;
  /** How often a write whose reads changed under it is run again before it fails with STORE_CONFLICT. Default 64. */
  maxAttempts?: number;
  /**
   * How many bytes of changes (keys, rows' JSON and each operation's
   * framing) one etcd Txn may carry. Default 1.375 MiB, under etcd's default
   * --max-request-bytes of 1.5 MiB with room for the compares, markers and
   * nested operations; raise both together. Queued writes
   * stop joining a Txn at this size, and writes that could grow without
   * bound (large evaluations, batched status reports) split themselves by it
   * (WriteTxn.bytesLeft).
   */
  maxTxnBytes?: number;
  /** The write fence (see StoreFence); called before every commit. undefined: unfenced. */
  fence?: () => StoreFence | undefined;
}
