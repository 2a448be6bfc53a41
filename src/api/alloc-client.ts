// What a node agent answers about the allocations it runs (Nomad's client
// routes, /v1/client/...): resource usage (`api/tasks.go`, `api/nodes.go`),
// the allocation directory (`api/fs.go`: AllocFileInfo, the StreamFrame of
// streamed files and logs) and the frames of `alloc exec` over a WebSocket
// (`api/allocations.go`, lower-case JSON names as Nomad tags them).

import { z } from 'zod';
import { int, int64, list, map, ptr, uint } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/** api.MemoryStats, in bytes; `Measured` names the fields the node measured. */
export const MemoryStats = lazySchema(() => z.strictObject({
  RSS: uint,
  Cache: uint,
  Swap: uint,
  Usage: uint,
  MaxUsage: uint,
  KernelUsage: uint,
  KernelMaxUsage: uint,
  Measured: list(z.string()),
}));
export type MemoryStats = z.infer<typeof MemoryStats>;

/**
 * api.CpuStats: SystemMode and UserMode are percent of one core since the
 * previous sample, TotalTicks the MHz used, Percent the share of one core;
 * ThrottledTime in nanoseconds.
 */
export const CpuStats = lazySchema(() => z.strictObject({
  SystemMode: z.number(),
  UserMode: z.number(),
  TotalTicks: z.number(),
  ThrottledPeriods: uint,
  ThrottledTime: int64,
  Percent: z.number(),
  Measured: list(z.string()),
}));
export type CpuStats = z.infer<typeof CpuStats>;

/** api.StatValue. */
export const StatValue = lazySchema(() => z.strictObject({
  FloatNumeratorVal: z.number().optional(),
  FloatDenominatorVal: z.number().optional(),
  IntNumeratorVal: int64.optional(),
  IntDenominatorVal: int64.optional(),
  StringVal: z.string().optional(),
  BoolVal: z.boolean().optional(),
  Unit: z.string().optional(),
  Desc: z.string().optional(),
}));

/** api.StatObject: nested statistics. */
export interface StatObject {
  Nested: Record<string, StatObject> | null;
  Attributes: Record<string, z.infer<typeof StatValue>> | null;
}
export const StatObject: z.ZodType<StatObject> = lazySchema(() => z.lazy(() =>
  z.strictObject({
    Nested: map(StatObject),
    Attributes: map(StatValue),
  }),
));

/** api.DeviceGroupStats: Berth reports none (it schedules no devices). */
export const DeviceGroupStats = lazySchema(() => z.strictObject({
  Vendor: z.string(),
  Type: z.string(),
  Name: z.string(),
  InstanceStats: z
    .record(
      z.string(),
      z.strictObject({ Summary: ptr(StatValue), Stats: ptr(StatObject), Timestamp: z.string() }),
    )
    .nullable(),
}));

/** api.ResourceUsage. */
export const ResourceUsage = lazySchema(() => z.strictObject({
  MemoryStats: ptr(MemoryStats),
  CpuStats: ptr(CpuStats),
  DeviceStats: list(DeviceGroupStats),
}));
export type ResourceUsage = z.infer<typeof ResourceUsage>;

/** api.TaskResourceUsage: a task's usage; `Pids` by process ID (Berth: null, the task's total only). */
export const TaskResourceUsage = lazySchema(() => z.strictObject({
  ResourceUsage: ptr(ResourceUsage),
  /** Nanoseconds since the epoch. */
  Timestamp: int64,
  Pids: map(ResourceUsage),
}));
export type TaskResourceUsage = z.infer<typeof TaskResourceUsage>;

/** api.AllocResourceUsage (GET /v1/client/allocation/:id/stats): the running tasks' usage and their sum. */
export const AllocResourceUsage = lazySchema(() => z.strictObject({
  ResourceUsage: ptr(ResourceUsage),
  Tasks: map(TaskResourceUsage),
  /** Nanoseconds since the epoch. */
  Timestamp: int64,
}));
export type AllocResourceUsage = z.infer<typeof AllocResourceUsage>;

/**
 * api.AllocFileInfo (GET /v1/client/fs/ls/:id, stat/:id): `FileMode` as Go
 * prints it (`drwxr-xr-x`, `Lrwxrwxrwx`), `ModTime` RFC 3339; `ContentType`
 * only from stat, as Nomad's client sets it.
 */
export const AllocFileInfo = lazySchema(() => z.strictObject({
  Name: z.string(),
  IsDir: z.boolean(),
  Size: int,
  FileMode: z.string(),
  ModTime: z.string(),
  ContentType: z.string().optional(),
  /** Berth's: where a symlink points (ls lists symlinks without following them). */
  LinkTarget: z.string().optional(),
}));
export type AllocFileInfo = z.infer<typeof AllocFileInfo>;

/**
 * api.StreamFrame: one frame of /v1/client/fs/stream and /logs, a JSON
 * object each, one after another. `Data` is base64; `Offset` is the file
 * offset after the data; `File` the path in the allocation directory;
 * `FileEvent` "file deleted" or "file truncated". Every field is omitted
 * when empty, so a heartbeat (sent each second while idle) is `{}`.
 */
export const StreamFrame = lazySchema(() => z.strictObject({
  Offset: int.optional(),
  Data: z.string().optional(),
  File: z.string().optional(),
  FileEvent: z.string().optional(),
}));
export type StreamFrame = z.infer<typeof StreamFrame>;

/** The two events a StreamFrame names. */
export const FILE_EVENT = { deleted: 'file deleted', truncated: 'file truncated' } as const;

/** api.ExecStreamingIOOperation: base64 data, or the end of the stream. */
export const ExecStreamingIOOperation = lazySchema(() => z.strictObject({
  data: z.string().optional(),
  close: z.boolean().optional(),
}));
export type ExecStreamingIOOperation = z.infer<typeof ExecStreamingIOOperation>;

/** api.TerminalSize. */
export const TerminalSize = lazySchema(() => z.strictObject({
  height: int.optional(),
  width: int.optional(),
}));
export type TerminalSize = z.infer<typeof TerminalSize>;

/** api.ExecStreamingInput: what the exec client sends (at most one field; `{}` is a heartbeat). */
export const ExecStreamingInput = lazySchema(() => z.strictObject({
  stdin: ExecStreamingIOOperation.optional(),
  tty_size: TerminalSize.optional(),
}));
export type ExecStreamingInput = z.infer<typeof ExecStreamingInput>;

/** api.ExecStreamingExitResult. */
export const ExecStreamingExitResult = lazySchema(() => z.strictObject({ exit_code: int }));

/** api.ExecStreamingOutput: what the node agent sends; the last frame is `{exited: true, result: {exit_code}}`. */
export const ExecStreamingOutput = lazySchema(() => z.strictObject({
  stdout: ExecStreamingIOOperation.optional(),
  stderr: ExecStreamingIOOperation.optional(),
  exited: z.boolean().optional(),
  result: ExecStreamingExitResult.optional(),
}));
export type ExecStreamingOutput = z.infer<typeof ExecStreamingOutput>;

/**
 * The first message of a WebSocket opened with `?ws_handshake=true` (a
 * browser cannot set X-Nomad-Token on a WebSocket): version 1 and the token.
 */
export const WsHandshakeMessage = lazySchema(() => z.strictObject({
  version: int,
  auth_token: z.string(),
}));
export type WsHandshakeMessage = z.infer<typeof WsHandshakeMessage>;
