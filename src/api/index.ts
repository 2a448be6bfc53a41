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

export {
  Port,
  DNSConfig,
  CNIConfig,
  NetworkResource,
  NUMAResource,
  RequestedDevice,
  Resources,
} from './resources.js';
export {
  DesiredTransition,
  AllocDeploymentStatus,
  RescheduleEvent,
  RescheduleTracker,
  AllocNetworkStatus,
  PortMapping,
  AllocatedCpuResources,
  AllocatedMemoryResources,
  AllocatedDeviceResource,
  AllocatedTaskResources,
  AllocatedSharedResources,
  AllocatedResources,
  NodeScoreMeta,
  AllocationMetric,
  TaskEvent,
  TaskState,
  AllocCSIVolume,
  AllocationListStub,
  Allocation,
  AllocStopResponse,
  GenericResponse,
  AllocationRestartRequest,
  AllocSignalRequest,
  AllocCheckStatus,
  AllocCheckStatuses,
} from './allocations.js';
export {
  MemoryStats,
  CpuStats,
  StatValue,
  StatObject,
  DeviceGroupStats,
  ResourceUsage,
  TaskResourceUsage,
  AllocResourceUsage,
  AllocFileInfo,
  StreamFrame,
  FILE_EVENT,
  ExecStreamingIOOperation,
  TerminalSize,
  ExecStreamingInput,
  ExecStreamingExitResult,
  ExecStreamingOutput,
  WsHandshakeMessage,
} from './alloc-client.js';
