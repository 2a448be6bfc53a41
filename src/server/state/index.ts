// The server's state store: typed tables, indexed transactional writes,
// snapshots and blocking reads, with SQLite as the embedded implementation
// and etcd as the one several servers share.
export {
  TABLES,
  DATA_TABLES,
  type TableName,
  type DataTable,
  type TableRows,
  type TableRow,
  type RowInput,
  type ListOptions,
  type StateReader,
  type WriteTxn,
  type BlockOptions,
  type BlockScope,
  type StateStore,
  type StoreEvent,
} from './state-store.js';
export { SqliteStateStore, STATE_SCHEMA_VERSION, type SqliteStateStoreOptions } from './sqlite-state-store.js';
export type { EtcdStateStore, EtcdStateStoreOptions, StoreFence } from './etcd-state-store.js';
export { openEtcdStateStore } from './open-etcd.js';
export { etcdFailFast } from './etcd-client-options.js';
export { StateStoreError } from './errors.js';
export { saveSnapshot, restoreSnapshot, encodeSnapshot, decodeSnapshot, SNAPSHOT_VERSION, type SnapshotSummary } from './snapshot.js';
export { rowKey, keyPrefix, keyOf, publicRow } from './keys.js';
export { ScratchTxn } from './scratch-txn.js';
export { untilChangeOr } from './until-change-or.js';
export { copyWithout, rowWith } from './_lazy-part.js';
