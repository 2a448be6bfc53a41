// The server's state: typed tables, transactional writes stamped with one
// monotonically increasing index, consistent snapshots and blocking reads.
//
// No SQL leaks through this interface, so that a distributed implementation
// can replace the embedded SQLite one. On etcd it maps as follows:
// - the store index is etcd's revision: one `write` is one etcd Txn, and the
//   revision that Txn creates is the index stamped on every row it puts
//   (createIndex = create_revision, modifyIndex = mod_revision);
// - a table is a key prefix (`/berth/<table>/<key>`), a table's index is the
//   mod_revision of a per-table marker key the same Txn puts;
// - `snapshot()` is a read at one revision (Range with `revision`);
// - `blockUntil(tables, n)` is a Watch on the tables' prefixes starting at
//   revision n + 1, resolved by the first event; the event history is etcd's
//   watch history, bounded by compaction as ours is by trimming.
// - `write` is async: an etcd store runs the txn body against its view and
//   retries the Txn when a compare on the read keys' mod_revisions fails.
//   Several writes of one server may be committed in one Txn (group commit)
//   and then share its index. Indexes grow but, on etcd, skip numbers.

import type {
  Allocation,
  CsiPluginRow,
  Deployment,
  DriftRow,
  JobVersion,
  Namespace,
  VolumeConditionRow,
  Evaluation,
  HostVolume,
  HostVolumeClaim,
  Job,
  Node,
  RootKey,
  SchedulerConfig,
  ServiceRegistration,
  Volume,
  VolumeClaim,
} from '../../structs/index.js';

/** Every table, in a fixed order. */
export const TABLES = ['nodes', 'plugins', 'volumes', 'claims', 'jobs', 'allocations', 'evaluations', 'volumeConditions', 'drift', 'services', 'deployments', 'jobVersions', 'schedulerConfig', 'hostVolumes', 'hostVolumeClaims', 'namespaces', 'rootKeys', 'events'] as const;
export type TableName = (typeof TABLES)[number];
/** The tables rows are put into; `events` is written by the store itself. */
export type DataTable = Exclude<TableName, 'events'>;
export const DATA_TABLES: readonly DataTable[] = TABLES.filter((t): t is DataTable => t !== 'events');

/**
 * One change, appended by the store for every put and delete. `row` is the
 * row's public view (no secrets); for a delete, the row as it was.
 */
export interface StoreEvent {
  index: number;
  /** Position within the write, from 0. */
  seq: number;
  topic: DataTable;
  key: string;
  op: 'put' | 'delete';
  row: unknown;
}

/** The row type of each table. */
export interface TableRows {
  nodes: Node;
  plugins: CsiPluginRow;
  volumes: Volume;
  claims: VolumeClaim;
  jobs: Job;
  allocations: Allocation;
  evaluations: Evaluation;
  /** A volume's condition as its plugin last reported it (src/server/volumehealth). */
  volumeConditions: VolumeConditionRow;
  /** The drift leader loop's latest report (one row, `latest`). */
  drift: DriftRow;
  /** Services registered by running allocations (Nomad's native service discovery). */
  services: ServiceRegistration;
  /** Rolling updates (src/server/deployments), by ID. */
  deployments: Deployment;
  /** Past job versions, by namespace + job ID + zero-padded version. */
  jobVersions: JobVersion;
  /** The scheduler's configuration (one row, `config`), absent until first set. */
  schedulerConfig: SchedulerConfig;
  /** Dynamic host volumes (src/server/hostvolumes), by namespace + ID. */
  hostVolumes: HostVolume;
  /** Sticky host volume claims of task groups, by namespace + job + group + volume ID. */
  hostVolumeClaims: HostVolumeClaim;
  /** Namespaces (src/server/namespaces), by name; `default` is implied until it is changed. */
  namespaces: Namespace;
  /** The keys workload identities are signed with (src/server/identity), by key ID. */
  rootKeys: RootKey;
  events: StoreEvent;
}
export type TableRow<T extends TableName> = TableRows[T];

/** What `put` takes: a row whose indexes the store stamps (any given are ignored). */
export type RowInput<T extends DataTable> = Omit<TableRow<T>, 'createIndex' | 'modifyIndex'> &
  Partial<Pick<TableRow<T>, 'createIndex' | 'modifyIndex'>>;

export interface ListOptions<R> {
  /** Only keys starting with this (see `rowKey` for how keys are built). */
  prefix?: string;
  filter?: (row: R) => boolean;
  /**
   * The rows in no particular order: no sort by key, for a caller that needs
   * none over a large table (an evaluation's usage of every node from ten
   * thousand allocations, once per part of its plan).
   */
  unordered?: boolean;
}

/**
 * A consistent read view. Rows are frozen: copy before changing. Every
 * method is synchronous and never blocks.
 */
export interface StateReader {
  /** The store index this view reflects. */
  readonly index: number;
  get<T extends DataTable>(table: T, key: string): TableRow<T> | undefined;
  /** Rows sorted by key. */
  list<T extends DataTable>(table: T, opts?: ListOptions<TableRow<T>>): TableRow<T>[];
  /** The index of the last write that touched `table` (0 when never written). */
  tableIndex(table: TableName): number;
  /**
   * Events with index > `afterIndex`, oldest first, optionally only of some
   * topics, at most `limit`. Events older than the bounded history are gone:
   * `oldestEventIndex` says where the history starts.
   */
  events(afterIndex: number, opts?: { topics?: readonly DataTable[]; limit?: number }): StoreEvent[];
  /** The index of the oldest event still kept (0 when none). */
  readonly oldestEventIndex: number;
}

/** The view a write function gets: reads see its own puts and deletes. */
export interface WriteTxn extends StateReader {
  /**
   * The index this write will stamp on everything it changes. Exact on
   * SQLite; on etcd the revision is known only at commit, so this (and the
   * indexes on rows `put` returns) is a lower bound: read the row back after
   * the write for its real indexes.
   */
  readonly writeIndex: number;
  /**
   * How many more bytes of rows (as JSON, with their keys) this write may
   * put before its commit grows past what the store accepts in one
   * transaction (etcd's request size limit); undefined when the store has no
   * such limit (SQLite, a plan that is never committed). A write that could
   * grow without bound, such as an evaluation placing thousands of
   * allocations, stops short of it and finishes in further writes; a write
   * that goes past it anyway is tried alone and may fail with
   * STORE_TOO_LARGE.
   */
  readonly bytesLeft?: number | undefined;
  /** Inserts or replaces the row with its table's key; returns the stored (stamped, frozen) row. */
  put<T extends DataTable>(table: T, row: RowInput<T>): TableRow<T>;
  /** Deletes the row; false when there was none. */
  delete(table: DataTable, key: string): boolean;
}

export interface BlockOptions {
  signal?: AbortSignal;
  /** Resolve with the current index after this long. Default: wait until signalled. */
  timeoutMs?: number;
  /**
   * A hint for a reader of a few rows of one table (a node's allocations):
   * once blocked, it need not be woken by a write that puts or deletes no row
   * of `table` whose `key(row)` is `is` (for a delete, the row deleted). The
   * store may honour it (the etcd store does; SQLite wakes on every write to
   * the table), so the reader still checks what changed when woken. Ignored
   * when `tables` is not `[table]`.
   */
  scope?: BlockScope;
}

/** See BlockOptions.scope. `key` should be one function shared by the readers of a kind: the store reads each write's rows once per function. */
export interface BlockScope {
  table: DataTable;
  key: (row: unknown) => string | undefined;
  is: string;
}

/** How a write may be committed. */
export interface WriteOptions {
  /**
   * The write frees space (a job stop, a collection, a deregistration): on a
   * full disk the store may spend its reserved headroom on it, so that what
   * frees the disk is never refused for lack of it. Stores without a reserve
   * ignore it.
   */
  freesSpace?: boolean;
}

export interface StateStore {
  /**
   * Runs `fn` as one all-or-nothing transaction. `fn` itself is synchronous
   * (it must not return a promise) and may run more than once: a distributed
   * store runs it against its latest view and runs it again when another
   * writer changed what it read before the commit, so `fn` must have no side
   * effects beyond the txn. When it changed anything, one new index is
   * stamped on every row it put and every table it touched, an event per
   * change is appended, the change is durable when the promise resolves, and
   * blocked readers of those tables wake. A write that changed nothing uses no
   * index and resolves with the latest one. If `fn` throws, nothing is
   * applied and the promise rejects with that error. Rejects with
   * StateStoreError STORE_CLOSED after close(), STORE_NESTED_WRITE when
   * called from inside another write, STORE_UNAVAILABLE when the store cannot
   * commit (e.g. etcd without quorum; nothing was applied), STORE_FENCED
   * when a fenced writer lost its right to write, STORE_TOO_LARGE when its
   * changes are more than one etcd transaction takes (see `bytesLeft`),
   * STORE_DISK_FULL when the disk has no room for it (with `freesSpace`,
   * only once the reserved headroom is spent too).
   */
  write<R>(fn: (txn: WriteTxn) => R, opts?: WriteOptions): Promise<{ index: number; result: R }>;
  /** A consistent read view at the latest index. Cheap; safe to hold across awaits. */
  snapshot(): StateReader;
  /** The latest index (0 for an empty store). */
  latestIndex(): number;
  /**
   * Resolves with the highest index among `tables` as soon as it passes
   * `afterIndex` (at once if it already has), or with the current one when
   * `timeoutMs` passes. Event-driven: no polling. Rejects with AbortedError
   * when `signal` fires, StateStoreError STORE_CLOSED when the store closes.
   */
  blockUntil(tables: readonly TableName[], afterIndex: number, opts?: BlockOptions): Promise<number>;
  /**
   * True when reads may lag behind the truth: a distributed store that lost
   * its feed or its quorum still serves its last view. Always false for SQLite.
   */
  readonly stale: boolean;
  /** Closes the store; blocked readers are rejected. Safe to call twice. */
  close(): void;
  readonly closed: boolean;
}
