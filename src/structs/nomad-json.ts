// Nomad's volume JSON -> Berth's canonical volume input: the API's
// CSIVolume (`ID`, `PluginID`, `RequestedCapabilities`...), translated field
// by field from a table (nomad-table.ts); a field Berth does not support is
// refused by name at its path, the server's own bookkeeping (`Schedulable`,
// `CreateIndex`...) is ignored. Used by the CLI (volume files) and by the
// HTTP API. Jobs: nomad-job.ts.

import { MOUNT_OPTIONS } from './nomad-job-tables.js';
import { attr, DROP, isObject, readNomad, type NomadTranslation, type Table } from './nomad-table.js';

// [{ "Segments": { "rack": "R1" } }] -> [{ "rack": "R1" }]
const SEGMENTS = {
  in: (v: unknown): unknown => (Array.isArray(v) ? v.map((t) => (isObject(t) && isObject(t['Segments']) ? t['Segments'] : t)) : v),
  out: (v: unknown): unknown => (Array.isArray(v) ? v.map((segments) => ({ Segments: segments })) : v),
};

/** The API's CSIVolume (`PUT /v1/volume/csi/:id` takes `{"Volumes": [...]}`). */
const VOLUME: Table = {
  ID: attr('id'),
  Name: attr('name'),
  Namespace: attr('namespace'),
  ExternalID: attr('externalId'),
  PluginID: attr('pluginId'),
  Provider: DROP,
  ProviderVersion: DROP,
  RequestedCapacityMin: attr('capacityMinBytes'),
  RequestedCapacityMax: attr('capacityMaxBytes'),
  RequestedCapabilities: { to: 'capabilities', list: { AccessMode: attr('accessMode'), AttachmentMode: attr('attachmentMode') } },
  AccessMode: attr('accessMode'),
  AttachmentMode: attr('attachmentMode'),
  MountOptions: { to: 'mountOptions', obj: MOUNT_OPTIONS },
  Secrets: attr('secrets'),
  Parameters: attr('parameters'),
  Context: attr('context'),
  SnapshotID: attr('snapshotId'),
  CloneID: attr('cloneId'),
  RequestedTopologies: {
    to: 'topologyRequest',
    obj: {
      Required: { to: 'required', conv: SEGMENTS },
      Preferred: { to: 'preferred', conv: SEGMENTS },
    },
  },
  Topologies: DROP,
  ...Object.fromEntries(
    [
      'Capacity', 'Schedulable', 'ControllerRequired', 'ControllersHealthy', 'ControllersExpected', 'NodesHealthy', 'NodesExpected', 'ResourceExhausted',
      'CreateIndex', 'ModifyIndex', 'CreateTime', 'ModifyTime', 'ReadAllocs', 'WriteAllocs', 'ReadClaims', 'WriteClaims', 'PastClaims', 'Allocations',
    ].map((k) => [k, DROP]),
  ),
};

/**
 * Nomad's API volume (`{"Volumes": [vol]}`, `{"Volume": vol}` or the CSIVolume
 * object, PascalCase) -> Berth's canonical volume input. Pure; never throws.
 * `{"Volumes": [...]}` must hold exactly one volume (a problem otherwise).
 */
export function nomadVolumeToSpec(doc: Record<string, unknown>): NomadTranslation {
  if (Array.isArray(doc['Volumes'])) {
    const list = doc['Volumes'] as unknown[];
    if (list.length !== 1 || !isObject(list[0])) {
      return { input: {}, origins: new Map(), problems: [{ path: 'Volumes', message: 'give exactly one volume' }], ignored: [] };
    }
    return readNomad(list[0], VOLUME, ['Volumes', 0]);
  }
  if (isObject(doc['Volume'])) return readNomad(doc['Volume'], VOLUME, ['Volume']);
  return readNomad(doc, VOLUME, []);
}

/** True for Nomad's API volume JSON (PascalCase `ID`/`PluginID`, or `{"Volumes": [...]}` / `{"Volume": {...}}`). */
export function isNomadVolumeJson(doc: unknown): boolean {
  if (!isObject(doc)) return false;
  return Array.isArray(doc['Volumes']) || isObject(doc['Volume']) || 'PluginID' in doc || ('ID' in doc && !('id' in doc));
}
