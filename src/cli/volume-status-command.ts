// `berth volume status` (the list, or one volume with its capabilities,
// claims, usage and condition; `--verbose` adds the plugin's own view) and
// `berth volume usage` (a volume's usage history), read from Nomad's CSI
// API with Berth's additions (src/api/csi.ts, csi-berth.ts).

import type { Command } from 'commander';
import type { CSIVolume, CSIVolumeListExternalResponse, CSIVolumeListStub, HostVolumeStub, NodeVolumeUsage, VolumeCondition, VolumeUsageHistory } from '../api/index.js';
import { HOST_VOLUME_LIST_PATH, listHostVolumes, showHostVolume } from './host-volume-commands.js';
import { UsageError } from './usage-error.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { mapLines } from './output.js';
import { goTimestamp } from './plugin-status-command.js';
import { humanSize } from './values.js';

/** Adds `status` and `usage` to `berth volume`. */
export function addVolumeStatusCommands(volume: Command, ctx: CommandContext): void {
  apiCommand(
    volume
      .command('status')
      .description('List volumes, or show one with its capabilities and claims (secrets never shown)')
      .argument('[id]', 'volume ID or a unique prefix')
      .option('--verbose', "also the plugin's own view (ListVolumes): the nodes it says the volume is published to")
      .option('--type <type>', 'csi or host (dynamic host volumes); default both')
      .option('--node <id>', 'dynamic host volumes: only those on this node'),
    ['volume status', 'volume status shared-data', 'volume status --verbose shared-data', 'volume status shared --json', 'volume status --type host'],
  ).action(apiAction(ctx, volumeStatus));

  apiCommand(
    volume
      .command('usage')
      .description('Show how full a volume is on each node that mounts it, and its recent history (NodeGetVolumeStats reports)')
      .argument('<id>', 'volume ID or a unique prefix'),
    ['volume usage shared-data', 'volume usage shared-data --json'],
  ).action(apiAction(ctx, volumeUsage));
}

async function volumeStatus(s: ApiSession, [idArg]: string[], opts: Record<string, unknown> = {}): Promise<void> {
  const type = opts['type'] === undefined ? '' : String(opts['type']);
  if (type !== '' && type !== 'csi' && type !== 'host') throw new UsageError(`--type must be "csi" or "host", not "${type}"`);
  const nodeId = opts['node'] === undefined ? undefined : String(opts['node']);
  if (nodeId !== undefined && type !== 'host') throw new UsageError('--node can only be used with --type host');
  if (type === 'host') {
    if (idArg) {
      await showHostVolume(s, idArg, true);
      return;
    }
    const vols = await listHostVolumes(s, { heading: false, ...(nodeId ? { nodeId } : {}) });
    if (s.out.json) s.out.document(vols);
    return;
  }
  // Without --type: a host volume of that ID or name first, then CSI volumes (as Nomad).
  if (idArg && type === '' && (await showHostVolume(s, idArg, false))) return;
  if (!idArg && type === '' && !s.out.json) {
    // Host volumes beside CSI ones, each under its title, when there are any (the CSI table alone otherwise).
    const { body: hosts } = await s.api.get<HostVolumeStub[]>(HOST_VOLUME_LIST_PATH, { namespace: s.namespace });
    if (hosts.length) {
      await listHostVolumes(s, { heading: true });
      s.out.line();
      s.out.line(s.style.bold('Container Storage Interface'));
    }
  }
  if (!idArg) {
    const { body: vols } = await s.api.get<CSIVolumeListStub[]>(KINDS.volume.listPath, { namespace: s.namespace });
    if (s.out.json) return s.out.document(vols);
    s.out.table(
      ['ID', 'Name', 'Plugin ID', 'Schedulable', 'Claims', 'Access Mode'],
      vols.map((v) => [v.ID, v.Name, v.PluginID, s.style.status(String(v.Schedulable)), String(v.CurrentReaders + v.CurrentWriters), v.AccessMode || '-']),
    );
    return;
  }
  const id = await s.api.resolve(KINDS.volume, idArg, { namespace: s.namespace });
  const { body: v } = await s.api.get<CSIVolume>(KINDS.volume.getPath(id), { namespace: s.namespace });
  if (s.out.json) return s.out.document(v);
  const topologies = (v.Topologies ?? []).filter((t) => Object.keys(t.Segments ?? {}).length);
  s.out.fields([
    ['ID', v.ID],
    ['Name', v.Name],
    ['Namespace', v.Namespace],
    ['External ID', v.ExternalID],
    ['Plugin ID', v.PluginID],
    ['Provider', v.Provider || '-'],
    ['Schedulable', s.style.status(String(v.Schedulable))],
    ['Capacity', v.Capacity ? humanSize(v.Capacity) : 'unknown'],
    ['Capacity Min', v.RequestedCapacityMin ? humanSize(v.RequestedCapacityMin) : undefined],
    ['Capacity Max', v.RequestedCapacityMax ? humanSize(v.RequestedCapacityMax) : undefined],
    ['Capabilities', (v.RequestedCapabilities ?? []).map((c) => `${c.AccessMode} (${c.AttachmentMode})`)],
    ['File System', v.MountOptions?.FSType || undefined],
    ['Mount Flags', v.MountOptions?.MountFlags?.length ? v.MountOptions.MountFlags : undefined],
    ['Secrets', v.BerthSecretNames.length ? v.BerthSecretNames.map((n) => `${n} (hidden)`) : undefined],
    ['Parameters', Object.keys(v.Parameters ?? {}).length ? mapLines(v.Parameters ?? {}) : undefined],
    ['Context', Object.keys(v.Context ?? {}).length ? mapLines(v.Context ?? {}) : undefined],
    ['Topology', topologies.length ? topologies.map((t) => mapLines(t.Segments ?? {}).join(',')) : undefined],
    ['Condition', conditionWords(s, v.BerthCondition)],
    ['Usage', v.BerthUsage.length ? v.BerthUsage.map(usageWords) : v.BerthClaims.length ? 'not reported yet' : undefined],
  ]);
  s.out.line();
  s.out.line(s.style.bold('Claims'));
  s.out.table(
    ['Alloc ID', 'Node ID', 'Mode', 'Access Mode', 'State', 'Controller Publish', 'Since'],
    v.BerthClaims.map((c) => [shortId(c.AllocationID), shortId(c.NodeID), c.Mode, c.AccessMode, s.style.status(c.State), c.ControllerPublish, goTimestamp(c.ClaimTime)]),
  );
  for (const c of v.BerthClaims) {
    if (c.State === 'taken' && c.FencedUntil) s.out.line(`Claim of allocation ${shortId(c.AllocationID)} held until ${goTimestamp(c.FencedUntil)}: ${c.FenceReason}`);
  }
  if (opts['verbose']) await printPluginView(s, v);
}

function conditionWords(s: ApiSession, c: VolumeCondition | null): string[] | undefined {
  if (!c) return undefined;
  if (!c.Abnormal) return [`${s.style.status('healthy')} (${c.Message || 'the plugin reports nothing wrong'})`];
  return c.Sources.filter((x) => x.Abnormal).map((x) => `${s.style.status('abnormal')}: ${x.Message} (${x.Source}${x.Source === 'node' ? ` ${shortId(x.NodeID)}` : ''}, ${goTimestamp(x.ReportedAt)})`);
}

function usageWords(u: NodeVolumeUsage): string {
  const parts: string[] = [];
  if (u.Bytes) {
    const pct = u.Bytes.Total > 0 ? ` (${((u.Bytes.Used / u.Bytes.Total) * 100).toFixed(1)} %)` : '';
    parts.push(`${humanSize(u.Bytes.Used)} used of ${humanSize(u.Bytes.Total)}${pct}, ${humanSize(u.Bytes.Available)} free`);
  }
  if (u.Inodes) parts.push(`${u.Inodes.Used} inodes used of ${u.Inodes.Total}`);
  return `node ${shortId(u.NodeID)}: ${parts.join('; ')} (${goTimestamp(u.ReportedAt)})`;
}

async function volumeUsage(s: ApiSession, [idArg]: string[]): Promise<void> {
  const id = await s.api.resolve(KINDS.volume, idArg as string, { namespace: s.namespace });
  const { body } = await s.api.get<VolumeUsageHistory>(`${KINDS.volume.getPath(id)}/usage`, { namespace: s.namespace });
  if (s.out.json) return s.out.document(body);
  s.out.fields([['Volume', body.VolumeID], ['Usage', body.Latest.length ? body.Latest.map(usageWords) : 'not reported yet']]);
  s.out.line();
  s.out.line(s.style.bold('History'));
  const size = (n: number | null): string => (n === null ? '-' : humanSize(n));
  s.out.table(
    ['Time', 'Node ID', 'Used', 'Total', 'Inodes Used', 'Inodes Total'],
    body.Samples.map((x) => [goTimestamp(x.At), shortId(x.NodeID), size(x.BytesUsed), size(x.BytesTotal), x.InodesUsed === null ? '-' : String(x.InodesUsed), x.InodesTotal === null ? '-' : String(x.InodesTotal)]),
  );
}

/**
 * `volume status --verbose`: the plugin's own ListVolumes entry for the
 * volume (`/v1/volumes/external`) and the nodes it says the volume is
 * published to. Prints why when the plugin cannot list volumes.
 */
async function printPluginView(s: ApiSession, volume: CSIVolume): Promise<void> {
  s.out.line();
  s.out.line(s.style.bold('Plugin View (ListVolumes)'));
  let listed: CSIVolumeListExternalResponse;
  try {
    listed = (await s.api.get<CSIVolumeListExternalResponse>('/v1/volumes/external', { plugin_id: volume.PluginID })).body;
  } catch (err) {
    s.out.line(`unavailable: ${err instanceof Error ? err.message : String(err)}`);
    return;
  }
  const mine = (listed.Volumes ?? []).find((l) => l.ExternalID === volume.ExternalID);
  if (!mine) {
    s.out.line(`plugin ${volume.PluginID} does not list volume ${volume.ExternalID}`);
    return;
  }
  const nodes = mine.PublishedExternalNodeIDs;
  s.out.fields([
    ['Volume ID', mine.ExternalID],
    ['Capacity', String(mine.CapacityBytes)],
    ['Published Nodes', nodes ? (nodes.length ? nodes : 'none') : 'not reported (no LIST_VOLUMES_PUBLISHED_NODES)'],
    ['Condition', mine.IsAbnormal || mine.Status ? `${mine.IsAbnormal ? 'abnormal' : 'healthy'}${mine.Status ? `: ${mine.Status}` : ''}` : undefined],
  ]);
}
