// A volume's input (a registration, a creation, a snapshot or expansion
// request) checked against the structs' schemas, and a registration or
// creation read into the draft row the registry writes, with the one rule
// that row must meet in the write that adds it: one plugin volume, one Berth
// volume.

import type { z } from 'zod';
import { checkVolumeInput, type Volume, type volumeCreationSchema } from '../../structs/index.js';
import type { StateReader } from '../state/index.js';
import { VolumeError } from './errors.js';

export type VolumeDraft = Omit<Volume, 'createIndex' | 'modifyIndex'>;

/** Parses `input` with one of the structs' volume input schemas; throws VolumeError INVALID naming the first bad field. */
export function parse<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const checked = checkVolumeInput(schema, input);
  if (checked.ok) return checked.value;
  const { field, message } = checked.problem;
  throw new VolumeError('INVALID', message, field ? { field } : {});
}

/** A draft volume row from a checked registration or creation (no provider, capacity or topology from the plugin yet). */
export function draftOf(input: z.output<typeof volumeCreationSchema>, externalId: string): VolumeDraft {
  const topo = input.topologyRequest;
  return {
    id: input.id,
    namespace: input.namespace ?? 'default',
    name: input.name ?? input.id,
    externalId,
    pluginId: input.pluginId,
    provider: '',
    capacityMinBytes: input.capacityMinBytes ?? 0,
    capacityMaxBytes: input.capacityMaxBytes ?? 0,
    capacityBytes: 0,
    capabilities: input.capabilities.map((c) => ({ accessMode: c.accessMode, attachmentMode: c.attachmentMode })),
    mountOptions: { fsType: input.mountOptions?.fsType ?? '', mountFlags: [...(input.mountOptions?.mountFlags ?? [])] },
    secrets: { ...input.secrets },
    parameters: { ...input.parameters },
    context: { ...input.context },
    ...(topo ? { topologyRequest: { required: topo.required ?? [], preferred: topo.preferred ?? [] } } : {}),
    accessibleTopology: [],
  };
}

/**
 * Throws CONFLICT, naming the owner, when another Berth volume (any
 * namespace) has the plugin volume `externalId` of the draft's plugin: one
 * plugin volume, one Berth volume. Runs inside the write that adds the row.
 */
export function refuseSecondOwner(txn: StateReader, draft: VolumeDraft, externalId: string, field: string): void {
  const owner = txn.list('volumes', {
    filter: (v: Volume) => v.pluginId === draft.pluginId && v.externalId === externalId && !(v.namespace === draft.namespace && v.id === draft.id),
  })[0];
  if (owner) {
    throw new VolumeError(
      'CONFLICT',
      `plugin ${draft.pluginId}'s volume "${externalId}" is already registered as volume ${owner.id} (namespace ${owner.namespace}); a plugin volume belongs to one Berth volume`,
      { field },
    );
  }
}
