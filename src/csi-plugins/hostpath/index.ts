// The hostpath CSI plugin: directories as volumes, real bind mounts on the node.
export {
  HostpathPlugin,
  HOSTPATH_PLUGIN_NAME,
  HOSTPATH_VERSION,
  type HostpathOptions,
  type HostpathMode,
  type HostpathStatus,
} from './hostpath-plugin.js';
