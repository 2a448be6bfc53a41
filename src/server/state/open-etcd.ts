import type { EtcdStateStore, EtcdStateStoreOptions } from './etcd-state-store.js';

/**
 * Opens an EtcdStateStore (see EtcdStateStore.open: rejects with
 * StateStoreError STORE_UNAVAILABLE, STORE_VERSION, STORE_CORRUPT). The etcd
 * client (gRPC, protobuf loading) is loaded on the first call only, so a
 * server on SQLite and the CLI never load it.
 */
export async function openEtcdStateStore(opts: EtcdStateStoreOptions): Promise<EtcdStateStore> {
  const { EtcdStateStore } = await import('./etcd-state-store.js');
  return EtcdStateStore.open(opts);
}
