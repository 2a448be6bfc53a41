// The CSI plugins Berth ships (today: hostpath). They serve the CSI gRPC
// services themselves, so they may use the generated protobuf code.
export {
  HostpathPlugin,
  HOSTPATH_PLUGIN_NAME,
  HOSTPATH_VERSION,
  type HostpathOptions,
  type HostpathMode,
  type HostpathStatus,
} from './hostpath/index.js';
