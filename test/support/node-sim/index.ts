// The node simulator: many client nodes in one process, speaking to the
// servers through the agent's own serverconn parts (registration and
// heartbeats, blocking allocation reads, status reports, the node
// connection, volume claims) but running no task, and the cluster of the
// scale scenarios (three servers on a three-member etcd). For the scale scenarios
// (test/cluster/node-sim.test.ts) and the scale bench (bench/scale.bench.ts).
export { SimNode, threadCpuWaitMs, type SimNodeOptions, type SimRecorder, type SimCsiOptions } from './sim-node.js';
export { SimFleet, simNodeId, simExternalNodeId, type SimFleetOptions } from './sim-fleet.js';
export { ThreadedFleet, type Fleet, type ThreadedFleetOptions } from './sim-threads.js';
export { SimCluster, SIM_PLUGIN, simBatchJob, simServiceJob, simVolumeJob, type SimClusterOptions } from './sim-cluster.js';
