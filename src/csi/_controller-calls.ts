// The Controller service calls of CsiClient (see client.ts): volumes,
// publishing to nodes, validation, listing, capacity, snapshots, expansion.
// Private to src/csi.

import { ControllerDefinition } from '../gen/csi/v1/csi.js';
import type { SecretMap } from '../lib/index.js';
import { CsiCallEngine, type CallOptions, type TeardownResult } from './_call-engine.js';
import { checkValidation, type ValidationAnswer, type ValidationVerdict } from './capability.js';
import * as conv from './_convert.js';
import { reveal } from './_convert.js';
import * as check from './_validate.js';
import { checkMap, checkString } from './limits.js';
import { listAllPages } from './paging.js';
import type {
  CapacityAnswer,
  ControllerCapability,
  ControllerPublishRequest,
  ControllerUnpublishRequest,
  CreateSnapshotRequest,
  CreateVolumeRequest,
  CsiSnapshot,
  CsiVolume,
  ExpandVolumeRequest,
  GetCapacityRequest,
  ListedVolume,
  ListSnapshotsRequest,
  Page,
  ValidateRequest,
  VolumeCondition,
} from './types.js';

const C = ControllerDefinition.methods;

/** CsiClient's Controller calls; see CsiClient for what they throw. */
export abstract class ControllerCalls extends CsiCallEngine {
  async controllerGetCapabilities(opts: CallOptions = {}): Promise<ControllerCapability[]> {
    const res = await this.call(ControllerDefinition, C.controllerGetCapabilities, {}, opts);
    return conv.controllerCapabilitiesFromWire(res.capabilities);
  }

  /** CreateVolume. Idempotent by name at the plugin. */
  async createVolume(req: CreateVolumeRequest, opts: CallOptions = {}): Promise<CsiVolume> {
    check.checkCreateVolume(req);
    const res = await this.call(
      ControllerDefinition,
      C.createVolume,
      {
        name: req.name,
        capacityRange: conv.capacityRangeToWire(req.capacityRange),
        volumeCapabilities: req.volumeCapabilities.map(conv.capabilityToWire),
        parameters: req.parameters ?? {},
        secrets: reveal(req.secrets),
        volumeContentSource: conv.contentSourceToWire(req.contentSource),
        accessibilityRequirements: conv.topologyRequirementToWire(req.accessibilityRequirements),
        mutableParameters: req.mutableParameters ?? {},
      },
      opts,
    );
    return conv.volumeFromWire('CreateVolume', res.volume);
  }

  /** DeleteVolume. A volume the plugin does not know counts as deleted. */
  async deleteVolume(volumeId: string, opts: CallOptions & { secrets?: SecretMap } = {}): Promise<TeardownResult> {
    check.checkVolumeId(volumeId);
    checkMap('secrets', opts.secrets);
    return this.callDone(ControllerDefinition, C.deleteVolume, { volumeId, secrets: reveal(opts.secrets) }, opts);
  }

  /**
   * ControllerPublishVolume. `nodeId` must be the plugin's NodeGetInfo.node_id.
   * Returns the publish context to keep and pass to NodeStage/NodePublish.
   */
  async controllerPublishVolume(req: ControllerPublishRequest, opts: CallOptions = {}): Promise<{ publishContext: Record<string, string> }> {
    check.checkControllerPublish(req);
    const res = await this.call(
      ControllerDefinition,
      C.controllerPublishVolume,
      {
        volumeId: req.volumeId,
        nodeId: req.nodeId,
        volumeCapability: conv.capabilityToWire(req.volumeCapability),
        readonly: req.readonly,
        secrets: reveal(req.secrets),
        volumeContext: req.volumeContext ?? {},
      },
      opts,
    );
    return { publishContext: { ...res.publishContext } };
  }

  /** ControllerUnpublishVolume. NOT_FOUND counts as done. */
  async controllerUnpublishVolume(req: ControllerUnpublishRequest, opts: CallOptions = {}): Promise<TeardownResult> {
    check.checkControllerUnpublish(req);
    return this.callDone(
      ControllerDefinition,
      C.controllerUnpublishVolume,
      { volumeId: req.volumeId, nodeId: req.nodeId ?? '', secrets: reveal(req.secrets) },
      opts,
    );
  }

  /** ValidateVolumeCapabilities, raw: see `validate` for the spec's verdict. */
  async validateVolumeCapabilities(req: ValidateRequest, opts: CallOptions = {}): Promise<ValidationAnswer> {
    check.checkValidate(req);
    const res = await this.call(
      ControllerDefinition,
      C.validateVolumeCapabilities,
      {
        volumeId: req.volumeId,
        volumeContext: req.volumeContext ?? {},
        volumeCapabilities: req.volumeCapabilities.map(conv.capabilityToWire),
        parameters: req.parameters ?? {},
        mutableParameters: req.mutableParameters ?? {},
        secrets: reveal(req.secrets),
      },
      opts,
    );
    const answer: ValidationAnswer = { message: res.message };
    if (res.confirmed) {
      answer.confirmed = {
        volumeContext: { ...res.confirmed.volumeContext },
        // A capability Berth cannot read confirms nothing it asked for.
        volumeCapabilities: res.confirmed.volumeCapabilities.flatMap((c) => conv.capabilityFromWire(c) ?? []),
        parameters: { ...res.confirmed.parameters },
        mutableParameters: { ...res.confirmed.mutableParameters },
      };
    }
    return answer;
  }

  /** ValidateVolumeCapabilities judged by the spec (see checkValidation). */
  async validate(req: ValidateRequest, opts: CallOptions = {}): Promise<ValidationVerdict> {
    return checkValidation(req, await this.validateVolumeCapabilities(req, opts));
  }

  /** One page of ListVolumes. ABORTED (bad token) is thrown, not retried. */
  async listVolumes(page: { maxEntries?: number; startingToken?: string } = {}, opts: CallOptions = {}): Promise<Page<ListedVolume>> {
    check.checkPaging(page.maxEntries);
    const res = await this.call(
      ControllerDefinition,
      C.listVolumes,
      { maxEntries: page.maxEntries ?? 0, startingToken: page.startingToken ?? '' },
      opts,
    );
    return {
      entries: res.entries.map((e) => {
        const entry: ListedVolume = { volume: conv.volumeFromWire('ListVolumes', e.volume) };
        if (e.status) {
          entry.publishedNodeIds = [...e.status.publishedNodeIds];
          const condition = conv.conditionFromWire(e.status.volumeCondition);
          if (condition) entry.condition = condition;
        }
        return entry;
      }),
      nextToken: res.nextToken,
    };
  }

  /**
   * Every volume, page by page. When the plugin rejects a token (ABORTED) the
   * listing restarts from the top, at most `restarts` times (default 3).
   */
  async listAllVolumes(opts: CallOptions & { pageSize?: number; restarts?: number } = {}): Promise<ListedVolume[]> {
    return listAllPages((startingToken) => this.listVolumes({ maxEntries: opts.pageSize, startingToken }, opts), { restarts: opts.restarts });
  }

  async getCapacity(req: GetCapacityRequest = {}, opts: CallOptions = {}): Promise<CapacityAnswer> {
    const res = await this.call(
      ControllerDefinition,
      C.getCapacity,
      {
        volumeCapabilities: (req.volumeCapabilities ?? []).map(conv.capabilityToWire),
        parameters: req.parameters ?? {},
        accessibleTopology: req.accessibleTopology ? { segments: { ...req.accessibleTopology } } : undefined,
      },
      opts,
    );
    const answer: CapacityAnswer = { availableCapacity: conv.int64ToNumber('GetCapacity', 'available_capacity', res.availableCapacity) };
    if (res.maximumVolumeSize !== undefined) answer.maximumVolumeSize = conv.int64ToNumber('GetCapacity', 'maximum_volume_size', res.maximumVolumeSize);
    if (res.minimumVolumeSize !== undefined) answer.minimumVolumeSize = conv.int64ToNumber('GetCapacity', 'minimum_volume_size', res.minimumVolumeSize);
    return answer;
  }

  async createSnapshot(req: CreateSnapshotRequest, opts: CallOptions = {}): Promise<CsiSnapshot> {
    check.checkCreateSnapshot(req);
    const res = await this.call(
      ControllerDefinition,
      C.createSnapshot,
      { sourceVolumeId: req.sourceVolumeId, name: req.name, secrets: reveal(req.secrets), parameters: req.parameters ?? {} },
      opts,
    );
    return conv.snapshotFromWire('CreateSnapshot', res.snapshot);
  }

  /** DeleteSnapshot. A snapshot the plugin does not know counts as deleted. */
  async deleteSnapshot(snapshotId: string, opts: CallOptions & { secrets?: SecretMap } = {}): Promise<TeardownResult> {
    checkString('snapshot_id', snapshotId, { required: true });
    checkMap('secrets', opts.secrets);
    return this.callDone(ControllerDefinition, C.deleteSnapshot, { snapshotId, secrets: reveal(opts.secrets) }, opts);
  }

  /** One page of ListSnapshots. ABORTED (bad token) is thrown, not retried. */
  async listSnapshots(req: ListSnapshotsRequest = {}, opts: CallOptions = {}): Promise<Page<CsiSnapshot>> {
    check.checkPaging(req.maxEntries);
    const res = await this.call(
      ControllerDefinition,
      C.listSnapshots,
      {
        maxEntries: req.maxEntries ?? 0,
        startingToken: req.startingToken ?? '',
        sourceVolumeId: req.sourceVolumeId ?? '',
        snapshotId: req.snapshotId ?? '',
        secrets: reveal(req.secrets),
      },
      opts,
    );
    return { entries: res.entries.map((e) => conv.snapshotFromWire('ListSnapshots', e.snapshot)), nextToken: res.nextToken };
  }

  /** Every snapshot matching `req`, page by page, restarting on a rejected token. */
  async listAllSnapshots(req: Omit<ListSnapshotsRequest, 'startingToken'> = {}, opts: CallOptions & { restarts?: number } = {}): Promise<CsiSnapshot[]> {
    return listAllPages((startingToken) => this.listSnapshots({ ...req, startingToken }, opts), { restarts: opts.restarts });
  }

  /** GetSnapshot (alpha in v1.12). */
  async getSnapshot(snapshotId: string, opts: CallOptions & { secrets?: SecretMap } = {}): Promise<CsiSnapshot> {
    checkString('snapshot_id', snapshotId, { required: true });
    checkMap('secrets', opts.secrets);
    const res = await this.call(ControllerDefinition, C.getSnapshot, { snapshotId, secrets: reveal(opts.secrets) }, opts);
    return conv.snapshotFromWire('GetSnapshot', res.snapshot);
  }

  /** ControllerExpandVolume. `nodeExpansionRequired` says whether NodeExpandVolume must follow. */
  async controllerExpandVolume(req: ExpandVolumeRequest, opts: CallOptions = {}): Promise<{ capacityBytes: number; nodeExpansionRequired: boolean }> {
    check.checkControllerExpand(req);
    const res = await this.call(
      ControllerDefinition,
      C.controllerExpandVolume,
      {
        volumeId: req.volumeId,
        capacityRange: conv.capacityRangeToWire(req.capacityRange),
        secrets: reveal(req.secrets),
        volumeCapability: req.volumeCapability ? conv.capabilityToWire(req.volumeCapability) : undefined,
      },
      opts,
    );
    return {
      capacityBytes: conv.int64ToNumber('ControllerExpandVolume', 'capacity_bytes', res.capacityBytes),
      nodeExpansionRequired: res.nodeExpansionRequired,
    };
  }

  /** ControllerGetVolume (GET_VOLUME). */
  async controllerGetVolume(
    volumeId: string,
    opts: CallOptions = {},
  ): Promise<{ volume: CsiVolume; publishedNodeIds: string[]; condition?: VolumeCondition }> {
    check.checkVolumeId(volumeId);
    const res = await this.call(ControllerDefinition, C.controllerGetVolume, { volumeId }, opts);
    const out: { volume: CsiVolume; publishedNodeIds: string[]; condition?: VolumeCondition } = {
      volume: conv.volumeFromWire('ControllerGetVolume', res.volume),
      publishedNodeIds: [...(res.status?.publishedNodeIds ?? [])],
    };
    const condition = conv.conditionFromWire(res.status?.volumeCondition);
    if (condition) out.condition = condition;
    return out;
  }

  /** ControllerModifyVolume (MODIFY_VOLUME). */
  async controllerModifyVolume(
    volumeId: string,
    mutableParameters: Record<string, string>,
    opts: CallOptions & { secrets?: SecretMap } = {},
  ): Promise<void> {
    check.checkVolumeId(volumeId);
    checkMap('mutable_parameters', mutableParameters);
    checkMap('secrets', opts.secrets);
    await this.call(ControllerDefinition, C.controllerModifyVolume, { volumeId, mutableParameters, secrets: reveal(opts.secrets) }, opts);
  }
}
