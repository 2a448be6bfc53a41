// The CNI configuration lists Berth attaches allocations with: its own
// bridge network (configured as Nomad's bridge mode configures its `nomad`
// bridge: loopback, bridge with host-local IPAM, hairpin and masquerade,
// firewall with an admin chain, portmap with SNAT) and the user's networks
// (`mode = "cni/<name>"`), loaded from .conflist/.conf files.

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { CniError, type CniConfList, type CniPluginConf } from './cni-runner.js';

/** Client settings of the bridge network (client `bridge_network_name`, `bridge_network_subnet`). */
export interface BridgeSettings {
  /** The Linux bridge, also the CNI network's name (so its IPAM leases sit in /var/lib/cni/networks/<name>). Default 'berth'. */
  name: string;
  /** IPv4 subnet the allocations take addresses from. Default 172.26.64.0/20 (Nomad's). */
  subnet: string;
}

export const DEFAULT_BRIDGE: BridgeSettings = { name: 'berth', subnet: '172.26.64.0/20' };

/** Where host-local keeps its leases. */
export const IPAM_DATA_DIR = '/var/lib/cni/networks';

/** The firewall plugin's admin chain for a bridge: BERTH-ADMIN for the default, BERTH-ADMIN-<NAME> for others (iptables allows 28 characters). */
export function adminChainName(bridge: string): string {
  return (bridge === DEFAULT_BRIDGE.name ? 'BERTH-ADMIN' : `BERTH-ADMIN-${bridge.toUpperCase()}`).slice(0, 28);
}

/** Throws CniError CNI_BAD_CONFIG unless `name` can be a Linux bridge name and `subnet` an IPv4 CIDR. */
export function validateBridgeSettings(s: BridgeSettings): void {
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(s.name)) {
    throw new CniError('CNI_BAD_CONFIG', `bridge_network_name "${s.name}" must be 1-15 letters, digits, "_", "." or "-" (a Linux interface name)`);
  }
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(s.subnet);
  if (!m || m.slice(1, 5).some((o) => Number(o) > 255) || Number(m[5]) < 8 || Number(m[5]) > 30) {
    throw new CniError('CNI_BAD_CONFIG', `bridge_network_subnet "${s.subnet}" must be an IPv4 CIDR between /8 and /30, e.g. 172.26.64.0/20`);
  }
}

/** Berth's bridge network as a configuration list (Nomad's bridge template with our names). Pure. */
export function bridgeConfList(s: BridgeSettings): CniConfList {
  return {
    cniVersion: '0.4.0',
    name: s.name,
    plugins: [
      { type: 'loopback' },
      {
        type: 'bridge',
        bridge: s.name,
        ipMasq: true,
        isGateway: true,
        forceAddress: true,
        hairpinMode: true,
        ipam: { type: 'host-local', ranges: [[{ subnet: s.subnet }]], routes: [{ dst: '0.0.0.0/0' }] },
      },
      { type: 'firewall', backend: 'iptables', iptablesAdminChainName: adminChainName(s.name) },
      { type: 'portmap', capabilities: { portMappings: true }, snat: true },
    ],
  };
}

/** A port the allocation was given (Allocation.ports). */
export interface AllocPort {
  label: string;
  value: number;
  to: number;
  hostIp: string;
}

/** portmap's runtime entry. */
export interface PortMapping {
  hostPort: number;
  containerPort: number;
  protocol: 'tcp' | 'udp';
  hostIP?: string;
}

/**
 * The portMappings capability argument for an allocation's ports: each port
 * mapped for tcp and udp from its host port to its `to` port (the host port
 * where `to` is unset), bound to its host IP unless that is a wildcard, as
 * Nomad maps them. Pure.
 */
export function portMappings(ports: readonly AllocPort[]): PortMapping[] {
  return ports.flatMap((p) => {
    const containerPort = p.to > 0 ? p.to : p.value;
    const hostIP = p.hostIp && p.hostIp !== '0.0.0.0' && p.hostIp !== '::' ? { hostIP: p.hostIp } : {};
    return (['tcp', 'udp'] as const).map((protocol) => ({ hostPort: p.value, containerPort, protocol, ...hostIP }));
  });
}

/**
 * Finds the user's network `name` in `dir`: a .conflist whose name matches,
 * or a single-plugin .conf/.json wrapped into a list. Throws CniError
 * CNI_BAD_CONFIG naming the files looked at when none matches or one is bad.
 */
export async function loadUserConfList(dir: string, name: string): Promise<CniConfList> {
  let files: string[];
  try {
    files = (await readdir(dir)).filter((f) => /\.(conflist|conf|json)$/.test(f)).sort();
  } catch (err) {
    throw new CniError('CNI_BAD_CONFIG', `network mode "cni/${name}": cannot read cni_config_dir ${dir}: ${(err as Error).message}`, { cause: err });
  }
  const seen: string[] = [];
  for (const f of files) {
    const file = path.join(dir, f);
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new CniError('CNI_BAD_CONFIG', `CNI config ${file} is not valid JSON: ${(err as Error).message}`, { cause: err });
    }
    seen.push(String(raw['name']));
    if (raw['name'] !== name) continue;
    const version = typeof raw['cniVersion'] === 'string' ? raw['cniVersion'] : '0.4.0';
    if (Array.isArray(raw['plugins'])) {
      const plugins = raw['plugins'] as CniPluginConf[];
      if (!plugins.length || plugins.some((p) => typeof p?.type !== 'string')) throw new CniError('CNI_BAD_CONFIG', `CNI config ${file}: every plugin needs a "type"`);
      return { cniVersion: version, name, ...(raw['disableCheck'] === true ? { disableCheck: true } : {}), plugins };
    }
    if (typeof raw['type'] !== 'string') throw new CniError('CNI_BAD_CONFIG', `CNI config ${file} has neither "plugins" nor "type"`);
    const { name: _n, cniVersion: _v, ...plugin } = raw;
    return { cniVersion: version, name, plugins: [plugin as CniPluginConf] };
  }
  throw new CniError('CNI_BAD_CONFIG', `network mode "cni/${name}": no CNI network named "${name}" in ${dir} (found: ${seen.join(', ') || 'none'})`);
}
