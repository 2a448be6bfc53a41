// The port and network fields of a node's fingerprint as the server keeps them: only
// well-formed values from the wire (a port list of integers in range, a
// range with min <= max, host networks with string addresses). Pure.

import { MAX_PORT, type HostNetwork, type NodeFingerprint } from '../../structs/index.js';

type PortFields = Pick<NodeFingerprint, 'networkAddress' | 'reservedPorts' | 'minDynamicPort' | 'maxDynamicPort' | 'hostNetworks' | 'networkModes'>;

const isPort = (p: unknown): p is number => typeof p === 'number' && Number.isInteger(p) && p >= 1 && p <= MAX_PORT;
const portList = (v: unknown): number[] | undefined => (Array.isArray(v) && v.every(isPort) ? [...v] : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The port fields of `fp` worth storing; malformed ones are left out (the node then gets the defaults). */
export function portFingerprint(fp: NodeFingerprint): PortFields {
  const out: PortFields = {};
  const address = str(fp.networkAddress);
  if (address) out.networkAddress = address;
  const reserved = portList(fp.reservedPorts);
  if (reserved?.length) out.reservedPorts = reserved;
  if (isPort(fp.minDynamicPort) && isPort(fp.maxDynamicPort) && fp.minDynamicPort <= fp.maxDynamicPort) {
    out.minDynamicPort = fp.minDynamicPort;
    out.maxDynamicPort = fp.maxDynamicPort;
  }
  if (fp.hostNetworks && typeof fp.hostNetworks === 'object') {
    const networks: Record<string, HostNetwork> = {};
    for (const [name, hn] of Object.entries(fp.hostNetworks)) {
      if (!hn || typeof hn !== 'object') continue;
      const cidr = str(hn.cidr);
      const iface = str(hn.interface);
      const hnReserved = portList(hn.reservedPorts);
      networks[name] = { address: str(hn.address) ?? '', ...(cidr ? { cidr } : {}), ...(iface ? { interface: iface } : {}), ...(hnReserved?.length ? { reservedPorts: hnReserved } : {}) };
    }
    if (Object.keys(networks).length) out.hostNetworks = networks;
  }
  if (Array.isArray(fp.networkModes) && fp.networkModes.every((m) => typeof m === 'string')) out.networkModes = [...fp.networkModes];
  return out;
}
