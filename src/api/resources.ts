// What a task asks for, as Nomad's API writes it (api/resources.go):
// Resources, its networks and ports (also a group's `network` block), its
// devices and NUMA placement.

import { z } from 'zod';
import { Affinity, Constraint } from './constraints.js';
import { int, list, ptr, stringMap, uint } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/** A port: `Value` the static host port (0 in DynamicPorts), `To` the port inside the allocation's network (0: unset, -1: the same). */
export const Port = lazySchema(() => z.strictObject({
  Label: z.string(),
  Value: int,
  To: int,
  HostNetwork: z.string(),
  IgnoreCollision: z.boolean(),
}));
export type Port = z.infer<typeof Port>;

export const DNSConfig = lazySchema(() => z.strictObject({
  Servers: list(z.string()),
  Searches: list(z.string()),
  Options: list(z.string()),
}));
export type DNSConfig = z.infer<typeof DNSConfig>;

export const CNIConfig = lazySchema(() => z.strictObject({
  Args: stringMap,
}));
export type CNIConfig = z.infer<typeof CNIConfig>;

/** A network: a group's `network` block, or (deprecated) a task's. */
export const NetworkResource = lazySchema(() => z.strictObject({
  Mode: z.string(),
  Device: z.string(),
  CIDR: z.string(),
  IP: z.string(),
  DNS: ptr(DNSConfig),
  ReservedPorts: list(Port),
  DynamicPorts: list(Port),
  Hostname: z.string(),
  MBits: ptr(int),
  CNI: ptr(CNIConfig),
}));
export type NetworkResource = z.infer<typeof NetworkResource>;

/** A `device` block: how many of a device (`vendor/type/name`) a task needs. */
export const RequestedDevice = lazySchema(() => z.strictObject({
  Name: z.string(),
  Count: ptr(uint),
  Constraints: list(Constraint),
  Affinities: list(Affinity),
}));
export type RequestedDevice = z.infer<typeof RequestedDevice>;

export const NUMAResource = lazySchema(() => z.strictObject({
  Affinity: z.string(),
  Devices: list(z.string()),
}));
export type NUMAResource = z.infer<typeof NUMAResource>;

/**
 * A task's resources. Nomad's Canonicalize fills CPU 100 (or 0 with Cores),
 * Cores 0 and MemoryMB 300. The `Berth...` fields are Berth's own, left out
 * when unset.
 */
export const Resources = lazySchema(() => z.strictObject({
  CPU: ptr(int),
  Cores: ptr(int),
  MemoryMB: ptr(int),
  MemoryMaxMB: ptr(int),
  DiskMB: ptr(int),
  Networks: list(NetworkResource),
  Devices: list(RequestedDevice),
  NUMA: ptr(NUMAResource),
  SecretsMB: ptr(int),
  IOPS: ptr(int),
  /** Berth's: a `cores` that is not a whole number (a CPU quota; Nomad's Cores reserves whole cores). */
  BerthCores: z.number().positive().optional(),
  /** Berth's: the most processes and threads the task may have (a job file's `pids`). */
  BerthPidsMax: int.optional(),
  /** Berth's: place the task only on a node that enforces limits with cgroups (a job file's `memory_enforced`). */
  BerthMemoryEnforced: z.boolean().optional(),
}));
export type Resources = z.infer<typeof Resources>;
