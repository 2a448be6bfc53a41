// Which group network modes the node can set up (Nomad's cni and bridge
// fingerprints): `host` and `none` always; `bridge` when every CNI plugin
// its configuration list runs is in cni_path; `cni/<name>` for each network
// configured in cni_config_dir. The scheduler places a group only on a node
// that has its mode ("missing network" otherwise), so a node without the
// plugins does not take bridge allocations that would fail there.

import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { bridgeConfList, DEFAULT_BRIDGE } from './cni-config.js';

/** The CNI plugins a bridge network runs (its configuration list's, and its IPAM's). */
export const BRIDGE_CNI_PLUGINS: readonly string[] = (() => {
  const types = new Set<string>();
  for (const p of bridgeConfList(DEFAULT_BRIDGE).plugins) {
    types.add(p.type);
    const ipam = (p as { ipam?: { type?: unknown } }).ipam;
    if (typeof ipam?.type === 'string') types.add(ipam.type);
  }
  return [...types];
})();

/** The CNI plugins found in `cniPath` (executables), by name. Never throws. */
export function cniPluginsIn(cniPath: readonly string[]): Set<string> {
  const found = new Set<string>();
  for (const dir of cniPath) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    for (const n of names) {
      try {
        accessSync(path.join(dir, n), constants.X_OK);
        found.add(n);
      } catch {
        // not an executable
      }
    }
  }
  return found;
}

/** The names of the networks configured in `dir` (.conflist, .conf, .json files with a name). Never throws. */
export function cniNetworksIn(dir: string): string[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => /\.(conflist|conf|json)$/.test(f)).sort();
  } catch {
    return [];
  }
  const names: string[] = [];
  for (const f of files) {
    try {
      const name = (JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { name?: unknown }).name;
      if (typeof name === 'string' && name && !names.includes(name)) names.push(name);
    } catch {
      // not a configuration: the network it would name does not exist
    }
  }
  return names;
}

/**
 * The group network modes this node can set up, for its fingerprint:
 * host, none, bridge (all of BRIDGE_CNI_PLUGINS in `cniPath`) and
 * cni/<name> per network in `cniConfigDir`. Reads the disk; never throws.
 */
export function networkModesOf(opts: { cniPath: readonly string[]; cniConfigDir: string }): string[] {
  const plugins = cniPluginsIn(opts.cniPath);
  const modes = ['host', 'none'];
  if (BRIDGE_CNI_PLUGINS.every((p) => plugins.has(p))) modes.push('bridge');
  for (const name of cniNetworksIn(opts.cniConfigDir)) modes.push(`cni/${name}`);
  return modes;
}
