// Server claim figures (section `server-claims` of `npm run bench`).
//
// 1. Claim + release throughput on the SQLite store: claims of a node-only
//    plugin (no ControllerPublish), released through the whole checkpointed
//    state machine (taken -> unpublishing -> node-detached ->
//    controller-detached -> free: four durable writes after the claim's
//    one), with the node's detach answered at once by an in-process
//    transport, so the figure is the server's own cost. 32 claims in flight
//    on distinct volumes. Target >= 5,000 pairs/s.
// 2. The same through real gRPC: a fake node agent calling a FakePlugin
//    (ControllerPublish on claim; NodeUnpublish/Unstage and
//    ControllerUnpublish on release).
// 3. Blocking queries: 1,000 waiters blocked on the claims table, woken by
//    one write; time from the write's start until every waiter has resumed.

import { join } from 'node:path';
import { NodeConnections, type NodeTransport } from '../src/server/noderpc/index.js';
import { NodeService } from '../src/server/nodes/index.js';
import { SqliteStateStore } from '../src/server/state/index.js';
import { ControllerRouter, VolumeService } from '../src/server/volumes/index.js';
import { Cluster } from '../test/support/server-cluster.js';
import { testAllocation, testClaim } from '../test/support/server-rows.js';
import { benchNodeFingerprint } from './_bench-node.js';
import { round, summarize } from './_stats.js';

const PAIRS = Number(process.env['BENCH_CLAIM_PAIRS'] ?? 20_000);
const GRPC_PAIRS = Number(process.env['BENCH_CLAIM_GRPC_PAIRS'] ?? 1_000);
const IN_FLIGHT = 32;
const WAITERS = 1_000;
const WAKE_ROUNDS = 30;


function alloc(id: string) {
  return testAllocation(id, 'bench-node', { jobId: 'bench' });
}

/** Runs `total` claim+release pairs, `inFlight` volumes at a time; returns pairs per second. */
async function pairs(volumes: VolumeService, total: number, inFlight: number, volumeOf: (lane: number) => string): Promise<number> {
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: inFlight }, async (_, lane) => {
      const volumeId = volumeOf(lane);
      const allocId = `alloc-${lane}`;
      while (next < total) {
        next++;
        await volumes.claim({ volumeId, allocId, mode: 'write' });
        await volumes.release('default', volumeId, allocId);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return total / seconds;
}

async function storeThroughput(dir: string): Promise<Record<string, unknown>> {
  const store = SqliteStateStore.open(join(dir, 'claims.db'));
  const connections = new NodeConnections();
  // The node answers every detach at once: the figure is the server's own path.
  const transport: NodeTransport = {
    send: (msg) => queueMicrotask(() => connections.receive('bench-node', { id: msg.id, result: { alreadyDone: false } })),
    close: () => undefined,
  };
  connections.attach('bench-node', transport);
  await new NodeService({ store }).register(benchNodeFingerprint(), { id: 'bench-node' });
  const volumes = new VolumeService({ store, connections, router: new ControllerRouter({ store, connections }) });
  store.writeNow((txn) => {
    for (let i = 0; i < IN_FLIGHT; i++) txn.put('allocations', alloc(`alloc-${i}`));
  });
  for (let i = 0; i < IN_FLIGHT; i++) {
    await volumes.register({
      id: `vol-${i}`,
      externalId: `ext-${i}`,
      pluginId: 'bench',
      capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }],
    });
  }
  await pairs(volumes, 2_000, IN_FLIGHT, (lane) => `vol-${lane}`); // warm-up
  const before = store.latestIndex();
  const perSecond = await pairs(volumes, PAIRS, IN_FLIGHT, (lane) => `vol-${lane}`);
  const writesPerPair = (store.latestIndex() - before) / PAIRS;
  store.close();
  console.log(
    `claim+release (SQLite store, WAL, synchronous=NORMAL): ${Math.round(perSecond)} pairs/s over ${PAIRS} pairs, ` +
      `${round(writesPerPair)} durable writes per pair (target >= 5,000 pairs/s)`,
  );
  return { pairsPerSecond: Math.round(perSecond), pairs: PAIRS, inFlight: IN_FLIGHT, writesPerPair: round(writesPerPair), targetPairsPerSecond: 5000 };
}

async function grpcThroughput(): Promise<Record<string, unknown>> {
  const c = await Cluster.start([
    { id: 'ctrl', externalId: 'ext-w', roles: ['controller'] },
    { id: 'node-w', externalId: 'ext-w', roles: ['node'] },
  ]);
  try {
    const lanes = 8;
    for (let i = 0; i < lanes; i++) {
      c.alloc(`alloc-${i}`, 'node-w');
      await c.volumes.create({ id: `vol-${i}`, pluginId: 'fake', capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] });
    }
    await pairs(c.volumes, 100, lanes, (lane) => `vol-${lane}`);
    const perSecond = await pairs(c.volumes, GRPC_PAIRS, lanes, (lane) => `vol-${lane}`);
    console.log(
      `claim+release through a fake node agent and FakePlugin over gRPC (ControllerPublish, node detach, ControllerUnpublish): ` +
        `${Math.round(perSecond)} pairs/s over ${GRPC_PAIRS} pairs`,
    );
    return { pairsPerSecond: Math.round(perSecond), pairs: GRPC_PAIRS, inFlight: lanes };
  } finally {
    await c.close();
  }
}

async function wakeAll(dir: string): Promise<Record<string, unknown>> {
  const store = SqliteStateStore.open(join(dir, 'wake.db'));
  const samples: bigint[] = [];
  try {
    for (let r = 0; r < WAKE_ROUNDS + 3; r++) {
      const after = store.latestIndex();
      const waiters = Array.from({ length: WAITERS }, () => store.blockUntil(['claims'], after));
      const start = process.hrtime.bigint();
      store.writeNow((txn) => txn.put('allocations', alloc(`wake-${r}`)));
      store.writeNow((txn) => txn.delete('allocations', `wake-${r}`));
      // Neither write touched claims; this one does.
      store.writeNow((txn) => txn.put('claims', testClaim(`a-${r}`, 'n', { mode: 'read', accessMode: 'multi-node-reader-only' })));
      await Promise.all(waiters);
      if (r >= 3) samples.push(process.hrtime.bigint() - start);
    }
  } finally {
    store.close();
  }
  const s = summarize(samples);
  console.log(`blocking queries: ${WAITERS} waiters woken by one write: all resumed in p50 ${s.p50Us} us, p99 ${s.p99Us} us (${s.n} rounds)`);
  return { waiters: WAITERS, wakeAll: s };
}

export default async function serverClaims(dir: string): Promise<Record<string, unknown>> {
  const store = await storeThroughput(dir);
  const grpc = await grpcThroughput();
  const wake = await wakeAll(dir);
  return { claimReleaseStore: store, claimReleaseGrpc: grpc, blockingWake: wake };
}
