// CSI plugins derived from node fingerprints and the jobs that run them.
export { PluginService, type PluginServiceOptions, type ServiceState } from './plugin-service.js';
export { computePlugins, updatePlugins, updatePluginsForNode, markNodeExhausted, clearNodeExhausted } from './derive.js';
