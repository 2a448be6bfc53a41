// Bridge network figures (section `bridge` of `npm run bench`), with the real
// CNI plugins and iptables: what group network mode "bridge" adds to an
// allocation's start (NetworkManager.create: namespace, CNI ADD of loopback,
// bridge + host-local, firewall, portmap with one mapped port) and to its
// stop (destroy: CNI DEL, namespace removed), p50/p90; and the same without
// a port (portmap is then left out of the chain). Measured on a node
// whose bridge already exists (another allocation stays attached, the usual
// case), beside the first allocation on the node (bridge made) and the last
// one leaving (bridge and chains removed), and mode "none" (a bare
// namespace) for comparison. A bridge and subnet of its own; no traffic.

import path from 'node:path';
import { NetworkManager } from '../src/client/network/index.js';
import { round, summarize, timeNs, type Summary } from './_stats.js';

const RUNS = Number(process.env['BENCH_BRIDGE_RUNS'] ?? 20);

const ms = (s: Summary): { p50Ms: number; p90Ms: number; n: number } => ({ p50Ms: round(s.p50Us / 1000, 1), p90Ms: round(s.p90Us / 1000, 1), n: s.n });

export default async function bridgeBench(dir: string): Promise<Record<string, unknown>> {
  const tag = (process.pid % 100000).toString(36);
  const network = new NetworkManager({
    prefix: 'bbn-',
    stateDir: path.join(dir, 'network'),
    bridge: { name: `bbn${tag}`, subnet: `10.${200 + (process.pid % 50)}.${process.pid % 250}.0/24` },
  });
  const port = (i: number) => [{ label: 'http', value: 30000 + ((process.pid + i) % 2000), to: 80, hostIp: '127.0.0.1' }];

  // First allocation on the node: the bridge and chains are made; last one leaving: they are removed.
  const coldUp: bigint[] = [];
  const coldDown: bigint[] = [];
  for (let i = 0; i < Math.min(5, RUNS); i++) {
    const id = `bench-cold-${process.pid}-${i}`;
    coldUp.push(await timeNs(() => network.create(id, { mode: 'bridge', ports: port(i) })));
    coldDown.push(await timeNs(() => network.destroy(id)));
  }

  const anchor = `bench-anchor-${process.pid}`;
  await network.create(anchor, { mode: 'bridge' });
  const up: bigint[] = [];
  const down: bigint[] = [];
  const bareUp: bigint[] = [];
  const bareDown: bigint[] = [];
  const noneUp: bigint[] = [];
  const noneDown: bigint[] = [];
  try {
    for (let i = 0; i < RUNS; i++) {
      const id = `bench-${process.pid}-${i}`;
      up.push(await timeNs(() => network.create(id, { mode: 'bridge', ports: port(i) })));
      down.push(await timeNs(() => network.destroy(id)));
      bareUp.push(await timeNs(() => network.create(`${id}-bare`, { mode: 'bridge' })));
      bareDown.push(await timeNs(() => network.destroy(`${id}-bare`)));
      noneUp.push(await timeNs(() => network.create(`${id}-none`, { mode: 'none' })));
      noneDown.push(await timeNs(() => network.destroy(`${id}-none`)));
    }
  } finally {
    await network.destroy(anchor);
  }
  const results = {
    setUp: ms(summarize(up)),
    tearDown: ms(summarize(down)),
    noPortsSetUp: ms(summarize(bareUp)),
    noPortsTearDown: ms(summarize(bareDown)),
    firstSetUp: ms(summarize(coldUp)),
    lastTearDown: ms(summarize(coldDown)),
    noneSetUp: ms(summarize(noneUp)),
    noneTearDown: ms(summarize(noneDown)),
  };
  console.log(`bridge set-up, 1 port           p50 ${results.setUp.p50Ms} ms, p90 ${results.setUp.p90Ms} ms (goal p50 < 50 ms)`);
  console.log(`bridge teardown, 1 port         p50 ${results.tearDown.p50Ms} ms, p90 ${results.tearDown.p90Ms} ms (goal p50 < 50 ms)`);
  console.log(`bridge, no port (no portmap)    set-up p50 ${results.noPortsSetUp.p50Ms} ms, teardown p50 ${results.noPortsTearDown.p50Ms} ms`);
  console.log(`first alloc on node (set-up)    p50 ${results.firstSetUp.p50Ms} ms; last leaving (teardown + sweep) p50 ${results.lastTearDown.p50Ms} ms`);
  console.log(`mode none, for comparison       set-up p50 ${results.noneSetUp.p50Ms} ms, teardown p50 ${results.noneTearDown.p50Ms} ms`);
  return results;
}
