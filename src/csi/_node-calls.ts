// The Node service calls of CsiClient (see client.ts): node info, stage,
// publish and their teardown, volume stats, expansion on the node. Private
// to src/csi.

import { NodeDefinition } from '../gen/csi/v1/csi.js';
import type { CallOptions, TeardownResult } from './_call-engine.js';
import * as conv from './_convert.js';
import { reveal } from './_convert.js';
import { GroupControllerCalls } from './_group-controller-calls.js';
import * as check from './_validate.js';
import { CsiProtocolError } from './errors.js';
import { checkPath, MAX_NODE_ID_BYTES } from './limits.js';
import type { NodeCapability, NodeExpandVolumeRequest, NodeInfo, NodePublishRequest, NodeStageRequest, VolumeStats } from './types.js';

const N = NodeDefinition.methods;

/** CsiClient's Node calls; see CsiClient for what they throw. */
export abstract class NodeCalls extends GroupControllerCalls {
  async nodeGetCapabilities(opts: CallOptions = {}): Promise<NodeCapability[]> {
    const res = await this.call(NodeDefinition, N.nodeGetCapabilities, {}, opts);
    return conv.nodeCapabilitiesFromWire(res.capabilities);
  }

  /** NodeGetInfo. Throws CsiProtocolError for an empty or oversized node_id. */
  async nodeGetInfo(opts: CallOptions = {}): Promise<NodeInfo> {
    const res = await this.call(NodeDefinition, N.nodeGetInfo, {}, opts);
    if (!res.nodeId) throw new CsiProtocolError('NodeGetInfo', 'node_id is empty');
    if (Buffer.byteLength(res.nodeId) > MAX_NODE_ID_BYTES) {
      throw new CsiProtocolError('NodeGetInfo', `node_id is longer than ${MAX_NODE_ID_BYTES} bytes`);
    }
    const info: NodeInfo = {
      nodeId: res.nodeId,
      maxVolumesPerNode: conv.int64ToNumber('NodeGetInfo', 'max_volumes_per_node', res.maxVolumesPerNode),
    };
    const topology = conv.topologyFromWire(res.accessibleTopology);
    if (topology) info.accessibleTopology = topology;
    return info;
  }

  /** NodeStageVolume. The CO (caller) must have created the staging directory. */
  async nodeStageVolume(req: NodeStageRequest, opts: CallOptions = {}): Promise<void> {
    check.checkNodeStage(req);
    await this.call(
      NodeDefinition,
      N.nodeStageVolume,
      {
        volumeId: req.volumeId,
        publishContext: req.publishContext ?? {},
        stagingTargetPath: req.stagingTargetPath,
        volumeCapability: conv.capabilityToWire(req.volumeCapability),
        secrets: reveal(req.secrets),
        volumeContext: req.volumeContext ?? {},
      },
      opts,
    );
  }

  /** NodeUnstageVolume. Carries no secrets. NOT_FOUND counts as done. */
  async nodeUnstageVolume(volumeId: string, stagingTargetPath: string, opts: CallOptions = {}): Promise<TeardownResult> {
    check.checkVolumeId(volumeId);
    checkPath('staging_target_path', stagingTargetPath, { required: true });
    return this.callDone(NodeDefinition, N.nodeUnstageVolume, { volumeId, stagingTargetPath }, opts);
  }

  /** NodePublishVolume. The caller creates the parent of `targetPath`; the plugin creates the target. */
  async nodePublishVolume(req: NodePublishRequest, opts: CallOptions = {}): Promise<void> {
    check.checkNodePublish(req);
    await this.call(
      NodeDefinition,
      N.nodePublishVolume,
      {
        volumeId: req.volumeId,
        publishContext: req.publishContext ?? {},
        stagingTargetPath: req.stagingTargetPath ?? '',
        targetPath: req.targetPath,
        volumeCapability: conv.capabilityToWire(req.volumeCapability),
        readonly: req.readonly,
        secrets: reveal(req.secrets),
        volumeContext: req.volumeContext ?? {},
      },
      opts,
    );
  }

  /** NodeUnpublishVolume. Carries no secrets. NOT_FOUND counts as done. */
  async nodeUnpublishVolume(volumeId: string, targetPath: string, opts: CallOptions = {}): Promise<TeardownResult> {
    check.checkVolumeId(volumeId);
    checkPath('target_path', targetPath, { required: true });
    return this.callDone(NodeDefinition, N.nodeUnpublishVolume, { volumeId, targetPath }, opts);
  }

  async nodeGetVolumeStats(volumeId: string, volumePath: string, opts: CallOptions & { stagingTargetPath?: string } = {}): Promise<VolumeStats> {
    check.checkVolumeId(volumeId);
    const res = await this.call(
      NodeDefinition,
      N.nodeGetVolumeStats,
      { volumeId, volumePath, stagingTargetPath: opts.stagingTargetPath ?? '' },
      opts,
    );
    const stats: VolumeStats = {
      usage: res.usage.map((u) => ({
        unit: conv.usageUnitFromWire(u.unit),
        available: conv.int64ToNumber('NodeGetVolumeStats', 'available', u.available),
        total: conv.int64ToNumber('NodeGetVolumeStats', 'total', u.total),
        used: conv.int64ToNumber('NodeGetVolumeStats', 'used', u.used),
      })),
    };
    const condition = conv.conditionFromWire(res.volumeCondition);
    if (condition) stats.condition = condition;
    return stats;
  }

  /** NodeExpandVolume. FAILED_PRECONDITION is final for this RPC; it is never retried. */
  async nodeExpandVolume(req: NodeExpandVolumeRequest, opts: CallOptions = {}): Promise<{ capacityBytes: number }> {
    check.checkNodeExpand(req);
    const res = await this.call(
      NodeDefinition,
      N.nodeExpandVolume,
      {
        volumeId: req.volumeId,
        volumePath: req.volumePath,
        capacityRange: conv.capacityRangeToWire(req.capacityRange),
        stagingTargetPath: req.stagingTargetPath ?? '',
        volumeCapability: req.volumeCapability ? conv.capabilityToWire(req.volumeCapability) : undefined,
        secrets: reveal(req.secrets),
      },
      opts,
    );
    return { capacityBytes: conv.int64ToNumber('NodeExpandVolume', 'capacity_bytes', res.capacityBytes) };
  }
}
