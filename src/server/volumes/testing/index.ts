// A small in-process cluster for volume tests and benchmarks. Never used in production code.
export { Cluster, type ClusterNode } from './cluster.js';
