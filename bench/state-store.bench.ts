// The etcd state store's figures (section `state-store` of `npm run bench`),
// against real etcd processes started by test/support/etcd.ts (data on
// BERTH_TEST_ETCD_DIR, default the temp dir; etcd fsyncs every commit).
//
// 1. Claim + release pairs/s through the server's VolumeService on an
//    EtcdStateStore, one etcd member, then a three-member cluster: the same
//    path as server-claims' SQLite figure (node-only plugin, the node's
//    detach answered at once in-process), 32 claims in flight on distinct
//    volumes. Goal >= 1,000 pairs/s on one member.
// 2. 1,000 blocked watchers woken by one write: waiters blocked on the
//    claims table of one server's store, the write made by another server's
//    store on the same etcd; time from the write's start until every waiter
//    has resumed (etcd commit + watch delivery + wake). Goal p99 < 50 ms.

import { NodeConnections, type NodeTransport } from '../src/server/noderpc/index.js';
import { NodeService } from '../src/server/nodes/index.js';
import { openEtcdStateStore, type StateStore } from '../src/server/state/index.js';
import { ControllerRouter, VolumeService } from '../src/server/volumes/index.js';
import { startEtcd } from '../test/support/etcd.js';
import { testAllocation, testClaim } from '../test/support/server-rows.js';
import { benchNodeFingerprint } from './_bench-node.js';
import { round, summarize } from './_stats.js';

const PAIRS = Number(process.env['BENCH_ETCD_CLAIM_PAIRS'] ?? 2_000);
const IN_FLIGHT = 32;
const WAITERS = 1_000;
const WAKE_ROUNDS = 30;


async function pairs(volumes: VolumeService, total: number, volumeOf: (lane: number) => string): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async (_, lane) => {
      const volumeId = volumeOf(lane);
      const allocId = `alloc-${lane}`;
      while (next < total) {
        next++;
        await volumes.claim({ volumeId, allocId, mode: 'write' });
        await volumes.release('default', volumeId, allocId);
      }
    }),
  );
  return total / (Number(process.hrtime.bigint() - start) / 1e9);
}

async function claimThroughput(members: number): Promise<Record<string, unknown>> {
  const etcd = await startEtcd({ members });
  let store: StateStore | undefined;
  try {
    store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/bench' });
    const s = store;
    const connections = new NodeConnections();
    const transport: NodeTransport = {
      send: (msg) => queueMicrotask(() => connections.receive('bench-node', { id: msg.id, result: { alreadyDone: false } })),
      close: () => undefined,
    };
    connections.attach('bench-node', transport);
    await new NodeService({ store: s }).register(benchNodeFingerprint(), { id: 'bench-node' });
    const volumes = new VolumeService({ store: s, connections, router: new ControllerRouter({ store: s, connections }) });
    await s.write((txn) => {
      for (let i = 0; i < IN_FLIGHT; i++) txn.put('allocations', testAllocation(`alloc-${i}`, 'bench-node', { jobId: 'bench' }));
    });
    for (let i = 0; i < IN_FLIGHT; i++) {
      await volumes.register({ id: `vol-${i}`, externalId: `ext-${i}`, pluginId: 'bench', capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] });
    }
    await pairs(volumes, 64, (lane) => `vol-${lane}`); // warm-up
    const before = s.latestIndex();
    const perSecond = await pairs(volumes, PAIRS, (lane) => `vol-${lane}`);
    const revisionsPerPair = (s.latestIndex() - before) / PAIRS;
    console.log(
      `claim+release on etcd (${members} member${members > 1 ? 's' : ''}): ${Math.round(perSecond)} pairs/s over ${PAIRS} pairs, ` +
        `${round(revisionsPerPair)} etcd revisions per pair${members === 1 ? ' (goal >= 1,000 pairs/s)' : ''}`,
    );
    return { members, pairsPerSecond: Math.round(perSecond), pairs: PAIRS, inFlight: IN_FLIGHT, revisionsPerPair: round(revisionsPerPair) };
  } finally {
    store?.close();
    await etcd.close();
  }
}

async function wakeAll(): Promise<Record<string, unknown>> {
  const etcd = await startEtcd();
  const writer = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/wake' });
  const reader = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/wake' });
  const samples: bigint[] = [];
  try {
    for (let r = 0; r < WAKE_ROUNDS + 3; r++) {
      const after = reader.latestIndex();
      const waiters = Array.from({ length: WAITERS }, () => reader.blockUntil(['claims'], after));
      const start = process.hrtime.bigint();
      await writer.write((txn) => txn.put('claims', testClaim(`a-${r}`, 'n', { mode: 'read', accessMode: 'multi-node-reader-only' })));
      await Promise.all(waiters);
      if (r >= 3) samples.push(process.hrtime.bigint() - start);
    }
  } finally {
    writer.close();
    reader.close();
    await etcd.close();
  }
  const s = summarize(samples);
  console.log(`${WAITERS} watchers on one server woken by one write from another, on etcd: all resumed in p50 ${s.p50Us} us, p99 ${s.p99Us} us (${s.n} rounds; goal p99 < 50 ms)`);
  return { waiters: WAITERS, wakeAll: s };
}

export default async function stateStore(): Promise<Record<string, unknown>> {
  const one = await claimThroughput(1);
  const three = await claimThroughput(3);
  const wake = await wakeAll();
  return { claimReleaseEtcd1: one, claimReleaseEtcd3: three, etcdWake: wake };
}
