// A small in-process cluster and valid table rows for volume tests and benchmarks. Never used in production code.
export { Cluster, type ClusterNode } from './cluster.js';
export { testVolume, testAllocation, testPlugin, testClaim } from './rows.js';
