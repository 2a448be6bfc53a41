// The structs layer: plain types shared by the client and the server, which
// never import each other and talk over the wire.
export type { CsiPluginType, CsiPluginReport, NodeEvent } from './csi-plugin-report.js';
export type { NodeStatus, DriverInfo, Resources, NodeFingerprint, Node } from './node.js';
export {
  isClientTerminal,
  type AllocDesiredStatus,
  type AllocClientStatus,
  type TaskState,
  type Allocation,
} from './allocation.js';
