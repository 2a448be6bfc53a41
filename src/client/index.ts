// The client layer: the node agent's parts. Other layers import only this
// door, and it holds what they use: the Client the agent runs, the drivers it
// builds (and the contract its own path driver implements), the allocation
// runner its routes look up, and task logs. Everything else stays behind the
// parts' own doors (src/client/<part>/index.ts), which only the client's
// files, the tests and the benchmarks use.
export { Client, ClientError, type ClientOptions, type ClientState, type AllocRunnerHandle } from './client.js';
export { DEFAULT_GC_LIMITS, type GcLimits } from './gc/index.js';
export { DEFAULT_ARTIFACT_LIMITS, parseBytes, type ArtifactLimits } from './artifact/index.js';
export { detectCgroups } from './cgroups/index.js';
export { ChrootCache, DEFAULT_CHROOT_ENV } from './allocdir/index.js';
export { startClientHelpers } from './helpers-ahead.js';
export { createDrivers, DockerDriver, type ExecutorHosts, type TaskDriver, type TaskConfig, type TaskHandle, type AnyTaskHandle, type TaskResourceUsage } from './drivers/index.js';
export { AllocRunner } from './allocrunner/index.js';
export { readTaskLogs, followTaskLogs, listLogFiles, checkLogsEnabled, LogsError, type LogStream, type TaskLogsLocation, type LogFile } from './logs/index.js';
export {
  DriverManager,
  discoverDriverPlugins,
  BuiltinDriverPlugin,
  DOCKER_CONFIG_SPEC,
  DOCKER_TASK_CONFIG_SPEC,
  type DriverPluginEntry,
  type DriverPluginLauncher,
  type LaunchedDriverPlugin,
} from './driverplugins/index.js';
