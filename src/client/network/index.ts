// Allocation networks: per-allocation namespaces for group network modes
// `none`, `bridge` and `cni/<name>`, attached with real CNI plugins.
export {
  NetworkManager,
  NetworkError,
  NETNS_RUN_DIR,
  DEFAULT_CNI_PATH,
  DEFAULT_CNI_CONFIG_DIR,
  ALLOC_IFNAME,
  type NetworkManagerOptions,
  type NetworkErrorCode,
  type NetworkRequest,
  type NetworkStatus,
} from './network-manager.js';
export { DEFAULT_BRIDGE, adminChainName, bridgeConfList, portMappings, type AllocPort, type BridgeSettings, type PortMapping } from './cni-config.js';
export { CniRunner, CniError, type CniConfList, type CniResult, type CniErrorCode } from './cni-runner.js';
export { networkModesOf, cniPluginsIn, cniNetworksIn, BRIDGE_CNI_PLUGINS } from './cni-fingerprint.js';
export { sweepAllocation } from './_host.js';
