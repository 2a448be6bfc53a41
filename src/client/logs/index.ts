// Task logs: reading the rotated files the executor writes (`alloc logs [-f]`).
export {
  readTaskLogs,
  followTaskLogs,
  listLogFiles,
  checkLogsEnabled,
  LogsError,
  type LogStream,
  type LogsErrorCode,
  type TaskLogsLocation,
  type LogFile,
} from './task-logs.js';
