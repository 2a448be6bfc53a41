// `berth volume`: register, create, inspect, detach, snapshot, expand and
// remove CSI volumes. Volume files (HCL or JSON) may carry secrets and mount
// flags: they are sent to the agent and never printed, and the agent never
// returns them (reads show secret names only and mount flags as [REDACTED]).

import { Command } from 'commander';
import type { DriftReport, NodeVolumeUsage, PublicVolume, SourcedCondition, VolumeClaim } from '../structs/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { addVolumeInit } from './init-command.js';
import { addVolumeClaimCommands, printPluginView } from './volume-claim-commands.js';
import { loadSpecFiles, readSpecFile, specFileName } from './job-command.js';
import { mapLines } from './output.js';
import { humanSize, parseSize } from './values.js';

type VolumeView = PublicVolume & {
  schedulable: boolean;
  claims: VolumeClaim[];
  /** From the server's volume health (absent on servers without it). */
  usage?: NodeVolumeUsage[];
  condition?: { abnormal: boolean; message: string; sources: SourcedCondition[] } | null;
};

/** Builds `berth volume`. */
export function volumeCommand(ctx: CommandContext): Command {
  const volume = new Command('volume').description('Register, create and inspect CSI volumes');
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);

  apiCommand(
    volume
      .command('register')
      .description('Register an existing volume (the file names its external_id); validated through the plugin\'s controller when it has one')
      .argument('<file>', "volume file: .hcl or .json (Berth's, or Nomad's JSON volume spec or API form), or - for stdin"),
    ['volume register volume.hcl', 'volume register volume.json --json', 'cat volume.hcl | berth volume register -'],
  ).action(act((s, [file]) => submit(s, file as string, 'register')));

  apiCommand(
    volume
      .command('create')
      .description('Create a volume through the plugin\'s controller (CreateVolume; snapshot_id or clone_id as its content source), then register it')
      .argument('<file>', 'volume file: .hcl or .json, or - for stdin'),
    ['volume create examples/volume.hcl', 'berth volume init && berth volume create volume.hcl', 'cat volume.hcl | berth volume create -'],
  ).action(act((s, [file]) => submit(s, file as string, 'create')));

  apiCommand(
    volume
      .command('deregister')
      .description('Forget a volume (the plugin keeps it). Refused while it has claims, unless --force')
      .argument('<id>', 'volume ID or a unique prefix')
      .option('--force', 'deregister even with claims (their releases still run)'),
    ['volume deregister shared-data', 'volume deregister --force shared-data'],
  ).action(act(deregister));

  apiCommand(
    volume.command('delete').description('Delete a volume through the plugin\'s controller (DeleteVolume) and deregister it').argument('<id>', 'volume ID or a unique prefix'),
    ['volume delete shared-data'],
  ).action(act(deleteVolume));

  apiCommand(
    volume
      .command('status')
      .description('List volumes, or show one with its capabilities and claims (secrets never shown)')
      .argument('[id]', 'volume ID or a unique prefix')
      .option('--verbose', "also the plugin's own view (ListVolumes): the nodes it says the volume is published to"),
    ['volume status', 'volume status shared-data', 'volume status --verbose shared-data', 'volume status shared --json'],
  ).action(act(volumeStatus));
  addVolumeClaimCommands(volume, ctx);

  apiCommand(
    volume
      .command('doctor')
      .description(
        "Compare Berth's claims and registrations with what the plugins' controllers and the nodes' kernels say, and list every difference with the command that repairs it. --fix repairs what is safe (never a volume an allocation uses)",
      )
      .argument('[id]', 'only this volume (ID or a unique prefix)')
      .option('--fix', 'repair what is safe: release claims whose allocation is gone, unpublish what no claim stands behind, unmount mounts no record names'),
    ['volume doctor', 'volume doctor shared-data', 'volume doctor --fix', 'volume doctor --json'],
  ).action(act(doctor));

  apiCommand(
    volume
      .command('detach')
      .description(
        'Release every claim of a volume on a node (NodeUnpublish, NodeUnstage, ControllerUnpublish). Refused while an allocation that is not stopped uses it there, unless --force',
      )
      .argument('<volume>', 'volume ID or a unique prefix')
      .argument('<node>', 'node ID or a unique prefix')
      .option('--force', 'stop the allocations that use the volume on the node first, wait until they stopped, then detach'),
    ['volume detach shared-data 9c1e2f3a', 'volume detach --force shared-data 9c1e2f3a'],
  ).action(act(detach));

  apiCommand(
    volume
      .command('expand')
      .description('Grow a volume through its controller (ControllerExpandVolume); nodes grow their mounts')
      .argument('<volume>', 'volume ID or a unique prefix')
      .argument('<size>', 'new minimum size: 2GiB, 500MiB, 10G or bytes'),
    ['volume expand shared-data 2GiB'],
  ).action(act(expand));

  const snapshot = volume.command('snapshot').description('Create, list and delete snapshots of volumes');
  apiCommand(
    snapshot.command('create').description('Snapshot a volume (CreateSnapshot)').argument('<volume>', 'volume ID or a unique prefix').argument('<name>', 'snapshot name'),
    ['volume snapshot create shared-data nightly'],
  ).action(act(snapshotCreate));
  apiCommand(
    snapshot
      .command('delete')
      .description('Delete a snapshot (DeleteSnapshot)')
      .argument('<snapshot-id>', "the plugin's snapshot ID")
      .requiredOption('--plugin <id>', 'the plugin that holds the snapshot'),
    ['volume snapshot delete --plugin hostpath snap-0f3c'],
  ).action(act(snapshotDelete));
  apiCommand(
    snapshot
      .command('list')
      .description('List snapshots a plugin holds (ListSnapshots)')
      .requiredOption('--plugin <id>', 'the plugin to ask')
      .option('--volume <id>', 'only snapshots of this volume'),
    ['volume snapshot list --plugin hostpath', 'volume snapshot list --plugin hostpath --volume shared-data --json'],
  ).action(act(snapshotList));

  addVolumeInit(volume, ctx);
  return volume;
}

async function submit(s: ApiSession, file: string, purpose: 'register' | 'create'): Promise<void> {
  const { parseVolumeFile } = await loadSpecFiles();
  const parsed = await parseVolumeFile(specFileName(file), await readSpecFile(file), purpose);
  for (const note of parsed.notes) s.out.warn(`Warning: ${note}`);
  const id = parsed.volume.id;
  const path = purpose === 'register' ? KINDS.volume.getPath(id) : `${KINDS.volume.getPath(id)}/create`;
  const ns = parsed.volume.namespace ?? s.namespace;
  const { body } = await s.api.request<VolumeView>(purpose === 'register' ? 'PUT' : 'POST', path, {
    query: { namespace: ns },
    body: { namespace: ns, ...parsed.input },
  });
  if (s.out.json) return s.out.document(body);
  s.out.line(`==> Volume "${body.id}" ${purpose === 'register' ? 'registered' : 'created'} (external ID ${body.externalId}, plugin ${body.pluginId})`);
}

async function deregister(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = await s.api.resolve(KINDS.volume, idArg as string, { namespace: s.namespace });
  await s.api.request('DELETE', KINDS.volume.getPath(id), { query: { namespace: s.namespace, force: Boolean(opts['force']) } });
  if (s.out.json) return s.out.document({ deregistered: id });
  s.out.line(`==> Volume "${id}" deregistered`);
}

async function deleteVolume(s: ApiSession, [idArg]: string[]): Promise<void> {
  const id = await s.api.resolve(KINDS.volume, idArg as string, { namespace: s.namespace });
  await s.api.request('DELETE', `${KINDS.volume.getPath(id)}/delete`, { query: { namespace: s.namespace } });
  if (s.out.json) return s.out.document({ deleted: id });
  s.out.line(`==> Volume "${id}" deleted`);
}

const capabilityWords = (v: PublicVolume): string[] => v.capabilities.map((c) => `${c.accessMode} (${c.attachmentMode})`);

async function volumeStatus(s: ApiSession, [idArg]: string[], opts: Record<string, unknown> = {}): Promise<void> {
  if (!idArg) {
    const { body: vols } = await s.api.get<VolumeView[]>('/v1/volumes', { namespace: s.namespace });
    if (s.out.json) return s.out.document(vols);
    s.out.table(
      ['ID', 'Name', 'Plugin ID', 'Schedulable', 'Claims', 'Access Mode'],
      vols.map((v) => [v.id, v.name, v.pluginId, s.style.status(String(v.schedulable)), String(v.claims.length), v.capabilities.map((c) => c.accessMode).join(',')]),
    );
    return;
  }
  const id = await s.api.resolve(KINDS.volume, idArg, { namespace: s.namespace });
  const { body: v } = await s.api.get<VolumeView>(KINDS.volume.getPath(id), { namespace: s.namespace });
  if (s.out.json) return s.out.document(v);
  s.out.fields([
    ['ID', v.id],
    ['Name', v.name],
    ['Namespace', v.namespace],
    ['External ID', v.externalId],
    ['Plugin ID', v.pluginId],
    ['Provider', v.provider || '-'],
    ['Schedulable', s.style.status(String(v.schedulable))],
    ['Capacity', v.capacityBytes ? humanSize(v.capacityBytes) : 'unknown'],
    ['Capacity Min', v.capacityMinBytes ? humanSize(v.capacityMinBytes) : undefined],
    ['Capacity Max', v.capacityMaxBytes ? humanSize(v.capacityMaxBytes) : undefined],
    ['Capabilities', capabilityWords(v)],
    ['File System', v.mountOptions.fsType || undefined],
    ['Mount Flags', v.mountOptions.mountFlags.length ? v.mountOptions.mountFlags : undefined],
    ['Secrets', v.secretNames.length ? v.secretNames.map((n) => `${n} (hidden)`) : undefined],
    ['Parameters', Object.keys(v.parameters).length ? mapLines(v.parameters) : undefined],
    ['Context', Object.keys(v.context).length ? mapLines(v.context) : undefined],
    ['Topology', v.accessibleTopology.length ? v.accessibleTopology.map((t) => mapLines(t).join(',')) : undefined],
    ['Condition', conditionWords(s, v.condition)],
    ['Usage', v.usage?.length ? v.usage.map(usageWords) : v.claims.length ? 'not reported yet' : undefined],
  ]);
  s.out.line();
  s.out.line(s.style.bold('Claims'));
  s.out.table(
    ['Alloc ID', 'Node ID', 'Mode', 'Access Mode', 'State', 'Controller Publish', 'Since'],
    v.claims.map((c) => [shortId(c.allocId), shortId(c.nodeId), c.mode, c.accessMode, s.style.status(c.state), c.controllerPublish, timestamp(c.claimTime)]),
  );
  for (const c of v.claims) {
    if (c.state === 'taken' && c.fencedUntil) s.out.line(`Claim of allocation ${shortId(c.allocId)} held until ${timestamp(c.fencedUntil)}: ${c.fenceReason ?? ''}`);
  }
  if (opts['verbose']) await printPluginView(s, v);
}

function conditionWords(s: ApiSession, c: VolumeView['condition']): string[] | undefined {
  if (!c) return undefined;
  if (!c.abnormal) return [`${s.style.status('healthy')} (${c.message || 'the plugin reports nothing wrong'})`];
  return c.sources.filter((x) => x.abnormal).map((x) => `${s.style.status('abnormal')}: ${x.message} (${x.source}${x.source === 'node' ? ` ${shortId(x.nodeId)}` : ''}, ${timestamp(x.reportedAt)})`);
}

function usageWords(u: NodeVolumeUsage): string {
  const parts: string[] = [];
  if (u.bytes) {
    const pct = u.bytes.total > 0 ? ` (${((u.bytes.used / u.bytes.total) * 100).toFixed(1)} %)` : '';
    parts.push(`${humanSize(u.bytes.used)} used of ${humanSize(u.bytes.total)}${pct}, ${humanSize(u.bytes.available)} free`);
  }
  if (u.inodes) parts.push(`${u.inodes.used} inodes used of ${u.inodes.total}`);
  return `node ${shortId(u.nodeId)}: ${parts.join('; ')} (${timestamp(u.reportedAt)})`;
}

async function doctor(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = idArg ? await s.api.resolve(KINDS.volume, idArg, { namespace: s.namespace }) : undefined;
  const query = id ? { volume: id, namespace: s.namespace } : {};
  const fix = Boolean(opts['fix']);
  if (!s.out.json) s.out.line(`==> Comparing ${id ? `volume "${id}"` : 'every volume'} with the plugins' controllers and the nodes' mounts${fix ? ', repairing what is safe' : ''}...`);
  const { body: r } = fix
    ? await s.api.request<DriftReport>('POST', '/v1/volumes/doctor', { query })
    : await s.api.get<DriftReport>('/v1/volumes/doctor', query);
  if (s.out.json) return s.out.document(r);
  for (const e of r.errors) s.out.warn(`warning: could not check ${e.source}: ${e.message}`);
  if (r.findings.length === 0) {
    s.out.line(`==> No differences: Berth's books, the plugins and the nodes agree${r.errors.length ? ' (on what could be checked)' : ''}`);
    return;
  }
  const fixed = new Set((r.fixed ?? []).map((f) => JSON.stringify(f)));
  const failed = new Map((r.fixFailed ?? []).map((x) => [JSON.stringify(x.finding), x.error]));
  s.out.line(`==> ${r.findings.length} difference${r.findings.length === 1 ? '' : 's'}:`);
  for (const f of r.findings) {
    const key = JSON.stringify(f);
    const state = fixed.has(key) ? ' [fixed]' : failed.has(key) ? ' [fix failed]' : '';
    s.out.line();
    s.out.line(`  ${s.style.bold(f.kind)}${state}`);
    s.out.line(`    ${f.message}`);
    if (failed.has(key)) s.out.line(`    fix failed: ${failed.get(key) as string}`);
    if (!fixed.has(key)) s.out.line(`    repair: ${f.repair}${f.fixable && !fix ? '   (volume doctor --fix does this)' : ''}`);
  }
  if (fix) {
    const left = r.findings.length - fixed.size;
    s.out.line();
    s.out.line(`==> Repaired ${fixed.size} of ${r.findings.length}${left ? `; ${left} need${left === 1 ? 's' : ''} a hand (see the repairs above)` : ''}`);
  }
}

async function detach(s: ApiSession, [volArg, nodeArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = await s.api.resolve(KINDS.volume, volArg as string, { namespace: s.namespace });
  const nodeId = await s.api.resolve(KINDS.node, nodeArg as string);
  const force = Boolean(opts['force']);
  if (force) s.out.warn(`warning: --force: the allocations that use volume "${id}" on node "${shortId(nodeId)}" are stopped before it is detached`);
  const { body } = await s.api.request<{ detached: string; nodeId: string; stoppedAllocations?: string[]; warning?: string }>('POST', `${KINDS.volume.getPath(id)}/detach`, {
    query: { namespace: s.namespace, node: nodeId, ...(force ? { force: true } : {}) },
  });
  const stopped = body.stoppedAllocations ?? [];
  if (body.warning) s.out.warn(`Warning: ${body.warning}`);
  if (s.out.json) return s.out.document({ detached: id, nodeId, stoppedAllocations: stopped, ...(body.warning ? { warning: body.warning } : {}) });
  for (const a of stopped) s.out.line(`    Allocation "${shortId(a)}" stopped`);
  s.out.line(`==> Volume "${id}" detached from node "${shortId(nodeId)}"`);
}

async function expand(s: ApiSession, [volArg, size]: string[]): Promise<void> {
  const requiredBytes = parseSize(size as string);
  const id = await s.api.resolve(KINDS.volume, volArg as string, { namespace: s.namespace });
  const { body: before } = await s.api.get<VolumeView>(KINDS.volume.getPath(id), { namespace: s.namespace });
  const { body } = await s.api.request<{ capacityBytes?: number }>('POST', `${KINDS.volume.getPath(id)}/expand`, {
    query: { namespace: s.namespace },
    body: { requiredBytes },
  });
  if (s.out.json) return s.out.document(body);
  const from = before.capacityBytes ? ` from ${humanSize(before.capacityBytes)}` : '';
  const to = body?.capacityBytes ? ` to ${humanSize(body.capacityBytes)}` : '';
  const more = body?.capacityBytes && body.capacityBytes > requiredBytes ? ` (asked for ${humanSize(requiredBytes)}; the plugin gave more)` : '';
  s.out.line(`==> Volume "${id}" expanded${from}${to}${more}`);
}

interface SnapshotView {
  snapshotId: string;
  sourceVolumeId: string;
  sizeBytes: number;
  creationTime?: number;
  readyToUse: boolean;
}

async function snapshotCreate(s: ApiSession, [volArg, name]: string[]): Promise<void> {
  const id = await s.api.resolve(KINDS.volume, volArg as string, { namespace: s.namespace });
  const { body } = await s.api.request<SnapshotView>('POST', `${KINDS.volume.getPath(id)}/snapshot`, { query: { namespace: s.namespace }, body: { name } });
  if (s.out.json) return s.out.document(body);
  s.out.line(`==> Snapshot "${body.snapshotId}" of volume "${id}" created${body.readyToUse === false ? ' (not yet ready to use)' : ''}`);
}

async function snapshotDelete(s: ApiSession, [snapshotId]: string[], opts: Record<string, unknown>): Promise<void> {
  const { body } = await s.api.request<{ deleted: string; verified?: boolean }>('DELETE', '/v1/volumes/snapshot', {
    query: { pluginId: opts['plugin'] as string, snapshotId },
  });
  if (s.out.json) return s.out.document(body);
  const unverified = body.verified === false ? ` (plugin ${String(opts['plugin'])} cannot list snapshots, so it could not confirm the ID existed)` : '';
  s.out.line(`==> Snapshot "${body.deleted}" of plugin ${String(opts['plugin'])} deleted${unverified}`);
}

async function snapshotList(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const volume = opts['volume'] as string | undefined;
  const volumeId = volume ? await s.api.resolve(KINDS.volume, volume, { namespace: s.namespace }) : undefined;
  const { body } = await s.api.get<SnapshotView[]>('/v1/volumes/snapshot', {
    pluginId: opts['plugin'] as string,
    namespace: s.namespace,
    ...(volumeId ? { volumeId } : {}),
  });
  if (s.out.json) return s.out.document(body);
  s.out.table(
    ['Snapshot ID', 'Volume ID', 'Size', 'Created', 'Ready'],
    body.map((x) => [x.snapshotId, x.sourceVolumeId, x.sizeBytes ? humanSize(x.sizeBytes) : '-', timestamp(x.creationTime), String(x.readyToUse)]),
  );
}
