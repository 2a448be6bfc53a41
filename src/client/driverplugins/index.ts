// External task drivers: driver plugins speaking Nomad's driver plugin
// protocol (launched from plugin_dir by the driver manager, seen by the task
// runner as TaskDrivers), and Berth's own drivers as such plugins.
export {
  DriverManager,
  discoverDriverPlugins,
  type DriverManagerOptions,
  type DriverPluginEntry,
  type DriverPluginLauncher,
  type LaunchedDriverPlugin,
  type ConfigEncoder,
} from './driver-manager.js';
export { ExternalTaskDriver, type DriverPluginSlot, type ExternalTaskDriverOptions } from './external-task-driver.js';
export { berthCapabilities } from './plugin-task-shapes.js';
export { DOCKER_CONFIG_SPEC, DOCKER_TASK_CONFIG_SPEC } from './docker-specs.js';
export { BuiltinDriverPlugin, BUILTIN_TASK_CONFIG_SCHEMA, BUILTIN_CONFIG_SCHEMA, signalNumber, type BuiltinDriverPluginOptions } from './builtin-driver-plugin.js';
export { PluginStartError, DriverManagerError, isPluginShutDown, startErrorOf, type DriverManagerErrorCode } from './plugin-errors.js';
