// Ports as a scheduler resource: what asking for ports adds to placement.
// 500 allocations of one group over 1,000 nodes, without ports, with two
// dynamic ports each, and with a static port (one allocation per node at
// most), the pure placement function (ports.ts inside placement.ts); and a
// crowded node: dynamic ports drawn while 90 % of the range is taken (the
// random draws then the scan).

import { parseJobSpec, type Node } from '../src/structs/index.js';
import { placeGroup, holdPorts, assignPorts, type PortUsage } from '../src/server/scheduler/index.js';
import { testNode } from '../test/support/scheduler-nodes.js';
import { round } from './_stats.js';

const NODES = 1000;
const ALLOCS = 500;
const ROUNDS = 9;

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

function group(ports: unknown[]) {
  return parseJobSpec({ id: 'j', groups: [{ name: 'g', count: ALLOCS, network: { ports }, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 10, memoryMb: 10 } }] }] }).groups[0]!;
}

function placeMs(nodes: Node[], ports: unknown[]): number {
  const g = group(ports);
  const indexes = Array.from({ length: ALLOCS }, (_, i) => i);
  const ms: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    const res = placeGroup({ jobId: `j${r}`, datacenters: ['*'], group: g, indexes, nodes, usage: new Map(), volumes: new Map() });
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (res.placements.length !== ALLOCS) throw new Error(`placed ${res.placements.length} of ${ALLOCS}`);
  }
  return round(median(ms), 2);
}

export default async function bench(): Promise<Record<string, unknown>> {
  const nodes = Array.from({ length: NODES }, (_, i) => testNode(`n${String(i).padStart(4, '0')}`, { networkAddress: `10.0.${i >> 8}.${i & 255}`, resources: { cpuMhz: 4000, memoryMb: 8192 } }));
  placeMs(nodes, [{ label: 'warm-up' }]);
  const none = placeMs(nodes, []);
  const dynamic = placeMs(nodes, [{ label: 'http' }, { label: 'admin' }]);
  const fixed = placeMs(nodes, [{ label: 'http', static: 8080 }]);
  console.log(`placing ${ALLOCS} allocs over ${NODES} nodes (p50 of ${ROUNDS}): no ports ${none} ms, 2 dynamic ports ${dynamic} ms (+${round(((dynamic - none) / none) * 100)} %), 1 static port ${fixed} ms`);

  // One node whose default range (12,001 ports) is 90 % taken: one dynamic port, drawn and scanned.
  const crowded = testNode('c', { networkAddress: '10.9.9.9' });
  const used: PortUsage = new Map();
  holdPorts(used, Array.from({ length: 10_800 }, (_, i) => ({ label: 'x', value: 20000 + i, to: 20000 + i, hostIp: '10.9.9.9' })));
  const g = group([{ label: 'http' }]);
  const N = 2000;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) if (typeof assignPorts(crowded, used, g.network) === 'string') throw new Error('no port found');
  const crowdedUs = round(Number(process.hrtime.bigint() - t0) / 1e3 / N, 2);
  console.log(`one dynamic port on a node with 90 % of its range taken: ${crowdedUs} µs each`);
  return { nodes: NODES, allocs: ALLOCS, noPortsP50Ms: none, twoDynamicPortsP50Ms: dynamic, oneStaticPortP50Ms: fixed, crowdedDynamicPortUs: crowdedUs };
}
