// A checked volume spec (from a volume file, HCL or JSON, Berth's or
// Nomad's form) -> the volume of Nomad's register and create requests
// (`{"Volumes": [CSIVolume]}`, src/api/csi.ts), as `volume register` and
// `volume create` send it. Pure.

import type { CSIVolumeSubmission, CSITopology } from '../api/index.js';
import type { VolumeSpec } from '../structs/index.js';

const segments = (list: ReadonlyArray<Record<string, string>> | undefined): CSITopology[] => (list ?? []).map((t) => ({ Segments: { ...t } }));

/** The spec in Nomad's CSIVolume fields; what the spec leaves out is left out (the server's defaults apply). */
export function volumeSubmission(spec: VolumeSpec): CSIVolumeSubmission {
  const v: CSIVolumeSubmission = {
    ID: spec.id,
    PluginID: spec.pluginId,
    RequestedCapabilities: spec.capabilities.map((c) => ({ AccessMode: c.accessMode, AttachmentMode: c.attachmentMode })),
  };
  if (spec.name !== undefined) v.Name = spec.name;
  if (spec.namespace !== undefined) v.Namespace = spec.namespace;
  if (spec.externalId !== undefined) v.ExternalID = spec.externalId;
  if (spec.capacityMinBytes !== undefined) v.RequestedCapacityMin = spec.capacityMinBytes;
  if (spec.capacityMaxBytes !== undefined) v.RequestedCapacityMax = spec.capacityMaxBytes;
  if (spec.mountOptions) {
    v.MountOptions = {};
    if (spec.mountOptions.fsType !== undefined) v.MountOptions.FSType = spec.mountOptions.fsType;
    if (spec.mountOptions.mountFlags !== undefined) v.MountOptions.MountFlags = [...spec.mountOptions.mountFlags];
  }
  if (spec.secrets) v.Secrets = { ...spec.secrets };
  if (spec.parameters) v.Parameters = { ...spec.parameters };
  if (spec.context) v.Context = { ...spec.context };
  if (spec.topologyRequest) v.RequestedTopologies = { Required: segments(spec.topologyRequest.required), Preferred: segments(spec.topologyRequest.preferred) };
  if (spec.contentSource && 'snapshotId' in spec.contentSource) v.SnapshotID = spec.contentSource.snapshotId;
  if (spec.contentSource && 'volumeId' in spec.contentSource) v.CloneID = spec.contentSource.volumeId;
  return v;
}
