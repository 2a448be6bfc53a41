// Calls the server makes on a node agent, over the connection the agent
// opened to the server (so nodes behind NAT work). JSON messages:
//   server -> node: { id, method, params }
//   node -> server: { id, result } | { id, error: { code, message, ... } }
// The node agent (a later issue) implements every method below by calling
// the named CSI RPC on its local plugin instance `pluginId` through CsiClient,
// and answers CsiError failures with `errorFromCsi`-shaped errors (code
// `CSI_<GRPC CODE>`, `final`, `retryable`), so the server can classify them.
//
// Secrets travel in params because the plugin needs them; neither side ever
// logs a message body.

import type { AccessMode, AttachmentMode, CsiSnapshot, CsiVolume, ListedVolume, Page, Topology, VolumeCondition } from '../csi/index.js';
import type { NodeMountInventory } from './volume-health.js';

/** A volume capability on the wire (CapabilityRequest of src/csi). Mount flags are secret. */
export interface CapabilityWire {
  accessMode: AccessMode;
  attachmentMode: AttachmentMode;
  fsType?: string;
  mountFlags?: string[];
  mountGroup?: string;
}

/** Every call names the plugin instance on the node that must serve it. */
interface PluginCall {
  pluginId: string;
}

/** Method name -> params and result. The names are the contract with the node agent. */
export interface NodeRpcMethods {
  /** ControllerPublishVolume. `nodeId` is the target node's external (plugin) node ID. */
  'csi.controller.publish': {
    params: PluginCall & {
      volumeId: string;
      nodeId: string;
      capability: CapabilityWire;
      readonly: boolean;
      secrets: Record<string, string>;
      volumeContext: Record<string, string>;
    };
    result: { publishContext: Record<string, string> };
  };
  /** ControllerUnpublishVolume; NOT_FOUND answers `{ alreadyDone: true }`. */
  'csi.controller.unpublish': {
    params: PluginCall & { volumeId: string; nodeId: string; secrets: Record<string, string> };
    result: { alreadyDone: boolean };
  };
  /** ValidateVolumeCapabilities, the plugin's raw answer (the server judges it with checkValidation). */
  'csi.controller.validate': {
    params: PluginCall & {
      volumeId: string;
      volumeContext: Record<string, string>;
      capabilities: CapabilityWire[];
      parameters: Record<string, string>;
      secrets: Record<string, string>;
    };
    result: {
      confirmed?: {
        volumeContext: Record<string, string>;
        capabilities: CapabilityWire[];
        parameters: Record<string, string>;
        mutableParameters: Record<string, string>;
      };
      message: string;
    };
  };
  /** CreateVolume. */
  'csi.controller.create': {
    params: PluginCall & {
      name: string;
      capacityRange: { requiredBytes?: number; limitBytes?: number };
      capabilities: CapabilityWire[];
      parameters: Record<string, string>;
      secrets: Record<string, string>;
      contentSource?: { snapshotId: string } | { volumeId: string };
      accessibilityRequirements?: { requisite: Topology[]; preferred: Topology[] };
    };
    result: { volume: CsiVolume };
  };
  /** DeleteVolume; NOT_FOUND answers `{ alreadyDone: true }`. */
  'csi.controller.delete': {
    params: PluginCall & { volumeId: string; secrets: Record<string, string> };
    result: { alreadyDone: boolean };
  };
  /** CreateSnapshot. */
  'csi.controller.createSnapshot': {
    params: PluginCall & { sourceVolumeId: string; name: string; parameters: Record<string, string>; secrets: Record<string, string> };
    result: { snapshot: CsiSnapshot };
  };
  /** DeleteSnapshot; NOT_FOUND answers `{ alreadyDone: true }`. */
  'csi.controller.deleteSnapshot': {
    params: PluginCall & { snapshotId: string; secrets: Record<string, string> };
    result: { alreadyDone: boolean };
  };
  /** One page of ListSnapshots. */
  'csi.controller.listSnapshots': {
    params: PluginCall & {
      sourceVolumeId?: string;
      snapshotId?: string;
      maxEntries?: number;
      startingToken?: string;
      secrets: Record<string, string>;
    };
    result: Page<CsiSnapshot>;
  };
  /** ControllerExpandVolume. */
  'csi.controller.expand': {
    params: PluginCall & {
      volumeId: string;
      capacityRange: { requiredBytes?: number; limitBytes?: number };
      capability?: CapabilityWire;
      secrets: Record<string, string>;
    };
    result: { capacityBytes: number; nodeExpansionRequired: boolean };
  };
  /** ControllerGetVolume (GET_VOLUME): the volume's condition (with VOLUME_CONDITION) and published nodes. */
  'csi.controller.getVolume': {
    params: PluginCall & { volumeId: string };
    result: { volumeId: string; capacityBytes: number; publishedNodeIds: string[]; condition?: VolumeCondition };
  };
  /** One page of ListVolumes. */
  'csi.controller.listVolumes': {
    params: PluginCall & { maxEntries?: number; startingToken?: string };
    result: Page<ListedVolume>;
  };
  /**
   * Undo what the node did for one allocation's claim: NodeUnpublishVolume of
   * the allocation's target path, then NodeUnstageVolume when no other
   * allocation on the node still uses the volume (the agent keeps the
   * refcount). `alreadyDone`: nothing was mounted. Carries no secrets (the
   * spec's teardown calls take none).
   */
  'csi.node.detach': {
    params: PluginCall & {
      /** The plugin's volume ID. */
      volumeId: string;
      /** Berth's volume (namespace + ID) and the allocation whose claim this is. */
      namespace: string;
      berthVolumeId: string;
      allocId: string;
      accessMode: AccessMode;
      attachmentMode: AttachmentMode;
      /**
       * An operator's forced detach: a step the plugin refuses is done by the
       * agent itself (umount -l of every layer), and reported in `unmountedByAgent`.
       */
      force?: boolean;
    };
    /**
     * `unmountedByAgent`: paths the agent unmounted itself after the plugin
     * refused (a forced detach, or a volume whose source vanished), with why.
     */
    result: {
      alreadyDone: boolean;
      unmountedByAgent?: Array<{ op: 'unpublish' | 'unstage'; path: string; reason: 'source-vanished' | 'forced'; pluginError: string; layers: number }>;
    };
  };
  /** NodeExpandVolume on the node where the volume is mounted (the agent knows the paths). */
  'csi.node.expand': {
    params: PluginCall & {
      volumeId: string;
      namespace: string;
      berthVolumeId: string;
      capacityRange: { requiredBytes?: number; limitBytes?: number };
      capability?: CapabilityWire;
      secrets: Record<string, string>;
    };
    result: { capacityBytes: number };
  };
  /**
   * The node's CSI volume records (stagings and publications, each with
   * whether the kernel has its path mounted, from /proc/self/mountinfo) and
   * the mounts under its node plugins' staging and per-allocation
   * directories that no record names. A read: changes nothing.
   */
  'csi.node.inventory': {
    params: Record<string, never>;
    result: NodeMountInventory;
  };
  /**
   * Unmounts a mount the node's records do not name, under a node plugin's
   * staging or per-allocation directory (what `volume doctor --fix` does
   * for a mount with no record). The node checks both again before acting;
   * `alreadyDone` when the path is no longer mounted.
   */
  'csi.node.unmountStray': {
    params: { path: string };
    result: { alreadyDone: boolean };
  };
  /**
   * Nomad's ClientHostVolume.Create: the node's host volume plugin
   * `pluginId` makes the volume (idempotent: a volume it already made is
   * answered again), the node records it and reports it in its fingerprint.
   */
  'hostvolume.create': {
    params: HostVolumeCallParams & { pluginId: string; capacityMinBytes: number; capacityMaxBytes: number };
    result: { hostPath: string; capacityBytes: number };
  };
  /** Nomad's ClientHostVolume.Register: an existing path on the node recorded as the volume. */
  'hostvolume.register': {
    params: HostVolumeCallParams & { hostPath: string };
    result: Record<string, never>;
  };
  /** Nomad's ClientHostVolume.Delete: the plugin deletes it (none for a registered one), the node forgets it. */
  'hostvolume.delete': {
    params: HostVolumeCallParams & { pluginId: string; hostPath: string };
    result: Record<string, never>;
  };
}

/** What every host volume call names. */
export interface HostVolumeCallParams {
  id: string;
  name: string;
  namespace: string;
  nodeId: string;
  nodePool: string;
  parameters: Record<string, string>;
}

export type NodeRpcMethod = keyof NodeRpcMethods;
export type NodeRpcParams<M extends NodeRpcMethod> = NodeRpcMethods[M]['params'];
export type NodeRpcResult<M extends NodeRpcMethod> = NodeRpcMethods[M]['result'];

/** Every method name, for agents that check what they are asked. */
export const NODE_RPC_METHODS: readonly NodeRpcMethod[] = [
  'csi.controller.publish',
  'csi.controller.unpublish',
  'csi.controller.validate',
  'csi.controller.create',
  'csi.controller.delete',
  'csi.controller.createSnapshot',
  'csi.controller.deleteSnapshot',
  'csi.controller.listSnapshots',
  'csi.controller.expand',
  'csi.controller.getVolume',
  'csi.controller.listVolumes',
  'csi.node.detach',
  'csi.node.expand',
  'csi.node.inventory',
  'csi.node.unmountStray',
  'hostvolume.create',
  'hostvolume.register',
  'hostvolume.delete',
];

/** A failed call, as the node answers it. */
export interface NodeRpcError {
  /** `CSI_<GRPC CODE>` for plugin failures (e.g. CSI_FAILED_PRECONDITION); other Berth codes otherwise. */
  code: string;
  /** Readable; never carries secrets. */
  message: string;
  /** For CSI failures: the step certainly did not happen. */
  final?: boolean;
  /** For CSI failures: retrying the same request after a backoff may cure it. */
  retryable?: boolean;
}

export interface NodeRpcRequest {
  id: string;
  method: NodeRpcMethod;
  params: unknown;
}

export type NodeRpcResponse = { id: string; result: unknown } | { id: string; error: NodeRpcError };
