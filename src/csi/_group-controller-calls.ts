// The GroupController service calls of CsiClient (see client.ts): volume
// group snapshots. Private to src/csi.

import { GroupControllerDefinition } from '../gen/csi/v1/csi.js';
import type { SecretMap } from '../lib/index.js';
import type { CallOptions, TeardownResult } from './_call-engine.js';
import { ControllerCalls } from './_controller-calls.js';
import * as conv from './_convert.js';
import { reveal } from './_convert.js';
import { CsiRequestError } from './errors.js';
import { checkMap, checkString } from './limits.js';
import type { CsiSnapshot, GroupControllerCapability } from './types.js';

const G = GroupControllerDefinition.methods;

/** CsiClient's GroupController calls; see CsiClient for what they throw. */
export abstract class GroupControllerCalls extends ControllerCalls {
  async groupControllerGetCapabilities(opts: CallOptions = {}): Promise<GroupControllerCapability[]> {
    const res = await this.call(GroupControllerDefinition, G.groupControllerGetCapabilities, {}, opts);
    return conv.groupCapabilitiesFromWire(res.capabilities);
  }

  async createVolumeGroupSnapshot(
    req: { name: string; sourceVolumeIds: string[]; parameters?: Record<string, string>; secrets?: SecretMap },
    opts: CallOptions = {},
  ): Promise<{ groupSnapshotId: string; snapshots: CsiSnapshot[]; readyToUse: boolean }> {
    checkString('name', req.name, { required: true });
    if (!req.sourceVolumeIds.length) throw new CsiRequestError('source_volume_ids must name at least one volume', 'source_volume_ids');
    checkMap('parameters', req.parameters);
    checkMap('secrets', req.secrets);
    const res = await this.call(
      GroupControllerDefinition,
      G.createVolumeGroupSnapshot,
      { name: req.name, sourceVolumeIds: req.sourceVolumeIds, parameters: req.parameters ?? {}, secrets: reveal(req.secrets) },
      opts,
    );
    return conv.groupSnapshotFromWire('CreateVolumeGroupSnapshot', res.groupSnapshot);
  }

  async deleteVolumeGroupSnapshot(
    req: { groupSnapshotId: string; snapshotIds: string[]; secrets?: SecretMap },
    opts: CallOptions = {},
  ): Promise<TeardownResult> {
    checkString('group_snapshot_id', req.groupSnapshotId, { required: true });
    checkMap('secrets', req.secrets);
    return this.callDone(
      GroupControllerDefinition,
      G.deleteVolumeGroupSnapshot,
      { groupSnapshotId: req.groupSnapshotId, snapshotIds: req.snapshotIds, secrets: reveal(req.secrets) },
      opts,
    );
  }

  async getVolumeGroupSnapshot(
    req: { groupSnapshotId: string; snapshotIds: string[]; secrets?: SecretMap },
    opts: CallOptions = {},
  ): Promise<{ groupSnapshotId: string; snapshots: CsiSnapshot[]; readyToUse: boolean }> {
    checkString('group_snapshot_id', req.groupSnapshotId, { required: true });
    checkMap('secrets', req.secrets);
    const res = await this.call(
      GroupControllerDefinition,
      G.getVolumeGroupSnapshot,
      { groupSnapshotId: req.groupSnapshotId, snapshotIds: req.snapshotIds, secrets: reveal(req.secrets) },
      opts,
    );
    return conv.groupSnapshotFromWire('GetVolumeGroupSnapshot', res.groupSnapshot);
  }
}
