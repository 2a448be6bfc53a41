// Network namespaces for group network mode `none`.
export { NetworkManager, NetworkError, NETNS_RUN_DIR, type NetworkManagerOptions, type NetworkErrorCode } from './network-manager.js';
