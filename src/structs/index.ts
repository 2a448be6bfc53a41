// The structs layer: plain types shared by the client and the server, which
// never import each other and talk over the wire.
export type { CsiPluginType, CsiPluginReport, NodeEvent } from './csi-plugin-report.js';
