// Whether a node can set up a group's network (Nomad's scheduler
// NetworkChecker, "missing network"): a group in `bridge` or `cni/<name>`
// mode goes only to a node whose fingerprint lists that mode, so a node
// without the CNI plugins or without the named network does not take an
// allocation that would fail there. A node that does not list its modes
// (an older agent) is not checked, as Nomad lets a client that predates
// its bridge fingerprint take bridge groups. Pure.

import type { Node } from '../../structs/index.js';

/** Modes every node can set up, whatever it fingerprinted. */
const ALWAYS = new Set(['host', 'none', '']);

/**
 * Why `node` cannot set up network mode `mode`, worded to read after "N
 * nodes" with Nomad's "missing network", or undefined when it can.
 */
export function missingNetworkReason(node: Pick<Node, 'networkModes'>, mode: string): string | undefined {
  if (ALWAYS.has(mode) || node.networkModes === undefined || node.networkModes.includes(mode)) return undefined;
  const why = mode === 'bridge' ? 'the CNI plugins a bridge needs are not in its cni_path' : mode.startsWith('cni/') ? `no CNI network "${mode.slice(4)}" in its cni_config_dir` : 'it does not set up this mode';
  return `were missing network "${mode}" (${why})`;
}
