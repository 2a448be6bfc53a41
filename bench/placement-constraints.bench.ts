// Placement with constraints and a spread (section `placement-constraints`):
// a 500-allocation group over 1,000 simulated nodes with 3 constraints
// (attribute equality, a go-version range, a regexp over meta) and a spread
// over 10 racks, against the same placement without rules. The goal
// is < 100 ms for the constrained one.

import { placeGroup } from '../src/server/scheduler/index.js';
import { parseJobSpec, type Node } from '../src/structs/index.js';
import { round } from './_stats.js';

const NODES = Number(process.env['BENCH_NODES'] ?? 1000);
const ALLOCS = Number(process.env['BENCH_ALLOCS'] ?? 500);
const ROUNDS = Number(process.env['BENCH_PLACE_ROUNDS'] ?? 7);

function nodes(): Node[] {
  // One node in ten runs an old kernel (filtered by the version constraint), one in eight is class "batch" (filtered by regexp).
  return Array.from({ length: NODES }, (_, i) => {
    const id = `node-${String(i).padStart(4, '0')}`;
    return {
      id,
      name: id,
      datacenter: i % 2 ? 'dc1' : 'dc2',
      httpAddr: '',
      drivers: { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', 'none'] } },
      resources: { cpuMhz: 4000 + (i % 7) * 500, memoryMb: 8192 },
      attributes: { 'kernel.name': 'linux', 'kernel.version': i % 10 === 0 ? '3.10.0' : '6.1.0' },
      nodeClass: i % 8 === 0 ? 'batch' : 'web',
      meta: { rack: `r${i % 10}`, pool: i % 8 === 0 ? 'batch-a' : 'web-a' },
      csiControllerPlugins: {},
      csiNodePlugins: {},
      status: 'ready',
      statusDescription: '',
      lastHeartbeat: 0,
      createIndex: 1,
      modifyIndex: 1,
    } satisfies Node;
  });
}

const spec = (rules: boolean) =>
  parseJobSpec({
    id: 'web',
    ...(rules
      ? {
          constraints: [
            { attribute: '${attr.kernel.name}', value: 'linux' },
            { attribute: '${attr.kernel.version}', version: '>= 4.0' },
            { attribute: '${meta.pool}', operator: 'regexp', value: '^web-' },
          ],
          spreads: [{ attribute: '${meta.rack}' }],
        }
      : {}),
    groups: [{ name: 'web', count: ALLOCS, tasks: [{ name: 'srv', driver: 'exec', resources: { cpuMhz: 250, memoryMb: 256 } }] }],
  });

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function measure(rules: boolean, list: readonly Node[]): { p50Ms: number; racks: number } {
  const job = spec(rules);
  const group = job.groups[0]!;
  const indexes = Array.from({ length: ALLOCS }, (_, i) => i);
  const ms: number[] = [];
  let racks = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    const res = placeGroup({ jobId: `j${r}`, datacenters: ['*'], group, indexes, nodes: list, usage: new Map(), volumes: new Map(), job, existing: [] });
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (res.placements.length !== ALLOCS) throw new Error(`placed ${res.placements.length} of ${ALLOCS}`);
    racks = new Set(res.placements.map((p) => list.find((n) => n.id === p.nodeId)?.meta?.['rack'])).size;
  }
  return { p50Ms: round(median(ms)), racks };
}

export default async function bench(): Promise<Record<string, unknown>> {
  const list = nodes();
  const plain = measure(false, list);
  const constrained = measure(true, list);
  console.log(`placement without rules: ${ALLOCS} allocs over ${NODES} nodes in ${plain.p50Ms} ms (p50 of ${ROUNDS})`);
  console.log(
    `placement with 3 constraints and a spread: ${ALLOCS} allocs over ${NODES} nodes in ${constrained.p50Ms} ms (p50 of ${ROUNDS}; goal < 100 ms), spread over ${constrained.racks} racks`,
  );
  return { nodes: NODES, allocs: ALLOCS, rounds: ROUNDS, withoutRulesP50Ms: plain.p50Ms, withRulesP50Ms: constrained.p50Ms, racksUsed: constrained.racks, goalMs: 100 };
}
