// Ports as a scheduler resource (Nomad's NetworkIndex.AssignPorts): which
// host ports a node has taken, by address, and the ports a new allocation of
// a group gets there. A static port must be free on its address (not held
// by a live allocation, not reserved by the client); a dynamic port is drawn
// at random from the node's range, with a scan of the whole range when the
// random draws keep hitting used ports. Failures read as Nomad's
// ("network: reserved port collision http=8080",
// "network: dynamic port selection failed"). Pure apart from the usage maps
// it is given to update.

import { DEFAULT_MAX_DYNAMIC_PORT, DEFAULT_MIN_DYNAMIC_PORT, type AllocatedPort, type GroupNetwork, type Node } from '../../structs/index.js';

/** Host address -> the ports live allocations hold on it. */
export type PortUsage = Map<string, Set<number>>;

/** Random draws before the scan, as Nomad's maxRandPortAttempts. */
const RANDOM_ATTEMPTS = 20;

/** The address a node binds ports of the default network on, when it reported none (an agent older than ports). */
const FALLBACK_ADDRESS = '127.0.0.1';

/** The failure when the random draws and the scan found no free port in the range. */
export const DYNAMIC_PORT_FAILURE = 'network: dynamic port selection failed';

/** A port of a group on one host network, resolved against a node. */
interface Wanted {
  label: string;
  static?: number;
  to?: number;
  /** The address on the node ('' when the node lacks the host network). */
  address: string;
  hostNetwork: string;
  reserved: ReadonlySet<number>;
}

/** What a node offers to port assignment, computed once per node and evaluation. */
export interface NodePortView {
  min: number;
  max: number;
  /** Reserved on every address of the node. */
  reserved: ReadonlySet<number>;
  /** The default network's address (a host_network named "default", else the node's address). */
  defaultAt: { address: string; reserved: ReadonlySet<number> };
  addressOf(hostNetwork: string | undefined): { address: string; reserved: ReadonlySet<number> } | undefined;
}

const viewCache = new WeakMap<Node, NodePortView>();

/** The node's port settings (range, reserved ports, addresses). Memoized per node object. Pure. */
export function nodePortView(node: Node): NodePortView {
  const cached = viewCache.get(node);
  if (cached) return cached;
  const reserved = new Set(node.reservedPorts ?? []);
  const networks = new Map<string, { address: string; reserved: ReadonlySet<number> }>();
  for (const [name, hn] of Object.entries(node.hostNetworks ?? {})) {
    if (hn.address) networks.set(name, { address: hn.address, reserved: new Set([...reserved, ...(hn.reservedPorts ?? [])]) });
  }
  const defaultAt = networks.get('default') ?? { address: node.networkAddress || FALLBACK_ADDRESS, reserved };
  const view: NodePortView = {
    defaultAt,
    min: node.minDynamicPort ?? DEFAULT_MIN_DYNAMIC_PORT,
    max: node.maxDynamicPort ?? DEFAULT_MAX_DYNAMIC_PORT,
    reserved,
    addressOf: (hostNetwork) => (hostNetwork === undefined || hostNetwork === 'default' ? defaultAt : networks.get(hostNetwork)),
  };
  viewCache.set(node, view);
  return view;
}

function wanted(view: NodePortView, network: GroupNetwork): Wanted[] | string {
  const out: Wanted[] = [];
  for (const p of network.ports) {
    const at = view.addressOf(p.hostNetwork);
    // Nomad's wording for a host_network the node does not have.
    if (!at) return `network: no addresses available for ${p.hostNetwork} network`;
    out.push({ label: p.label, ...(p.static !== undefined ? { static: p.static } : {}), ...(p.to !== undefined ? { to: p.to } : {}), address: at.address, hostNetwork: p.hostNetwork ?? 'default', reserved: at.reserved });
  }
  return out;
}

const taken = (used: PortUsage | undefined, w: Wanted, port: number, offer: readonly AllocatedPort[]): boolean =>
  w.reserved.has(port) || !!used?.get(w.address)?.has(port) || offer.some((o) => o.value === port && o.hostIp === w.address);

/** A group's ports, compiled once per placement run for portsReason. */
export interface PortAsk {
  statics: Array<{ label: string; port: number; hostNetwork: string | undefined; collision: string }>;
  /** How many dynamic ports it asks on each host network (undefined: the default). */
  dynamic: Array<{ hostNetwork: string | undefined; count: number }>;
}

const askCache = new WeakMap<GroupNetwork, PortAsk>();

/**
 * What one placement run of one group keeps between portsReason calls (its
 * ask, each node's view) so that the check of a node costs a lookup by ID.
 */
export interface PortCache {
  ask?: PortAsk;
  views: Map<string, NodePortView>;
}

/** The group's ports as portsReason reads them. Memoized per network object. Pure. */
export function portAsk(network: GroupNetwork): PortAsk {
  let ask = askCache.get(network);
  if (ask) return ask;
  const a: PortAsk = { statics: [], dynamic: [] };
  for (const p of network.ports) {
    const hn = p.hostNetwork === 'default' ? undefined : p.hostNetwork;
    if (p.static !== undefined) a.statics.push({ label: p.label, port: p.static, hostNetwork: hn, collision: `network: reserved port collision ${p.label}=${p.static}` });
    else {
      const d = a.dynamic.find((x) => x.hostNetwork === hn);
      if (d) d.count++;
      else a.dynamic.push({ hostNetwork: hn, count: 1 });
    }
  }
  ask = a;
  askCache.set(network, ask);
  return ask;
}

/**
 * Whether the group's ports fit on the node next to `used`: undefined when
 * they do, else the reason (Nomad's wording). Cheap, as placement asks it of
 * every candidate node for every allocation: static ports are set lookups;
 * dynamic ports are counted against the free part of the range, which is
 * scanned only when the range is nearly full. Pure.
 */
export function portsReason(node: Node, used: PortUsage | undefined, network: GroupNetwork, cache?: PortCache): string | undefined {
  if (network.ports.length === 0) return undefined;
  const ask = cache ? (cache.ask ??= portAsk(network)) : portAsk(network);
  let view = cache?.views.get(node.id);
  if (!view) {
    view = nodePortView(node);
    cache?.views.set(node.id, view);
  }
  for (const s of ask.statics) {
    const at = s.hostNetwork === undefined ? view.defaultAt : view.addressOf(s.hostNetwork);
    if (!at) return `network: no addresses available for ${s.hostNetwork} network`;
    if (at.reserved.has(s.port) || used?.get(at.address)?.has(s.port)) return s.collision;
  }
  const size = view.max - view.min + 1;
  for (let i = 0; i < ask.dynamic.length; i++) {
    const { hostNetwork, count } = ask.dynamic[i] as PortAsk['dynamic'][number];
    const at = hostNetwork === undefined ? view.defaultAt : view.addressOf(hostNetwork);
    if (!at) return `network: no addresses available for ${hostNetwork} network`;
    const held = used?.get(at.address);
    // Surely enough: even if every held, reserved and static port were inside the range.
    if (size - (held?.size ?? 0) - at.reserved.size - ask.statics.length >= count) continue;
    const statics = new Set(ask.statics.map((s) => s.port));
    let free = 0;
    for (let p = view.min; p <= view.max && free < count; p++) if (!at.reserved.has(p) && !held?.has(p) && !statics.has(p)) free++;
    if (free < count) return DYNAMIC_PORT_FAILURE;
  }
  return undefined;
}

/**
 * The ports an allocation of the group gets on the node: its static ports,
 * and a free port of the node's range for each dynamic one (random draws,
 * then a scan from the bottom of the range). `to` is the port inside the
 * allocation's network namespace: the mapped port in bridge or CNI mode
 * (-1 or absent: the host port), the host port in host mode. Returns the
 * reason instead when they do not fit (see portsReason). Pure; `random`
 * returns a number in [0, 1) (Math.random by default).
 */
export function assignPorts(node: Node, used: PortUsage | undefined, network: GroupNetwork, random: () => number = Math.random): AllocatedPort[] | string {
  if (network.ports.length === 0) return [];
  const view = nodePortView(node);
  const ws = wanted(view, network);
  if (typeof ws === 'string') return ws;
  const mapped = network.mode !== 'host' && network.mode !== 'none';
  const toOf = (w: Wanted, value: number): number => (mapped && w.to !== undefined && w.to > 0 ? w.to : value);
  const offer: AllocatedPort[] = [];
  for (const w of ws) {
    if (w.static === undefined) continue;
    if (taken(used, w, w.static, offer)) return `network: reserved port collision ${w.label}=${w.static}`;
    offer.push({ label: w.label, value: w.static, to: toOf(w, w.static), hostIp: w.address });
  }
  for (const w of ws) {
    if (w.static !== undefined) continue;
    let value: number | undefined;
    for (let i = 0; i < RANDOM_ATTEMPTS && value === undefined; i++) {
      const p = view.min + Math.floor(random() * (view.max - view.min + 1));
      if (!taken(used, w, p, offer)) value = p;
    }
    for (let p = view.min; p <= view.max && value === undefined; p++) if (!taken(used, w, p, offer)) value = p;
    if (value === undefined) return DYNAMIC_PORT_FAILURE;
    offer.push({ label: w.label, value, to: toOf(w, value), hostIp: w.address });
  }
  // In the order the group wrote them.
  const order = new Map(network.ports.map((p, i) => [p.label, i]));
  return offer.sort((a, b) => (order.get(a.label) ?? 0) - (order.get(b.label) ?? 0));
}

/** Counts `ports` as held in `used`. Safe to repeat. */
export function holdPorts(used: PortUsage, ports: readonly AllocatedPort[] | undefined): void {
  for (const p of ports ?? []) {
    let set = used.get(p.hostIp);
    if (!set) used.set(p.hostIp, (set = new Set()));
    set.add(p.value);
  }
}

/** Gives `ports` back (an allocation stopped or replaced in this evaluation). Safe to repeat. */
export function releasePorts(used: PortUsage, ports: readonly AllocatedPort[] | undefined): void {
  for (const p of ports ?? []) used.get(p.hostIp)?.delete(p.value);
}
