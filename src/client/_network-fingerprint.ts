// The node's addresses for port allocation (Nomad's network fingerprint):
// the default network's IP (client network_interface, else the interface of
// the default route, else the first non-loopback IPv4 address) and each
// host_network's address (the first address of its interface, or of any
// interface, inside its CIDR). Private to src/client; read by the
// fingerprinter on every fingerprint, so a late DHCP lease shows up.

import { readFileSync } from 'node:fs';
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import os from 'node:os';
import { DEFAULT_MAX_DYNAMIC_PORT, DEFAULT_MIN_DYNAMIC_PORT, type HostNetwork, type NodeFingerprint } from '../structs/index.js';

/** client { network_interface, min/max_dynamic_port, reserved { reserved_ports }, host_network "name" {} }. */
export interface ClientNetworkOptions {
  /** The interface whose first IPv4 address is the node's address ("lo" on a dev agent). */
  interface?: string;
  minDynamicPort?: number;
  maxDynamicPort?: number;
  reservedPorts?: number[];
  hostNetworks?: Record<string, { cidr?: string; interface?: string; reservedPorts?: number[] }>;
}

type Interfaces = NodeJS.Dict<os.NetworkInterfaceInfo[]>;

/** The interface of the IPv4 default route (from /proc/net/route), or undefined. Never throws. */
export function defaultRouteInterface(routeTable?: string): string | undefined {
  let text = routeTable;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/net/route', 'utf8');
    } catch {
      return undefined;
    }
  }
  for (const line of text.split('\n').slice(1)) {
    const [iface, destination, , , , , , mask] = line.trim().split(/\s+/);
    if (iface && destination === '00000000' && mask === '00000000') return iface;
  }
  return undefined;
}

const ipv4Of = (ifaces: Interfaces, name: string): string | undefined => ifaces[name]?.find((a) => a.family === 'IPv4')?.address;

/** The node's default address: the configured interface's, the default route's, the first outside loopback, else 127.0.0.1. Pure over its inputs. */
export function nodeAddress(ifaces: Interfaces, configured: string | undefined, routeIface: string | undefined): string {
  if (configured) return ipv4Of(ifaces, configured) ?? '';
  if (routeIface) {
    const a = ipv4Of(ifaces, routeIface);
    if (a) return a;
  }
  for (const list of Object.values(ifaces)) {
    const a = list?.find((x) => x.family === 'IPv4' && !x.internal);
    if (a) return a.address;
  }
  return '127.0.0.1';
}

function inCidr(cidr: string): ((address: string) => boolean) | undefined {
  const [net, bits] = cidr.split('/');
  if (!net || bits === undefined) return undefined;
  const list = new BlockList();
  try {
    if (isIPv4(net)) list.addSubnet(net, Number(bits), 'ipv4');
    else if (isIPv6(net)) list.addSubnet(net, Number(bits), 'ipv6');
    else return undefined;
  } catch {
    return undefined;
  }
  return (address) => list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
}

/** A host_network's address: the first address of its interface (or of every interface) inside its CIDR (or any, without one); '' when none. Pure. */
export function hostNetworkAddress(ifaces: Interfaces, hn: { cidr?: string; interface?: string }): string {
  const match = hn.cidr ? inCidr(hn.cidr) : undefined;
  const names = hn.interface ? [hn.interface] : Object.keys(ifaces);
  for (const name of names) {
    for (const a of ifaces[name] ?? []) {
      if (match ? match(a.address) : a.family === 'IPv4') return a.address;
    }
  }
  return '';
}

/** The port-related fields of the node's fingerprint. Reads the machine's interfaces; never throws. */
export function networkFingerprint(opts: ClientNetworkOptions | undefined, ifaces: Interfaces = os.networkInterfaces()): Pick<NodeFingerprint, 'networkAddress' | 'reservedPorts' | 'minDynamicPort' | 'maxDynamicPort' | 'hostNetworks'> {
  const hostNetworks: Record<string, HostNetwork> = {};
  for (const [name, hn] of Object.entries(opts?.hostNetworks ?? {})) {
    hostNetworks[name] = {
      ...(hn.cidr ? { cidr: hn.cidr } : {}),
      ...(hn.interface ? { interface: hn.interface } : {}),
      address: hostNetworkAddress(ifaces, hn),
      ...(hn.reservedPorts?.length ? { reservedPorts: hn.reservedPorts } : {}),
    };
  }
  return {
    networkAddress: nodeAddress(ifaces, opts?.interface, opts?.interface ? undefined : defaultRouteInterface()),
    ...(opts?.reservedPorts?.length ? { reservedPorts: opts.reservedPorts } : {}),
    minDynamicPort: opts?.minDynamicPort ?? DEFAULT_MIN_DYNAMIC_PORT,
    maxDynamicPort: opts?.maxDynamicPort ?? DEFAULT_MAX_DYNAMIC_PORT,
    ...(Object.keys(hostNetworks).length ? { hostNetworks } : {}),
  };
}
