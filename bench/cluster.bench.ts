// Several servers on etcd: how long a cluster goes without a leader after
// the leader is killed. Three `berth agent --server` processes on a
// three-member etcd (real processes, default lease TTL of 3 s); ten times:
// SIGKILL the leader, then write (a node registration, through each
// surviving server in turn, every 50 ms) until one is accepted; the time
// from the kill to that answer is one sample. The killed server is started
// again (it rejoins as a follower) before the next run.

import { Cluster as ProcessCluster, type ServerProc } from '../test/support/process-cluster.js';
import { testFingerprint } from '../test/support/server-rows.js';
import { round } from './_stats.js';

const RUNS = 10;
const NODE_TOKEN = `bench-node-token-${process.pid}`;

async function write(s: ServerProc, i: number): Promise<boolean> {
  try {
    const res = await fetch(`${s.url}/v1/node/register`, {
      method: 'POST',
      headers: { authorization: `Bearer ${NODE_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ fingerprint: testFingerprint(`bench-node-${i}`) }),
      signal: AbortSignal.timeout(2_000),
    });
    await res.text();
    return res.ok;
  } catch {
    return false;
  }
}

export default async function clusterBench(): Promise<Record<string, unknown>> {
  const cluster = new ProcessCluster({ nodeToken: NODE_TOKEN });
  await cluster.start({ etcdMembers: 3, servers: 3, clients: 0 });
  const samplesMs: number[] = [];
  try {
    for (let run = 0; run < RUNS; run++) {
      const leader = await cluster.leader();
      const killedAt = performance.now();
      await leader.run.stop('SIGKILL');
      let i = 0;
      for (;;) {
        const live = cluster.live();
        if (await write(live[i % live.length] as ServerProc, run)) break;
        i++;
        await new Promise((r) => setTimeout(r, 50));
      }
      const ms = performance.now() - killedAt;
      samplesMs.push(ms);
      console.log(`  run ${run + 1}: ${leader.name} killed -> a write accepted after ${round(ms)} ms`);
      await leader.run.start();
    }
  } finally {
    await cluster.close();
  }
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const p50 = round(sorted[Math.floor(sorted.length / 2)] ?? 0);
  const max = round(sorted[sorted.length - 1] ?? 0);
  console.log(`leader SIGKILL -> new leader serving writes (3 servers, 3 etcd members, lease TTL 3 s): p50 ${p50} ms, max ${max} ms over ${RUNS} runs (goal p50 < 5000 ms)`);
  return { leaderFailoverP50Ms: p50, leaderFailoverMaxMs: max, runs: RUNS, leaseTtlSeconds: 3 };
}
