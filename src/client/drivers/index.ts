// Task drivers: raw_exec and exec, each task under a detached executor process
// that outlives the agent; docker, each task a container of the node's dockerd.
export type {
  TaskDriver,
  TaskConfig,
  TaskResources,
  TaskMount,
  TaskLogConfig,
  TaskHandle,
  StartTaskOptions,
  ForeignTaskHandle,
  AnyTaskHandle,
  ExitResult,
  TaskState,
  TaskStatus,
  TaskResourceUsage,
  TerminalSize,
  ExecOptions,
  DriverCapabilities,
} from './task-driver.js';
export { GROUP_NETWORK_MODES } from './task-driver.js';
export { DriverError, type DriverErrorCode } from './driver-error.js';
export { taskUserIds } from './_task-user.js';
export { ExecutorDriver, EXECUTOR_PATH, type ExecutorDriverOptions } from './executor-driver.js';
export { RawExecDriver } from './raw-exec-driver.js';
export { ExecDriver } from './exec-driver.js';
export { createDrivers, driverExecutorHosts } from './create-drivers.js';
export type { ExecutorHosts } from './_executor-hosts.js';
export { DockerDriver, dockerEndpoint, DOCKER_LABELS, type DockerDriverOptions, type DockerTaskHandle } from './docker/index.js';
