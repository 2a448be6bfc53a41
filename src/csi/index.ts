// The csi layer: Berth's view of the Container Storage Interface. Everything
// protobuf stays behind this door.
export { CsiClient, parseEndpoint, type CallOptions, type CsiClientOptions, type CsiCallObserver, type TeardownResult } from './client.js';
export { csiCallMetrics, CSI_CALL_BUCKETS } from './call-metrics.js';
export { listAllPages } from './paging.js';
export {
  VolumeCapability,
  ACCESS_MODES,
  ATTACHMENT_MODES,
  SINGLE_NODE_MULTI_WRITER_MODES,
  isReadOnlyMode,
  includesCapability,
  capabilityFromRequest,
  checkValidation,
  type AccessMode,
  type AttachmentMode,
  type MountOptions,
  type CapabilityRequest,
  type ValidationVerdict,
  type ValidationAnswer,
} from './capability.js';
export {
  CsiError,
  CsiRequestError,
  CsiProtocolError,
  CsiEndpointError,
  GRPC_CODES,
  grpcCodeName,
  classifyGrpcCode,
  type GrpcCodeName,
  type CsiErrorClass,
} from './errors.js';
export { RPC_POLICIES, type CsiRpc, type RpcPolicy } from './policy.js';
export {
  MAX_STRING_BYTES,
  MAX_MAP_BYTES,
  MAX_NODE_ID_BYTES,
  MAX_REPEATED_STRING_BYTES,
  checkString,
  checkMap,
} from './limits.js';
// Berth's CSI vocabulary: what CsiClient takes and answers (hand-picked, not `export *`).
export type {
  PluginServiceCapability,
  VolumeExpansionCapability,
  ControllerCapability,
  NodeCapability,
  GroupControllerCapability,
  PluginInfo,
  PluginCapabilities,
  Topology,
  NodeInfo,
  ProbeResult,
  PluginFingerprint,
  VolumeContentSource,
  CsiVolume,
  VolumeCondition,
  ListedVolume,
  Page,
  CapacityRange,
  TopologyRequirement,
  CsiSnapshot,
  VolumeUsage,
  VolumeStats,
  CreateVolumeRequest,
  ControllerPublishRequest,
  ControllerUnpublishRequest,
  ValidateRequest,
  NodeStageRequest,
  NodePublishRequest,
  ExpandVolumeRequest,
  NodeExpandVolumeRequest,
  CreateSnapshotRequest,
  ListSnapshotsRequest,
  GetCapacityRequest,
  CapacityAnswer,
} from './types.js';
