// `berth volume`: register, create, inspect, detach, snapshot, expand and
// remove CSI volumes, over Nomad's CSI API (src/api/csi.ts) and Berth's
// additions to it (usage, drift, doctor, claims). Volume files (HCL or JSON)
// may carry secrets and mount flags: they are sent to the agent and never
// printed, and the agent never returns them (reads show secret names only
// and mount flags as [REDACTED]).

import { Command } from 'commander';
import type { CSIVolume, CSIVolumeCreateRequest, CSIVolumeCreateResponse, CSIVolumeDetachResponse, CSIVolumeExpandRequest } from '../api/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { addVolumeInit } from './init-command.js';
import { loadSpecFiles, readSpecFile, specFileName } from './spec-file-input.js';
import { addVolumeClaimCommands } from './volume-claim-commands.js';
import { addVolumeDoctorCommands } from './volume-doctor-command.js';
import { addVolumeSnapshotCommands } from './volume-snapshot-commands.js';
import { addVolumeStatusCommands } from './volume-status-command.js';
import { volumeSubmission } from './volume-submission.js';
import { deleteHostVolume, submitHostVolume } from './host-volume-commands.js';
import { UsageError } from './usage-error.js';
import { humanSize, parseSize } from './values.js';

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
      .description(
        'Create a volume through the plugin\'s controller (CreateVolume; snapshot_id or clone_id as its content source), then register it; with type = "host", a dynamic host volume made by a node\'s host volume plugin',
      )
      .argument('<file>', 'volume file: .hcl or .json, or - for stdin')
      .option('--detach', 'dynamic host volumes: return at once instead of waiting until the volume is ready'),
    ['volume create examples/volume.hcl', 'volume init && berth volume create volume.hcl', 'cat volume.hcl | berth volume create -'],
  ).action(act((s, [file], opts) => submit(s, file as string, 'create', Boolean(opts?.['detach']))));

  apiCommand(
    volume
      .command('deregister')
      .description('Forget a volume (the plugin keeps it). Refused while it has claims, unless --force')
      .argument('<id>', 'volume ID or a unique prefix')
      .option('--force', 'deregister even with claims (their releases still run)'),
    ['volume deregister shared-data', 'volume deregister --force shared-data'],
  ).action(act(deregister));

  apiCommand(
    volume
      .command('delete')
      .description('Delete a volume through the plugin\'s controller (DeleteVolume) and deregister it; --type host: a dynamic host volume, through its node\'s plugin')
      .argument('<id>', 'volume ID or a unique prefix (host volumes: or name)')
      .option('--type <type>', 'csi or host', 'csi')
      .option('--force', 'dynamic host volumes: forget the volume even when its node cannot be asked'),
    ['volume delete shared-data', 'volume delete --type host 02eb1d8e'],
  ).action(act(deleteVolume));

  addVolumeStatusCommands(volume, ctx);
  addVolumeClaimCommands(volume, ctx);
  addVolumeDoctorCommands(volume, ctx);

  apiCommand(
    volume
      .command('detach')
      .description(
        'Release every claim of a volume on a node (NodeUnpublish, NodeUnstage, ControllerUnpublish). Refused while an allocation that is not stopped uses it there, unless --force',
      )
      .argument('<volume>', 'volume ID or a unique prefix')
      .argument('<node>', 'node ID or a unique prefix')
      .option('--force', 'stop the allocations that use the volume on the node first, wait until they stopped, then detach; a step the plugin refuses, the node does itself (it unmounts the paths, and the claim\'s history says so)'),
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

  addVolumeSnapshotCommands(volume, ctx);
  addVolumeInit(volume, ctx);
  return volume;
}

/** Reads the volume file, checks it here, and sends it in Nomad's `{"Volumes": [...]}` request (a host volume in Nomad's host volume request). */
async function submit(s: ApiSession, file: string, purpose: 'register' | 'create', detach = false): Promise<void> {
  const { parseVolumeFile, parseHostVolumeFile, volumeFileType } = await loadSpecFiles();
  const text = await readSpecFile(file);
  if ((await volumeFileType(specFileName(file), text)) === 'host') {
    const host = await parseHostVolumeFile(specFileName(file), text, purpose);
    return submitHostVolume(s, host.volume, purpose, { detach });
  }
  const parsed = await parseVolumeFile(specFileName(file), text, purpose);
  for (const note of parsed.notes) s.out.warn(`Warning: ${note}`);
  const id = parsed.volume.id;
  const ns = parsed.volume.namespace ?? s.namespace;
  const request: CSIVolumeCreateRequest = { Volumes: [{ ...volumeSubmission(parsed.volume), Namespace: ns }] };
  const path = purpose === 'register' ? KINDS.volume.getPath(id) : `${KINDS.volume.getPath(id)}/create`;
  const { body } = await s.api.request<CSIVolumeCreateResponse>('PUT', path, { query: { namespace: ns }, body: request });
  if (s.out.json) return s.out.document(body);
  for (const w of body.Warnings ? [body.Warnings] : []) s.out.warn(`Warning: ${w}`);
  const v = body.Volumes?.[0];
  s.out.line(`==> Volume "${v?.ID ?? id}" ${purpose === 'register' ? 'registered' : 'created'} (external ID ${v?.ExternalID ?? '-'}, plugin ${v?.PluginID ?? parsed.volume.pluginId})`);
}

async function deregister(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = await s.api.resolve(KINDS.volume, idArg as string, { namespace: s.namespace });
  await s.api.request('DELETE', KINDS.volume.getPath(id), { query: { namespace: s.namespace, force: Boolean(opts['force']) } });
  if (s.out.json) return s.out.document({ deregistered: id });
  s.out.line(`==> Volume "${id}" deregistered`);
}

async function deleteVolume(s: ApiSession, [idArg]: string[], opts: Record<string, unknown> = {}): Promise<void> {
  const type = String(opts['type'] ?? 'csi');
  if (type === 'host') return deleteHostVolume(s, idArg as string, Boolean(opts['force']));
  if (type !== 'csi') throw new UsageError(`--type must be "csi" or "host", not "${type}"`);
  if (opts['force']) throw new UsageError('--force applies to dynamic host volumes only (--type host)');
  const id = await s.api.resolve(KINDS.volume, idArg as string, { namespace: s.namespace });
  await s.api.request('DELETE', `${KINDS.volume.getPath(id)}/delete`, { query: { namespace: s.namespace } });
  if (s.out.json) return s.out.document({ deleted: id });
  s.out.line(`==> Volume "${id}" deleted`);
}

async function detach(s: ApiSession, [volArg, nodeArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = await s.api.resolve(KINDS.volume, volArg as string, { namespace: s.namespace });
  const nodeId = await s.api.resolve(KINDS.node, nodeArg as string);
  const force = Boolean(opts['force']);
  if (force) s.out.warn(`warning: --force: the allocations that use volume "${id}" on node "${shortId(nodeId)}" are stopped before it is detached`);
  const { body } = await s.api.request<CSIVolumeDetachResponse>('DELETE', `${KINDS.volume.getPath(id)}/detach`, {
    query: { namespace: s.namespace, node: nodeId, ...(force ? { force: true } : {}) },
  });
  if (body.Warnings) s.out.warn(`Warning: ${body.Warnings}`);
  if (s.out.json) return s.out.document(body);
  for (const a of body.StoppedAllocations) s.out.line(`    Allocation "${shortId(a)}" stopped`);
  s.out.line(`==> Volume "${id}" detached from node "${shortId(nodeId)}"`);
}

async function expand(s: ApiSession, [volArg, size]: string[]): Promise<void> {
  const requiredBytes = parseSize(size as string);
  const id = await s.api.resolve(KINDS.volume, volArg as string, { namespace: s.namespace });
  const { body: before } = await s.api.get<CSIVolume>(KINDS.volume.getPath(id), { namespace: s.namespace });
  const request: CSIVolumeExpandRequest = { RequiredBytes: requiredBytes };
  const { body } = await s.api.request<CSIVolume>('POST', `${KINDS.volume.getPath(id)}/expand`, { query: { namespace: s.namespace }, body: request });
  if (s.out.json) return s.out.document(body);
  const from = before.Capacity ? ` from ${humanSize(before.Capacity)}` : '';
  const to = body.Capacity ? ` to ${humanSize(body.Capacity)}` : '';
  const more = body.Capacity > requiredBytes ? ` (asked for ${humanSize(requiredBytes)}; the plugin gave more)` : '';
  s.out.line(`==> Volume "${id}" expanded${from}${to}${more}`);
}
