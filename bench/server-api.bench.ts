// Placement figures (section `server-api` of `npm run bench`):
//
// 1. The placement algorithm alone: a 500-allocation group over 1,000
//    simulated nodes (feasibility with a CSI node plugin check, bin packing),
//    allocations per second, several rounds.
// 2. The same job registered through JobService on a real SQLite store with
//    the 1,000 nodes in it: parse, validate, reconcile, place and write the
//    500 allocations and the evaluation in one transaction.
// 3. The same registration over the real HTTP API (Server on an ephemeral
//    port): what a user sees from `PUT /v1/jobs` (a Nomad JSON job) until
//    its evaluation placed.

import { join } from 'node:path';
import { ManualClock, silentLogger } from '../src/lib/index.js';
import { Server } from '../src/server/index.js';
import { JobService } from '../src/server/jobs/index.js';
import { placeGroup, type PlacementVolume } from '../src/server/scheduler/index.js';
import { SqliteStateStore, type RowInput, type WriteTxn } from '../src/server/state/index.js';
import { parseJobSpec, specToNomadJob, type Node } from '../src/structs/index.js';
import { round } from './_stats.js';
import type { Evaluation } from '../src/api/index.js';

const NODES = Number(process.env['BENCH_NODES'] ?? 1000);
const ALLOCS = Number(process.env['BENCH_ALLOCS'] ?? 500);
const ROUNDS = Number(process.env['BENCH_PLACE_ROUNDS'] ?? 5);

function nodes(): Node[] {
  // Every fifth node lacks a healthy plugin, and sizes differ, so feasibility and scoring do real work.
  return Array.from({ length: NODES }, (_, i) => {
    const id = `node-${String(i).padStart(4, '0')}`;
    return {
      id,
      name: id,
      datacenter: 'dc1',
      httpAddr: '',
      drivers: { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', 'none'] } },
      resources: { cpuMhz: 4000 + (i % 7) * 500, memoryMb: 8192 },
      attributes: {},
      csiControllerPlugins: {},
      csiNodePlugins: {
        hostpath: {
          pluginId: 'hostpath',
          type: 'csi-node',
          allocId: `plugin-${i}`,
          healthy: i % 5 !== 0,
          healthReason: '',
          provider: 'hostpath.csi.berth.dev',
          version: '1',
          updatedAt: 0,
        },
      },
      status: 'ready',
      statusDescription: '',
      lastHeartbeat: 0,
      createIndex: 1,
      modifyIndex: 1,
    } satisfies Node;
  });
}

// Each allocation mounts a shared multi-writer CSI volume: nodes without a healthy node plugin are filtered.
const spec = (id: string) => ({
  id,
  groups: [
    {
      name: 'web',
      count: ALLOCS,
      volumes: { shared: { type: 'csi', source: 'shared', accessMode: 'multi-node-multi-writer', attachmentMode: 'file-system' } },
      tasks: [
        { name: 'srv', driver: 'exec', resources: { cpuMhz: 250, memoryMb: 256 }, volumeMounts: [{ volume: 'shared', destination: '/shared' }] },
      ],
    },
  ],
});

const sharedVolume: RowInput<'volumes'> = {
  id: 'shared',
  namespace: 'default',
  name: 'shared',
  externalId: 'ext-shared',
  pluginId: 'hostpath',
  provider: 'hostpath.csi.berth.dev',
  capacityMinBytes: 0,
  capacityMaxBytes: 0,
  capacityBytes: 0,
  capabilities: [{ accessMode: 'multi-node-multi-writer', attachmentMode: 'file-system' }],
  mountOptions: { fsType: '', mountFlags: [] },
  secrets: {},
  parameters: {},
  context: {},
  accessibleTopology: [],
};

const placementVolume: PlacementVolume = {
  id: 'shared',
  pluginId: 'hostpath',
  accessMode: 'multi-node-multi-writer',
  topologies: [],
  schedulable: true,
  claims: [],
};

/** Nodes, the volume and the plugin row (as the plugin service would derive it from the nodes). */
function seed(txn: WriteTxn, list: readonly Node[]): void {
  for (const n of list) txn.put('nodes', n);
  txn.put('volumes', sharedVolume);
  const healthy = list.filter((n) => n.csiNodePlugins['hostpath']?.healthy).length;
  txn.put('plugins', {
    id: 'hostpath',
    provider: 'hostpath.csi.berth.dev',
    version: '1',
    controllerRequired: false,
    controllerCapabilities: [],
    nodeCapabilities: [],
    controllers: {},
    controllersHealthy: 0,
    controllersExpected: 0,
    nodesHealthy: healthy,
    nodesExpected: list.length,
    allocations: [],
    exhaustedNodes: {},
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

export default async function bench(dir: string): Promise<Record<string, unknown>> {
  const nodeList = nodes();
  const group = parseJobSpec(spec('j')).groups[0]!;
  const indexes = Array.from({ length: ALLOCS }, (_, i) => i);

  // 1. The algorithm alone.
  const pureMs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    const res = placeGroup({ jobId: `j${r}`, datacenters: ['*'], group, indexes, nodes: nodeList, usage: new Map(), volumes: new Map([['shared', placementVolume]]) });
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (res.placements.length !== ALLOCS) throw new Error(`placed ${res.placements.length} of ${ALLOCS}`);
    pureMs.push(ms);
  }
  const pure = { p50Ms: round(median(pureMs)), allocsPerSec: Math.round(ALLOCS / (median(pureMs) / 1000)) };
  console.log(`placement only: ${ALLOCS} allocs over ${NODES} nodes in ${pure.p50Ms} ms (p50 of ${ROUNDS}) = ${pure.allocsPerSec} allocs/s`);

  // 2. Through JobService on SQLite.
  const store = SqliteStateStore.open(join(dir, 'state.db'));
  const serviceMs: number[] = [];
  try {
    store.writeNow((txn) => seed(txn, nodeList));
    const jobs = new JobService({ store, clock: new ManualClock(0), logger: silentLogger() });
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = process.hrtime.bigint();
      // Registration writes a pending evaluation; placement is the evaluation worker's pass after (run here).
      const { evaluation: registered } = await jobs.register(spec(`svc-${r}`));
      const evaluation = (await jobs.evaluatePending()).evaluations.find((e) => e.id === registered.id);
      serviceMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (evaluation?.placed !== ALLOCS) throw new Error(`placed ${evaluation?.placed}: ${evaluation?.blockedReason}`);
      await jobs.stop('default', `svc-${r}`, { purge: true });
      await jobs.evaluatePending();
    }
  } finally {
    store.close();
  }
  const service = { p50Ms: round(median(serviceMs)), allocsPerSec: Math.round(ALLOCS / (median(serviceMs) / 1000)) };
  console.log(`register + place + write (SQLite): ${service.p50Ms} ms (p50 of ${ROUNDS}) = ${service.allocsPerSec} allocs/s`);

  // 3. Over HTTP.
  const token = 'bench-management-token';
  const server = new Server({ dataDir: join(dir, 'server'), tokens: [{ name: 'bench', secret: token, role: 'management' }] });
  const httpMs: number[] = [];
  try {
    const { url } = await server.start();
    await server.store.write((txn) => seed(txn, nodeList));
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    for (let r = 0; r < ROUNDS; r++) {
      const body = JSON.stringify({ Job: specToNomadJob(parseJobSpec(spec(`http-${r}`))) });
      const t0 = process.hrtime.bigint();
      const res = await fetch(`${url}/v1/jobs`, { method: 'PUT', headers, body });
      const { EvalID } = (await res.json()) as { EvalID: string };
      // The answer comes once the registration is durable; the evaluation worker places after: follow it.
      let evaluation: Evaluation | undefined;
      let index = 0;
      while (!evaluation || evaluation.Status === 'pending') {
        const e = await fetch(`${url}/v1/evaluation/${EvalID}${index ? `?index=${index}&wait=30s` : ''}`, { headers });
        evaluation = (await e.json()) as typeof evaluation & object;
        index = Number(e.headers.get('x-nomad-index') ?? e.headers.get('x-berth-index') ?? 0);
      }
      httpMs.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (evaluation.BerthPlaced !== ALLOCS) throw new Error(`HTTP register placed ${JSON.stringify(evaluation).slice(0, 200)}`);
      await fetch(`${url}/v1/job/http-${r}?purge=true`, { method: 'DELETE', headers: { authorization: headers.authorization } });
    }
  } finally {
    await server.stop();
  }
  const http = { p50Ms: round(median(httpMs)), allocsPerSec: Math.round(ALLOCS / (median(httpMs) / 1000)) };
  console.log(`PUT /v1/jobs over HTTP, until its evaluation placed: ${http.p50Ms} ms (p50 of ${ROUNDS}) = ${http.allocsPerSec} allocs/s`);

  return { nodes: NODES, allocs: ALLOCS, rounds: ROUNDS, placementOnly: pure, registerSqlite: service, registerHttp: http };
}
