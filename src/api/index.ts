// The public API's wire shapes: Nomad's `/v1` API as Nomad's `api` package
// encodes it (PascalCase, every field present as Go's encoder writes it),
// each shape one zod schema with its TypeScript type inferred from it. The
// server's routes answer in these shapes, the CLI and the web UI read them
// (the UI imports types only), the contract tests check answers against
// them, and docs/reference is generated from them. What Berth adds beyond
// Nomad (volume usage and condition, drift, claim history) is extra fields
// on Nomad's shapes or shapes of its own, each marked where it is defined.
//
// Each route family has its own file; this door lists what each exports.

// CSI volumes, snapshots and plugins (Nomad's api/csi.go).
export {
  GO_ZERO_TIME,
  CSIVolumeAccessMode,
  CSIVolumeAttachmentMode,
  CSITopology,
  CSITopologyRequest,
  CSIMountOptions,
  CSIVolumeCapability,
  CSIVolume,
  CSIVolumeListStub,
  CSIVolumeSubmission,
  CSIVolumeRegisterRequest,
  CSIVolumeRegisterResponse,
  CSIVolumeCreateRequest,
  CSIVolumeCreateResponse,
  CSIVolumeDeregisterRequest,
  CSIVolumeDeleteRequest,
  CSISnapshot,
  CSISnapshotSubmission,
  CSISnapshotCreateRequest,
  CSISnapshotCreateResponse,
  CSISnapshotListResponse,
  CSIVolumeExternalStub,
  CSIVolumeListExternalResponse,
  CSIControllerInfo,
  CSINodeInfo,
  CSIInfo,
  CSIPluginExhaustion,
  CSIPlugin,
  CSIPluginListStub,
} from './csi.js';
// Berth's additions to the CSI API (usage, condition, claims, drift, doctor).
export {
  UsageFigures,
  NodeVolumeUsage,
  SourcedCondition,
  VolumeCondition,
  VolumeClaimState,
  VolumeClaimListStub,
  VolumeClaimDeleteResponse,
  CSIVolumeDetachResponse,
  CSIVolumeExpandRequest,
  VolumeUsageSample,
  VolumeUsageHistory,
  DriftKind,
  DriftFinding,
  DriftReport,
  VolumeDrift,
} from './csi-berth.js';
