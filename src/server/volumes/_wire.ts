import { capabilityFromRequest, CsiRequestError, type VolumeCapability } from '../../csi/index.js';
import type { CapabilityWire, Volume, VolumeCapabilitySpec } from '../../structs/index.js';
import { VolumeError } from './errors.js';

/** The wire form of a volume's capability, with its mount options (file-system only). */
export function capabilityWire(volume: Pick<Volume, 'mountOptions'>, spec: VolumeCapabilitySpec): CapabilityWire {
  if (spec.attachmentMode === 'block-device') return { accessMode: spec.accessMode, attachmentMode: spec.attachmentMode };
  return {
    accessMode: spec.accessMode,
    attachmentMode: spec.attachmentMode,
    fsType: volume.mountOptions.fsType,
    mountFlags: [...volume.mountOptions.mountFlags],
  };
}

/** A VolumeCapability from its wire form; throws VolumeError INVALID naming the field. */
export function capabilityOf(w: CapabilityWire, field: string): VolumeCapability {
  try {
    return capabilityFromRequest({
      accessMode: w.accessMode,
      attachmentMode: w.attachmentMode,
      ...(w.fsType ? { fsType: w.fsType } : {}),
      ...(w.mountFlags?.length ? { mountFlags: w.mountFlags } : {}),
      ...(w.mountGroup ? { mountGroup: w.mountGroup } : {}),
    });
  } catch (err) {
    if (err instanceof CsiRequestError) throw new VolumeError('INVALID', `${field}: ${err.message}`, { field, cause: err });
    throw err;
  }
}
