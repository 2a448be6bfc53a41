// The one translation between the server's node calls (src/structs/node-rpc.ts)
// and CSI: each `csi.controller.*` method's params become one CsiClient call
// on the controller plugin, and its answer goes back in wire shape; failures
// become the error answers the server classifies. Used by the node agent's
// NodeRpcHandler (and by the fake node agent of test/support, so the two
// cannot drift apart). Message bodies carry secrets and are never logged.

import { capabilityFromRequest, CsiError, type CapabilityRequest, type CsiClient, type VolumeCapability } from '../../csi/index.js';
import { AbortedError, BerthError, describeError, SecretMap } from '../../lib/index.js';
import type { CapabilityWire, NodeRpcError, NodeRpcMethod, NodeRpcMethods } from '../../structs/index.js';

/** The node-rpc methods a controller plugin serves. */
export type ControllerRpcMethod = Extract<NodeRpcMethod, `csi.controller.${string}`>;

/** A handler per node-rpc method: params in, result out; rejects with the failure to answer. */
export type NodeRpcHandlers<M extends NodeRpcMethod> = {
  [K in M]: (params: NodeRpcMethods[K]['params'], signal: AbortSignal) => Promise<NodeRpcMethods[K]['result']>;
};

/**
 * How the handlers reach controller plugin `pluginId`: resolves with its
 * CsiClient (may wait until `signal` fires), rejects when no controller
 * instance of it serves on this node.
 */
export type ControllerClientOf = (pluginId: string, signal: AbortSignal) => Promise<CsiClient>;

/** A capability as the wire carries it -> the CSI capability (throws CsiRequestError when malformed). */
export function capabilityFromWire(wire: CapabilityWire): VolumeCapability {
  return capabilityFromRequest(wire as CapabilityRequest);
}

/** A CSI capability -> its wire shape (mount flags included: the wire is trusted, never logged). */
export function capabilityToWire(c: VolumeCapability): CapabilityWire {
  return c.isBlock
    ? { accessMode: c.accessMode, attachmentMode: c.attachment }
    : { accessMode: c.accessMode, attachmentMode: c.attachment, fsType: c.fsType, mountFlags: [...c.revealMountFlags()] };
}

/** Turns any failure into the answer the server classifies (`CSI_<CODE>` with final/retryable for plugin errors). */
export function errorAnswer(err: unknown): NodeRpcError {
  if (err instanceof CsiError) return { code: err.code, message: err.message, final: err.final, retryable: err.retryable };
  if (err instanceof AbortedError) return { code: 'NODE_CALL_ABORTED', message: err.message, final: false, retryable: true };
  const e = err as { code?: unknown; retryable?: unknown; final?: unknown };
  return {
    code: err instanceof BerthError ? err.code : typeof e?.code === 'string' ? e.code : 'NODE_ERROR',
    message: describeError(err),
    ...(typeof e?.final === 'boolean' ? { final: e.final } : {}),
    ...(typeof e?.retryable === 'boolean' ? { retryable: e.retryable } : {}),
  };
}

/**
 * The handlers of every `csi.controller.*` method. Each sends its CSI call
 * once (`retry: false`): the server owns the retries. Safe to call
 * concurrently; rejects with the CsiClient's (or `clientOf`'s) error.
 */
export function controllerCallHandlers(clientOf: ControllerClientOf): NodeRpcHandlers<ControllerRpcMethod> {
  const once = (signal: AbortSignal) => ({ retry: false as const, signal });
  return {
    'csi.controller.publish': async (p, s) =>
      (await clientOf(p.pluginId, s)).controllerPublishVolume(
        {
          volumeId: p.volumeId,
          nodeId: p.nodeId,
          volumeCapability: capabilityFromWire(p.capability),
          readonly: p.readonly,
          secrets: new SecretMap(p.secrets),
          volumeContext: p.volumeContext,
        },
        once(s),
      ),
    'csi.controller.unpublish': async (p, s) =>
      (await clientOf(p.pluginId, s)).controllerUnpublishVolume({ volumeId: p.volumeId, nodeId: p.nodeId, secrets: new SecretMap(p.secrets) }, once(s)),
    'csi.controller.validate': async (p, s) => {
      const answer = await (await clientOf(p.pluginId, s)).validateVolumeCapabilities(
        {
          volumeId: p.volumeId,
          volumeContext: p.volumeContext,
          volumeCapabilities: p.capabilities.map(capabilityFromWire),
          parameters: p.parameters,
          secrets: new SecretMap(p.secrets),
        },
        once(s),
      );
      return {
        message: answer.message,
        ...(answer.confirmed
          ? {
              confirmed: {
                volumeContext: answer.confirmed.volumeContext,
                capabilities: answer.confirmed.volumeCapabilities.map(capabilityToWire),
                parameters: answer.confirmed.parameters,
                mutableParameters: answer.confirmed.mutableParameters,
              },
            }
          : {}),
      };
    },
    'csi.controller.create': async (p, s) => ({
      volume: await (await clientOf(p.pluginId, s)).createVolume(
        {
          name: p.name,
          capacityRange: p.capacityRange,
          volumeCapabilities: p.capabilities.map(capabilityFromWire),
          parameters: p.parameters,
          secrets: new SecretMap(p.secrets),
          ...(p.contentSource ? { contentSource: p.contentSource } : {}),
          ...(p.accessibilityRequirements ? { accessibilityRequirements: p.accessibilityRequirements } : {}),
        },
        once(s),
      ),
    }),
    'csi.controller.delete': async (p, s) => (await clientOf(p.pluginId, s)).deleteVolume(p.volumeId, { ...once(s), secrets: new SecretMap(p.secrets) }),
    'csi.controller.createSnapshot': async (p, s) => ({
      snapshot: await (await clientOf(p.pluginId, s)).createSnapshot(
        { sourceVolumeId: p.sourceVolumeId, name: p.name, parameters: p.parameters, secrets: new SecretMap(p.secrets) },
        once(s),
      ),
    }),
    'csi.controller.deleteSnapshot': async (p, s) =>
      (await clientOf(p.pluginId, s)).deleteSnapshot(p.snapshotId, { ...once(s), secrets: new SecretMap(p.secrets) }),
    'csi.controller.listSnapshots': async (p, s) =>
      (await clientOf(p.pluginId, s)).listSnapshots(
        {
          ...(p.sourceVolumeId ? { sourceVolumeId: p.sourceVolumeId } : {}),
          ...(p.snapshotId ? { snapshotId: p.snapshotId } : {}),
          ...(p.maxEntries ? { maxEntries: p.maxEntries } : {}),
          ...(p.startingToken ? { startingToken: p.startingToken } : {}),
          secrets: new SecretMap(p.secrets),
        },
        once(s),
      ),
    'csi.controller.expand': async (p, s) =>
      (await clientOf(p.pluginId, s)).controllerExpandVolume(
        {
          volumeId: p.volumeId,
          capacityRange: p.capacityRange,
          secrets: new SecretMap(p.secrets),
          ...(p.capability ? { volumeCapability: capabilityFromWire(p.capability) } : {}),
        },
        once(s),
      ),
    'csi.controller.getVolume': async (p, s) => {
      const got = await (await clientOf(p.pluginId, s)).controllerGetVolume(p.volumeId, once(s));
      return {
        volumeId: got.volume.volumeId,
        capacityBytes: got.volume.capacityBytes,
        publishedNodeIds: got.publishedNodeIds,
        ...(got.condition ? { condition: got.condition } : {}),
      };
    },
    'csi.controller.listVolumes': async (p, s) =>
      (await clientOf(p.pluginId, s)).listVolumes(
        { ...(p.maxEntries ? { maxEntries: p.maxEntries } : {}), ...(p.startingToken ? { startingToken: p.startingToken } : {}) },
        once(s),
      ),
  };
}
