// Volume stats: NodeGetVolumeStats of every published volume on an
// interval, usage and condition reported to the server.
export { VolumeStatsCollector, type VolumeStatsCollectorOptions, type StatsPluginSource } from './volume-stats-collector.js';
