// The comparison at the heart of `berth volume doctor`: Berth's books (claims,
// allocations, volume registrations) against what the controllers list and
// what each node's records and kernel say. A pure function over what was
// gathered, so each kind of difference can be shown by a test that writes
// the inputs by hand.

import { createHash } from 'node:crypto';
import type { ListedVolume } from '../../csi/index.js';
import { csiPluginInstance, isClientTerminal, type DriftFinding, type NodeMountInventory, type Volume } from '../../structs/index.js';
import { keyPrefix, rowKey, type StateReader } from '../state/index.js';

export interface BooksInput {
  snap: StateReader;
  /** Only this volume (its claims, publications, records); unknown plugin volumes are then not looked for. */
  scope?: { namespace: string; volumeId: string };
  /** Plugin ID -> every volume its controller lists (only plugins with LIST_VOLUMES that answered). */
  listed: ReadonlyMap<string, readonly ListedVolume[]>;
  /** Node ID -> its mount inventory (only nodes that answered). */
  inventories: ReadonlyMap<string, NodeMountInventory>;
  /** True for a claim whose release runs in this server right now: not drift, work in progress. */
  releasing?: (claimKey: string) => boolean;
  /** What could not be asked: each becomes a `plugin-not-checked` finding (the doctor is never silently partial). */
  unchecked?: ReadonlyArray<{ pluginId: string; nodeId?: string; message: string; repair: string }>;
}

/**
 * The directory name a node gives an ID in its mount layout (the client's
 * `pathKey`, client/volumes/mount-paths.ts: bytes outside [A-Za-z0-9_.-] and a
 * leading dot become %XX; over 100 bytes, %h and the SHA-256). Pure.
 */
function layoutKey(id: string): string {
  let out = '';
  for (const byte of Buffer.from(id, 'utf8')) {
    const ch = String.fromCharCode(byte);
    const safe = byte < 0x80 && /[A-Za-z0-9_.-]/.test(ch) && !(out === '' && ch === '.');
    out += safe ? ch : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
    if (out.length > 100) return `%h${createHash('sha256').update(id, 'utf8').digest('hex')}`;
  }
  return out;
}

/**
 * Whether a stray mount's path lies in one volume's directories of the
 * node's layout: `.../staging/<namespace>/<volume>/<usage>` or
 * `.../per-alloc/<allocation>/<volume>/<usage>`. Pure.
 */
function strayOfVolume(p: string, scope: { namespace: string; volumeId: string }): boolean {
  const parts = p.split('/');
  const vol = layoutKey(scope.volumeId);
  for (let i = parts.length - 4; i >= 0; i--) {
    if (parts[i] === 'staging' && parts[i + 1] === layoutKey(scope.namespace) && parts[i + 2] === vol) return true;
    if (parts[i] === 'per-alloc' && parts[i + 2] === vol) return true;
  }
  return false;
}

/** `-namespace=x ` for a namespace other than default. */
function nsFlag(namespace: string | undefined): string {
  return namespace && namespace !== 'default' ? ` --namespace ${namespace}` : '';
}

function inScope(scope: BooksInput['scope'], namespace: string, volumeId: string): boolean {
  return !scope || (scope.namespace === namespace && scope.volumeId === volumeId);
}

/** Every difference, in a stable order (by kind, then volume, node and path). Pure. */
export function compareBooks(input: BooksInput): DriftFinding[] {
  const { snap, scope } = input;
  const out: DriftFinding[] = [];

  // 1. Claims whose allocation is gone or finished, and whose release is not running.
  for (const c of snap.list('claims')) {
    if (!inScope(scope, c.namespace, c.volumeId)) continue;
    // A release running for the first time is work in progress; one that already failed is worth showing.
    if (c.releaseAttempts === 0 && input.releasing?.(rowKey(c.namespace, c.volumeId, c.allocId))) continue;
    const alloc = snap.get('allocations', rowKey(c.allocId));
    if (alloc && !isClientTerminal(alloc.clientStatus)) continue;
    const why = alloc ? `allocation ${c.allocId} is ${alloc.clientStatus}` : `allocation ${c.allocId} no longer exists`;
    const stuck = c.state !== 'taken' ? `; its release is stuck at ${c.state}${c.lastError ? ` (${c.lastError})` : ''}` : '';
    out.push({
      kind: 'claim-without-allocation',
      pluginId: c.pluginId,
      namespace: c.namespace,
      volumeId: c.volumeId,
      externalVolumeId: c.externalVolumeId,
      nodeId: c.nodeId,
      allocId: c.allocId,
      message: `volume ${c.volumeId} is still claimed on node ${c.nodeId}, but ${why}${stuck}`,
      repair: `berth volume detach${nsFlag(c.namespace)} ${c.volumeId} ${c.nodeId}`,
      fixable: true,
    });
  }

  // 2. and 5. What the controllers list.
  const volumesByExternal = new Map<string, Volume>();
  for (const v of snap.list('volumes')) volumesByExternal.set(`${v.pluginId}\u0000${v.externalId}`, v);
  for (const [pluginId, listed] of input.listed) {
    const plugin = snap.get('plugins', rowKey(pluginId));
    const reportsNodes = plugin?.controllerCapabilities.includes('LIST_VOLUMES_PUBLISHED_NODES') ?? false;
    const nodeOfExternal = new Map<string, string>();
    if (plugin) for (const n of snap.list('nodes')) {
      const inst = csiPluginInstance(n, pluginId, 'node');
      if (inst) nodeOfExternal.set(inst.externalNodeId, inst.nodeId);
    }
    for (const entry of listed) {
      const ext = entry.volume.volumeId;
      const v = volumesByExternal.get(`${pluginId}\u0000${ext}`);
      if (!v) {
        if (scope) continue;
        out.push({
          kind: 'unknown-plugin-volume',
          pluginId,
          externalVolumeId: ext,
          message: `plugin ${pluginId} has volume ${ext}, which no Berth volume registers`,
          repair: `berth volume register <file> (with plugin_id = "${pluginId}" and external_id = "${ext}"), or delete it with the plugin's own tools`,
          fixable: false,
        });
        continue;
      }
      if (!reportsNodes || !inScope(scope, v.namespace, v.id)) continue;
      const claims = snap.list('claims', { prefix: keyPrefix(v.namespace, v.id) });
      for (const extNode of entry.publishedNodeIds ?? []) {
        if (claims.some((c) => c.externalNodeId === extNode && c.state !== 'controller-detached')) continue;
        const nodeId = nodeOfExternal.get(extNode);
        out.push({
          kind: 'stale-controller-publication',
          pluginId,
          namespace: v.namespace,
          volumeId: v.id,
          externalVolumeId: ext,
          externalNodeId: extNode,
          ...(nodeId ? { nodeId } : {}),
          message: `the controller of ${pluginId} still reports volume ${v.id} published to node ${nodeId ?? extNode}, where Berth holds no claim of it`,
          repair: `berth volume doctor --fix${nsFlag(v.namespace)} ${v.id}  (sends ControllerUnpublishVolume)`,
          fixable: true,
        });
      }
    }
  }

  // 3. and 4. Each node's records against its kernel.
  for (const [nodeId, inv] of input.inventories) {
    for (const m of inv.strayMounts) {
      if (scope && !strayOfVolume(m.path, scope)) continue;
      out.push({
        kind: 'mount-without-record',
        pluginId: m.pluginId,
        nodeId,
        path: m.path,
        message: `node ${nodeId} has a mount at ${m.path}, under plugin ${m.pluginId}'s volume directories, that no record of the node names`,
        repair: `berth volume doctor --fix  (unmounts it on the node), or umount ${m.path} on node ${nodeId}`,
        fixable: true,
      });
    }
    for (const r of inv.records) {
      if (r.mounted || r.state !== 'done' || !inScope(scope, r.namespace, r.volumeId)) continue;
      const what = r.kind === 'stage' ? 'staging' : `publication to allocation ${r.allocId}`;
      out.push({
        kind: 'record-without-mount',
        pluginId: r.pluginId,
        namespace: r.namespace,
        volumeId: r.volumeId,
        externalVolumeId: r.externalId,
        nodeId,
        ...(r.allocId ? { allocId: r.allocId } : {}),
        path: r.path,
        message: `node ${nodeId} records the ${what} of volume ${r.volumeId} at ${r.path}, but nothing is mounted there`,
        repair: `restart the Berth agent on node ${nodeId}: on start it checks every record against the kernel and mounts again (or drops) what is missing`,
        fixable: false,
      });
    }
  }

  // 5. What could not be asked: a finding, so a partial check never reads as a clean one.
  for (const u of input.unchecked ?? []) {
    out.push({
      kind: 'plugin-not-checked',
      pluginId: u.pluginId,
      ...(u.nodeId ? { nodeId: u.nodeId } : {}),
      message: u.message,
      repair: u.repair,
      fixable: false,
    });
  }

  const order = (f: DriftFinding): string => [f.kind, f.namespace ?? '', f.volumeId ?? f.externalVolumeId ?? '', f.nodeId ?? '', f.allocId ?? '', f.path ?? ''].join('\u0000');
  return out.sort((a, b) => order(a).localeCompare(order(b)));
}
