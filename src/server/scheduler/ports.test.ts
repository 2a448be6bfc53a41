// Ports as a scheduler resource: what a user sees when jobs ask for ports.
// Two allocations never share a host port on a node; a static port another
// allocation or the client holds makes the node infeasible, naming the port;
// dynamic ports come from the node's range and run out with Nomad's words.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describePlacementFailure, parseJobSpec, type AllocatedPort, type Node, type TaskGroup } from '../../structs/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { placeGroup, type NodeUsage } from './placement.js';
import { assignPorts, holdPorts, portsReason, releasePorts, type PortUsage } from './ports.js';

function group(network: Record<string, unknown>, count = 1): TaskGroup {
  return parseJobSpec({ id: 'j', groups: [{ name: 'g', count, network, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 1, memoryMb: 1 } }] }] }).groups[0]!;
}

const node = (id: string, extra: Partial<Node> = {}): Node => testNode(id, { networkAddress: '10.0.0.1', resources: { cpuMhz: 100_000, memoryMb: 100_000 }, ...extra });

function place(g: TaskGroup, nodes: Node[], indexes: number[], usage = new Map<string, NodeUsage>(), random?: () => number) {
  return placeGroup({ jobId: 'j', datacenters: ['*'], group: g, indexes, nodes, usage, volumes: new Map(), ...(random ? { random } : {}) });
}

/** A seeded generator, so that a failure can be replayed. */
function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1_103_515_245 + 12_345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

describe('ports: the allocator', () => {
  it('gives a static port as asked, on the node address, and a dynamic one from the node range', () => {
    const n = node('a', { minDynamicPort: 30000, maxDynamicPort: 30010 });
    const ports = assignPorts(n, undefined, group({ ports: [{ label: 'http', static: 8080 }, { label: 'metrics' }] }).network, seeded(1));
    assert.ok(Array.isArray(ports), String(ports));
    assert.deepEqual(ports[0], { label: 'http', value: 8080, to: 8080, hostIp: '10.0.0.1' });
    assert.equal(ports[1]!.label, 'metrics');
    assert.ok(ports[1]!.value >= 30000 && ports[1]!.value <= 30010, String(ports[1]!.value));
    assert.equal(ports[1]!.to, ports[1]!.value, 'host mode: the task listens on the host port');
  });

  it('refuses a static port held by another allocation or reserved by the client, naming it as Nomad does', () => {
    const used: PortUsage = new Map();
    holdPorts(used, [{ label: 'x', value: 8080, to: 8080, hostIp: '10.0.0.1' }]);
    const net = group({ ports: [{ label: 'http', static: 8080 }] }).network;
    assert.equal(portsReason(node('a'), used, net), 'network: reserved port collision http=8080');
    assert.equal(assignPorts(node('a'), used, net), 'network: reserved port collision http=8080');
    assert.equal(portsReason(node('b', { reservedPorts: [22, 8080] }), undefined, net), 'network: reserved port collision http=8080');
    // The same port on another address of the node is free.
    const other = group({ ports: [{ label: 'http', static: 8080, hostNetwork: 'public' }] }).network;
    const withPublic = node('c', { hostNetworks: { public: { address: '192.0.2.7' } } });
    assert.deepEqual(assignPorts(withPublic, used, other), [{ label: 'http', value: 8080, to: 8080, hostIp: '192.0.2.7' }]);
    // Given back, it is free again.
    releasePorts(used, [{ label: 'x', value: 8080, to: 8080, hostIp: '10.0.0.1' }]);
    assert.equal(portsReason(node('a'), used, net), undefined);
  });

  it('never picks a used or reserved port dynamically, even when random draws keep hitting them (the scan finds the last free one)', () => {
    const n = node('a', { minDynamicPort: 20000, maxDynamicPort: 20009, reservedPorts: [20003] });
    const used: PortUsage = new Map();
    holdPorts(used, [20000, 20001, 20002, 20004, 20005, 20006, 20008, 20009].map((value) => ({ label: 'x', value, to: value, hostIp: '10.0.0.1' })));
    const net = group({ ports: [{ label: 'a' }] }).network;
    // Always drawing 20000: the random draws fail, the scan finds 20007.
    assert.deepEqual(assignPorts(n, used, net, () => 0), [{ label: 'a', value: 20007, to: 20007, hostIp: '10.0.0.1' }]);
    const two = group({ ports: [{ label: 'a' }, { label: 'b' }] }).network;
    assert.equal(portsReason(n, used, two), 'network: dynamic port selection failed');
    assert.equal(assignPorts(n, used, two, () => 0), 'network: dynamic port selection failed');
  });

  it('maps `to` only where the allocation has its own namespace; -1 means the host port', () => {
    const n = node('a', { minDynamicPort: 25000, maxDynamicPort: 25000 });
    const hostMode = group({ ports: [{ label: 'http', static: 8080, to: 80 }] }).network;
    assert.equal((assignPorts(n, undefined, hostMode) as AllocatedPort[])[0]!.to, 8080);
    // A bridge-mode network as the bridge work will give it (the mode is checked by placement, not here).
    const bridged = { ...hostMode, mode: 'bridge' } as unknown as TaskGroup['network'];
    assert.equal((assignPorts(n, undefined, bridged) as AllocatedPort[])[0]!.to, 80);
    const same = { mode: 'bridge', ports: [{ label: 'x', to: -1 }] } as unknown as TaskGroup['network'];
    assert.deepEqual(assignPorts(n, undefined, same), [{ label: 'x', value: 25000, to: 25000, hostIp: '10.0.0.1' }]);
  });

  it('refuses a port on a host network the node lacks', () => {
    const net = group({ ports: [{ label: 'http', hostNetwork: 'public' }] }).network;
    assert.equal(portsReason(node('a'), undefined, net), 'network: no addresses available for public network');
  });
});

describe('ports: placement', () => {
  it('never gives two allocations the same host port on a node', () => {
    const n = node('a', { minDynamicPort: 20000, maxDynamicPort: 20099 });
    const r = place(group({ ports: [{ label: 'http' }, { label: 'admin' }] }, 50), [n], [...Array(50).keys()], new Map(), seeded(7));
    assert.equal(r.placements.length, 50);
    const all = r.placements.flatMap((p) => p.ports.map((x) => x.value));
    assert.equal(new Set(all).size, 100, 'every host port once');
    assert.ok(all.every((v) => v >= 20000 && v <= 20099));
  });

  it('puts the second allocation asking for a static port on another node, and fails with the port named when none is left', () => {
    const g = group({ ports: [{ label: 'http', static: 8080 }] }, 3);
    const r = place(g, [node('a'), node('b')], [0, 1, 2]);
    assert.deepEqual(r.placements.map((p) => p.nodeId).sort(), ['a', 'b']);
    assert.ok(r.failure);
    assert.equal(r.failure.unplaced, 1);
    assert.equal(r.failure.nodesExhausted, 2);
    assert.deepEqual(r.failure.reasons, { 'exhausted network: reserved port collision http=8080': 2 });
    assert.equal(describePlacementFailure(r.failure), '2 nodes exhausted network: reserved port collision http=8080');
  });

  it('places nothing when the dynamic range is exhausted, and says so', () => {
    const n = node('a', { minDynamicPort: 20000, maxDynamicPort: 20001 });
    const r = place(group({ ports: [{ label: 'http' }] }, 3), [n], [0, 1, 2]);
    assert.equal(r.placements.length, 2);
    assert.equal(describePlacementFailure(r.failure!), '1 node exhausted network: dynamic port selection failed');
  });

  it('counts ports already held on the node (live allocations of other jobs)', () => {
    const n = node('a');
    const usage = new Map<string, NodeUsage>([['a', { cpuMhz: 0, memoryMb: 0, volumes: new Map(), jobAllocs: new Map(), ports: new Map([['10.0.0.1', new Set([9090])]]) }]]);
    const r = place(group({ ports: [{ label: 'prom', static: 9090 }] }), [n], [0], usage);
    assert.equal(r.placements.length, 0);
    assert.match(describePlacementFailure(r.failure!), /reserved port collision prom=9090/);
  });
});
