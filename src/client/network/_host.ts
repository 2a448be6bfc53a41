// Host-side pieces of Berth's bridge network that the CNI plugins leave to
// the runtime: the admin chain's forwarding rule Nomad adds before attaching
// (so traffic to the allocations is forwarded whatever the FORWARD policy),
// and, once the last allocation of the network has left this host, the
// removal of what the plugins keep for the next one (the bridge, the admin
// chain, the shared CNI chains when they hold nothing, the IPAM directory).

import { execFile } from 'node:child_process';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { adminChainName, IPAM_DATA_DIR, type BridgeSettings } from './cni-config.js';

/** Runs a command; rejects with its stderr attached. */
export function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err) reject(Object.assign(err, { stderr: String(stderr).trim() }));
      else resolve(stdout);
    });
  });
}

async function ok(file: string, args: string[]): Promise<boolean> {
  try {
    await run(file, args);
    return true;
  } catch {
    return false;
  }
}

/** Nomad's forwarding rule: the admin chain accepts what goes out the bridge to the subnet. Safe to repeat. */
export async function ensureForwardingRule(s: BridgeSettings): Promise<void> {
  const chain = adminChainName(s.name);
  if (!(await ok('iptables', ['-w', '-t', 'filter', '-n', '-L', chain]))) await ok('iptables', ['-w', '-t', 'filter', '-N', chain]);
  const rule = ['-o', s.name, '-d', s.subnet, '-j', 'ACCEPT'];
  if (!(await ok('iptables', ['-w', '-t', 'filter', '-C', chain, ...rule]))) await run('iptables', ['-w', '-t', 'filter', '-A', chain, ...rule]);
}

/** Whether host-local still holds a lease in the network (a file named by an IP address). */
export async function hasLeases(network: string): Promise<boolean> {
  try {
    return (await readdir(path.join(IPAM_DATA_DIR, network))).some((f) => /^[0-9a-f.:]+$/i.test(f) && /[.:]/.test(f));
  } catch {
    return false;
  }
}

/** Whether any CNI network on the host holds a lease: an attachment exists or is being made (IPAM runs before firewall and portmap). */
async function anyLeases(): Promise<boolean> {
  let networks: string[];
  try {
    networks = await readdir(IPAM_DATA_DIR);
  } catch {
    return false;
  }
  for (const n of networks) if (await hasLeases(n)) return true;
  return false;
}

/** The rules of a chain as `iptables -S` prints them, without the chain's own `-N` line; undefined when it does not exist. */
async function rulesOf(table: string, chain: string): Promise<string[] | undefined> {
  try {
    return (await run('iptables', ['-w', '-t', table, '-S', chain])).split('\n').filter((l) => l.startsWith('-A '));
  } catch {
    return undefined;
  }
}

/** Deletes the rules of `parent` that jump to `chain`. */
async function unhook(table: string, parent: string, chain: string): Promise<void> {
  for (const rule of (await rulesOf(table, parent)) ?? []) {
    if (!rule.endsWith(` -j ${chain}`)) continue;
    await ok('iptables', ['-w', '-t', table, ...splitRule(rule.replace(/^-A /, '-D '))]);
  }
}

/** Unhooks and deletes a chain; `flush` first only for a chain that is ours alone (-X fails on a chain with rules). */
async function dropChain(table: string, chain: string, parents: string[], flush = false): Promise<void> {
  for (const p of parents) await unhook(table, p, chain);
  if (flush) await ok('iptables', ['-w', '-t', table, '-F', chain]);
  await ok('iptables', ['-w', '-t', table, '-X', chain]);
}

/** Splits an `iptables -S` line into arguments, keeping quoted comments whole. */
export function splitRule(rule: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (let m = re.exec(rule); m; m = re.exec(rule)) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] as string));
  return out;
}

/**
 * Removes what the bridge network keeps on the host once no allocation uses
 * it: the bridge link, the admin chain with its jump, and the shared chains
 * of the firewall and portmap plugins when no other network has rules in
 * them; then the network's IPAM directory. Call only when hasLeases() is
 * false. Best effort and safe to repeat; never throws.
 */
export async function sweepBridge(s: BridgeSettings): Promise<void> {
  await ok('ip', ['link', 'del', s.name, 'type', 'bridge']);
  const admin = adminChainName(s.name);
  await dropChain('filter', admin, ['CNI-FORWARD'], true);
  await rm(path.join(IPAM_DATA_DIR, s.name), { recursive: true, force: true });
  // The plugins' shared chains go only while no CNI network on the host has an attachment,
  // made or being made: another network's firewall or portmap may be using them.
  if (await anyLeases()) return;
  const forward = await rulesOf('filter', 'CNI-FORWARD');
  if (forward && forward.length === 0) await dropChain('filter', 'CNI-FORWARD', ['FORWARD']);
  const dnat = await rulesOf('nat', 'CNI-HOSTPORT-DNAT');
  if (dnat && dnat.length === 0) {
    await dropChain('nat', 'CNI-HOSTPORT-DNAT', ['PREROUTING', 'OUTPUT']);
    await dropChain('nat', 'CNI-HOSTPORT-MASQ', ['POSTROUTING'], true);
    await dropChain('nat', 'CNI-HOSTPORT-SETMARK', [], true);
  }
}

/** Whether an address is one no allocation has to itself: loopback or unspecified. */
function isHostWide(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1' || ip === '0.0.0.0' || ip === '::' || ip === '';
}

/** The CNI plugins' chains every container shares: never dropped for one. */
const SHARED_CHAINS = ['CNI-FORWARD', 'CNI-HOSTPORT-DNAT', 'CNI-HOSTPORT-MASQ', 'CNI-HOSTPORT-SETMARK'];

/**
 * After an allocation's CNI DEL: removes what the plugins left of it, found
 * by its container ID and its addresses. IPAM leases that name the
 * allocation, CNI rules (filter and nat) that name it in their comment or
 * match one of its addresses, and the chains of its own that a rule naming it
 * jumped to. Only what names this allocation is touched, so another agent's
 * networks on the host are safe. An address that is not the allocation's
 * alone is never a key: a loopback address (the loopback plugin's result,
 * all a record holds when the agent died right after that plugin, is
 * 127.0.0.1, which every portmap rule names) or one host-local now leases to
 * another container. Returns what it removed (empty when DEL left nothing).
 * Best effort; never throws.
 */
export async function sweepAllocation(network: string, containerId: string, addresses: readonly string[]): Promise<string[]> {
  const removed: string[] = [];
  const ips = new Set(addresses.filter((ip) => !isHostWide(ip)));
  const dir = path.join(IPAM_DATA_DIR, network);
  let leases: string[] = [];
  try {
    leases = (await readdir(dir)).filter((f) => /[.:]/.test(f) && /^[0-9a-f.:]+$/i.test(f));
  } catch {
    // No IPAM directory: nothing leased.
  }
  for (const lease of leases) {
    let owner = '';
    try {
      owner = (await readFile(path.join(dir, lease), 'utf8')).split(/\r?\n/)[0]?.trim() ?? '';
    } catch {
      continue;
    }
    if (owner !== containerId) {
      // Released by this allocation and leased again since: the address is another container's now.
      ips.delete(lease);
      continue;
    }
    ips.add(lease);
    await rm(path.join(dir, lease), { force: true });
    removed.push(`IPAM lease ${network}/${lease}`);
  }
  // The plugins' comments name the container (`iptables -S` prints their quotes escaped).
  const namesId = (rule: string): boolean => rule.includes(`id: \\"${containerId}\\"`) || rule.includes(`id: "${containerId}"`);
  const namesIp = (rule: string): boolean =>
    [...ips].some((ip) => rule.includes(` -d ${ip}/32 `) || rule.includes(` -s ${ip}/32 `) || rule.endsWith(` -d ${ip}/32`) || rule.endsWith(` -s ${ip}/32`) || rule.includes(`--to-destination ${ip}:`));
  const names = (rule: string): boolean => namesId(rule) || namesIp(rule);
  for (const table of ['filter', 'nat']) {
    let rules: string[];
    try {
      rules = (await run('iptables', ['-w', '-t', table, '-S'])).split('\n').filter((l) => l.startsWith('-A '));
    } catch {
      continue;
    }
    const own = new Set<string>();
    for (const rule of rules) {
      const chain = rule.split(' ')[1];
      if (!chain || !names(rule) || !(chain.startsWith('CNI-') || / -j CNI-/.test(rule))) continue;
      if (await ok('iptables', ['-w', '-t', table, ...splitRule(rule.replace(/^-A /, '-D '))])) {
        removed.push(`iptables -t ${table} ${rule}`);
        // A jump that names the container leads to a chain of its own (named after its ID by the plugin).
        const target = / -j (CNI-\S+)$/.exec(rule)?.[1];
        if (target && namesId(rule) && !SHARED_CHAINS.includes(target)) own.add(target);
      }
    }
    // The allocation's own chains (the bridge plugin's masquerade chain, portmap's per-container DNAT chain), unhooked above.
    for (const chain of own) {
      if ((await rulesOf(table, chain)) === undefined) continue;
      await dropChain(table, chain, [], true);
      removed.push(`iptables -t ${table} chain ${chain}`);
    }
  }
  return removed;
}
