// Dynamic host volumes in `berth volume` (Nomad 1.10's `volume create`,
// `volume register`, `volume delete -type host`, `volume status -type host`),
// over Nomad's host volume API (src/api/host-volumes.ts), in Nomad's words.

import type { HostVolume, HostVolumeCreateRequest, HostVolumeCreateResponse, HostVolumeStub, HostVolumeSubmission } from '../api/index.js';
import { ApiClientError } from './api-client.js';
import { shortId, type ApiSession } from './api-command.js';
import { BerthError } from '../lib/index.js';
import { humanSize } from './values.js';
import type { HostVolumeSpec } from '../structs/index.js';

/** A host volume the command could not find, found several of, or saw become unavailable. */
export class HostVolumeCliError extends BerthError<'CLI_HOST_VOLUME_NOT_FOUND' | 'CLI_HOST_VOLUME_AMBIGUOUS' | 'CLI_HOST_VOLUME_UNAVAILABLE'> {}

/** The host volume routes. */
export const HOST_VOLUME_LIST_PATH = '/v1/volumes?type=host';
export const hostVolumePath = (id: string): string => `/v1/volume/host/${encodeURIComponent(id)}`;

/** A checked host volume spec in Nomad's HostVolume fields; what the spec leaves out is left out. Pure. */
export function hostVolumeSubmission(spec: HostVolumeSpec): HostVolumeSubmission {
  const v: HostVolumeSubmission = { Name: spec.name };
  if (spec.id) v.ID = spec.id;
  if (spec.namespace) v.Namespace = spec.namespace;
  if (spec.pluginId) v.PluginID = spec.pluginId;
  if (spec.nodeId) v.NodeID = spec.nodeId;
  if (spec.nodePool) v.NodePool = spec.nodePool;
  if (spec.hostPath) v.HostPath = spec.hostPath;
  if (spec.capacityBytes !== undefined) v.CapacityBytes = spec.capacityBytes;
  if (spec.capacityMinBytes !== undefined) v.RequestedCapacityMinBytes = spec.capacityMinBytes;
  if (spec.capacityMaxBytes !== undefined) v.RequestedCapacityMaxBytes = spec.capacityMaxBytes;
  if (spec.capabilities.length) v.RequestedCapabilities = spec.capabilities.map((c) => ({ AccessMode: c.accessMode, AttachmentMode: c.attachmentMode }));
  if (spec.constraints.length) v.Constraints = spec.constraints.map((c) => ({ LTarget: c.attribute, RTarget: c.value, Operand: c.operator }));
  if (spec.parameters) v.Parameters = { ...spec.parameters };
  return v;
}

/**
 * Sends a host volume file's spec to create or register it and prints
 * Nomad's lines. A create whose volume is not ready yet is watched until it
 * is (or is unavailable), unless `detach`.
 */
export async function submitHostVolume(s: ApiSession, spec: HostVolumeSpec, purpose: 'create' | 'register', opts: { detach?: boolean } = {}): Promise<void> {
  const ns = spec.namespace ?? s.namespace;
  const request: HostVolumeCreateRequest = { Volume: { ...hostVolumeSubmission(spec), Namespace: ns }, PolicyOverride: false };
  const { body } = await s.api.request<HostVolumeCreateResponse>('PUT', `/v1/volume/host/${purpose}`, { query: { namespace: ns }, body: request });
  let vol = body.Volume;
  if (body.Warnings) s.out.warn(`Volume Warnings:\n${body.Warnings}`);
  if (purpose === 'register') {
    if (s.out.json) return s.out.document(vol);
    s.out.line(`Registered host volume ${vol.Name} with ID ${vol.ID}`);
    return;
  }
  if (opts.detach || vol.State === 'ready') {
    if (s.out.json) return s.out.document(vol);
    s.out.line(`Created host volume ${vol.Name} with ID ${vol.ID}`);
    return;
  }
  if (!s.out.json) {
    s.out.line(`==> Created host volume ${vol.Name} with ID ${vol.ID}`);
    s.out.line(`==> ${new Date().toISOString()}: Monitoring volume "${shortId(vol.ID)}"...`);
  }
  let index = body.Index;
  while (vol.State === 'pending') {
    const answer = await s.api.get<HostVolume>(hostVolumePath(vol.ID), { namespace: vol.Namespace, index: String(index), wait: '5s' });
    vol = answer.body;
    index = answer.index || index;
  }
  if (s.out.json) return s.out.document(vol);
  if (vol.State === 'ready') s.out.line(`==> ${new Date().toISOString()}: Volume "${vol.Name}" ready`);
  else throw new HostVolumeCliError('CLI_HOST_VOLUME_UNAVAILABLE', `host volume "${shortId(vol.ID)}" ${vol.State}`);
}

/** A host volume by ID, ID prefix or name (Nomad's getHostVolumeByPrefix); throws when none or several match. */
export async function resolveHostVolume(s: ApiSession, prefix: string, ns: string): Promise<HostVolumeStub> {
  const { body: vols } = await s.api.get<HostVolumeStub[]>(HOST_VOLUME_LIST_PATH, { namespace: ns, prefix });
  const exact = vols.filter((v) => v.ID === prefix || v.Name === prefix);
  if (vols.length === 1) return vols[0] as HostVolumeStub;
  if (exact.length === 1) return exact[0] as HostVolumeStub;
  if (vols.length === 0) throw new HostVolumeCliError('CLI_HOST_VOLUME_NOT_FOUND', `no volumes with prefix or ID "${prefix}" found`);
  throw new HostVolumeCliError('CLI_HOST_VOLUME_AMBIGUOUS', `Prefix matched multiple volumes\n\n${vols.map((v) => `${shortId(v.ID)}  ${v.Name}  ${v.Namespace}`).join('\n')}`);
}

/** `volume delete --type host <id>`. */
export async function deleteHostVolume(s: ApiSession, idArg: string, force: boolean): Promise<void> {
  const stub = await resolveHostVolume(s, idArg, s.namespace);
  await s.api.request('DELETE', hostVolumePath(stub.ID), { query: { namespace: stub.Namespace, ...(force ? { force: true } : {}) } });
  if (s.out.json) return s.out.document({ deleted: stub.ID });
  s.out.line(`Successfully deleted volume "${stub.ID}"!`);
}

/** The host volume list (Nomad's `Dynamic Host Volumes` table). `heading`: print the title. */
export async function listHostVolumes(s: ApiSession, opts: { heading: boolean; nodeId?: string }): Promise<HostVolumeStub[]> {
  const { body: vols } = await s.api.get<HostVolumeStub[]>(HOST_VOLUME_LIST_PATH, { namespace: s.namespace, ...(opts.nodeId ? { node_id: opts.nodeId } : {}) });
  if (s.out.json) return vols;
  if (opts.heading) s.out.line(s.style.bold('Dynamic Host Volumes'));
  if (vols.length === 0) {
    s.out.line('No dynamic host volumes');
    return vols;
  }
  s.out.table(
    ['ID', 'Name', 'Namespace', 'Plugin ID', 'Node ID', 'Node Pool', 'State'],
    vols.map((v) => [shortId(v.ID), v.Name, v.Namespace, v.PluginID, shortId(v.NodeID), v.NodePool, s.style.status(v.State)]),
  );
  return vols;
}

/** One host volume (Nomad's formatHostVolume), or undefined when none matches `idArg` (so CSI volumes are tried next). */
export async function showHostVolume(s: ApiSession, idArg: string, required: boolean): Promise<boolean> {
  let stub: HostVolumeStub;
  try {
    stub = await resolveHostVolume(s, idArg, s.namespace);
  } catch (err) {
    if (!required && err instanceof HostVolumeCliError && err.code === 'CLI_HOST_VOLUME_NOT_FOUND') return false;
    throw err;
  }
  let vol: HostVolume;
  try {
    vol = (await s.api.get<HostVolume>(hostVolumePath(stub.ID), { namespace: stub.Namespace })).body;
  } catch (err) {
    if (!required && err instanceof ApiClientError && err.status === 404) return false;
    throw err;
  }
  if (s.out.json) {
    s.out.document(vol);
    return true;
  }
  s.out.fields([
    ['ID', vol.ID],
    ['Name', vol.Name],
    ['Namespace', vol.Namespace],
    ['Plugin ID', vol.PluginID],
    ['Node ID', vol.NodeID],
    ['Node Pool', vol.NodePool],
    ['Capacity', humanSize(vol.CapacityBytes)],
    ['State', s.style.status(vol.State)],
    ['Host Path', vol.HostPath],
  ]);
  s.out.line();
  s.out.line(s.style.bold('Capabilities'));
  s.out.table(['Access Mode', 'Attachment Mode'], (vol.RequestedCapabilities ?? []).map((c) => [c.AccessMode, c.AttachmentMode]));
  s.out.line();
  s.out.line(s.style.bold('Allocations'));
  const allocs = vol.Allocations ?? [];
  if (allocs.length === 0) s.out.line('No allocations placed');
  else s.out.table(['ID', 'Node ID', 'Task Group', 'Desired', 'Status'], allocs.map((a) => [shortId(a.ID), shortId(a.NodeID), a.TaskGroup, a.DesiredStatus, s.style.status(a.ClientStatus)]));
  return true;
}
