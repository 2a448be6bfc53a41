// Dynamic host volumes in Nomad's API shapes (src/api/host-volumes.ts), and
// a create or register request read into the service's input.

import type * as api from '../../api/index.js';
import type { HostVolumeInput, HostVolumeView } from '../hostvolumes/index.js';
import type { StateReader } from '../state/index.js';
import { AllocShaper } from './alloc-shapes.js';
import { ApiError } from './api-error.js';
import { HostVolumeCreateRequest } from '../../api/index.js';

/** api.HostVolumeStub. */
export function hostVolumeStub(v: HostVolumeView): api.HostVolumeStub {
  return {
    Namespace: v.namespace,
    ID: v.id,
    Name: v.name,
    PluginID: v.pluginId,
    NodePool: v.nodePool,
    NodeID: v.nodeId,
    CapacityBytes: v.capacityBytes,
    State: v.state,
    CreateIndex: v.createIndex,
    CreateTime: v.createTime,
    ModifyIndex: v.modifyIndex,
    ModifyTime: v.modifyTime,
  };
}

/** api.HostVolume: the stub's fields and the rest, its allocations shaped from `snap`. */
export function hostVolume(v: HostVolumeView, snap: StateReader): api.HostVolume {
  const shaper = new AllocShaper(snap);
  return {
    ...hostVolumeStub(v),
    ...(v.constraints.length ? { Constraints: v.constraints.map((c) => ({ LTarget: c.attribute, RTarget: c.value, Operand: c.operator })) } : {}),
    RequestedCapacityMinBytes: v.requestedCapacityMinBytes,
    RequestedCapacityMaxBytes: v.requestedCapacityMaxBytes,
    RequestedCapabilities: v.requestedCapabilities.map((c) => ({ AttachmentMode: c.attachmentMode, AccessMode: c.accessMode })),
    ...(Object.keys(v.parameters).length ? { Parameters: { ...v.parameters } } : {}),
    HostPath: v.hostPath,
    ...(v.allocations.length ? { Allocations: v.allocations.map((a) => shaper.stub(a)) } : {}),
  };
}

/** The `Volume` of a create or register request, in the service's words. Throws ApiError INVALID for a malformed body. */
export function hostVolumeInput(body: unknown, queryNamespace: string | undefined): HostVolumeInput {
  const parsed = HostVolumeCreateRequest.safeParse(body ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') || 'Volume';
    throw new ApiError('INVALID', `${field}: ${issue?.message ?? 'invalid'}`, { field });
  }
  const v = parsed.data.Volume;
  if (!v) throw new ApiError('INVALID', 'missing volume definition', { field: 'Volume' });
  const input: HostVolumeInput = {};
  const ns = v.Namespace || queryNamespace;
  if (ns) input.namespace = ns;
  if (v.ID) input.id = v.ID;
  if (v.Name) input.name = v.Name;
  if (v.PluginID) input.pluginId = v.PluginID;
  if (v.NodePool) input.nodePool = v.NodePool;
  if (v.NodeID) input.nodeId = v.NodeID;
  if (v.Constraints?.length) input.constraints = v.Constraints.map((c) => ({ attribute: c.LTarget ?? '', operator: c.Operand ?? '', value: c.RTarget ?? '' }));
  if (v.RequestedCapacityMinBytes) input.capacityMinBytes = v.RequestedCapacityMinBytes;
  if (v.RequestedCapacityMaxBytes) input.capacityMaxBytes = v.RequestedCapacityMaxBytes;
  if (v.CapacityBytes) input.capacityBytes = v.CapacityBytes;
  if (v.RequestedCapabilities?.length) input.capabilities = v.RequestedCapabilities.map((c) => ({ accessMode: c.AccessMode ?? '', attachmentMode: c.AttachmentMode ?? '' }));
  if (v.Parameters) input.parameters = { ...v.Parameters };
  if (v.HostPath) input.hostPath = v.HostPath;
  return input;
}
