import type { EtcdLeadership, EtcdLeadershipOptions } from './etcd-leadership.js';

/**
 * An EtcdLeadership (see its start()). The etcd client (gRPC, its protobuf
 * loading: some 40 ms of an agent's start) is loaded on the first call
 * only, so a server on SQLite never loads it.
 */
export async function createEtcdLeadership(opts: EtcdLeadershipOptions): Promise<EtcdLeadership> {
  const { EtcdLeadership } = await import('./etcd-leadership.js');
  return new EtcdLeadership(opts);
}
