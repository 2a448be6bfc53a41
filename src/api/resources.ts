// Resources as Nomad's `api/resources.go` encodes them: what a task asks for
// (Resources) and the network blocks (NetworkResource, Port, DNSConfig). An
// allocation's deprecated `Resources`/`TaskResources` carry them, and a job's
// task does too. Pointers in Go are nullable here; slices and maps that Go
// leaves nil are `null` on the wire.

import { z } from 'zod';

/** api.Port: a named port of a network block. */
export const Port = z.strictObject({
  Label: z.string(),
  Value: z.number().int(),
  To: z.number().int(),
  HostNetwork: z.string(),
  IgnoreCollision: z.boolean(),
});
export type Port = z.infer<typeof Port>;

/** api.DNSConfig. */
export const DNSConfig = z.strictObject({
  Servers: z.array(z.string()).nullable(),
  Searches: z.array(z.string()).nullable(),
  Options: z.array(z.string()).nullable(),
});
export type DNSConfig = z.infer<typeof DNSConfig>;

/** api.CNIConfig. */
export const CNIConfig = z.strictObject({
  Args: z.record(z.string(), z.string()).nullable(),
});
export type CNIConfig = z.infer<typeof CNIConfig>;

/** api.NetworkResource: a group's (or, deprecated, a task's) network. */
export const NetworkResource = z.strictObject({
  Mode: z.string(),
  Device: z.string(),
  CIDR: z.string(),
  IP: z.string(),
  DNS: DNSConfig.nullable(),
  ReservedPorts: z.array(Port).nullable(),
  DynamicPorts: z.array(Port).nullable(),
  Hostname: z.string(),
  MBits: z.number().int().nullable(),
  CNI: CNIConfig.nullable(),
});
export type NetworkResource = z.infer<typeof NetworkResource>;

/** api.NUMAResource. */
export const NUMAResource = z.strictObject({
  Affinity: z.string(),
  Devices: z.array(z.string()).nullable(),
});
export type NUMAResource = z.infer<typeof NUMAResource>;

/**
 * api.RequestedDevice. Berth schedules no devices, so a Berth answer never
 * holds one; its constraints and affinities are the job's shapes.
 */
export const RequestedDevice = z.strictObject({
  Name: z.string(),
  Count: z.number().int().nullable(),
  Constraints: z.array(z.unknown()).nullable(),
  Affinities: z.array(z.unknown()).nullable(),
});
export type RequestedDevice = z.infer<typeof RequestedDevice>;

/** api.Resources: CPU in MHz, memory and disk in MB. */
export const Resources = z.strictObject({
  CPU: z.number().int().nullable(),
  Cores: z.number().int().nullable(),
  MemoryMB: z.number().int().nullable(),
  MemoryMaxMB: z.number().int().nullable(),
  DiskMB: z.number().int().nullable(),
  Networks: z.array(NetworkResource).nullable(),
  Devices: z.array(RequestedDevice).nullable(),
  NUMA: NUMAResource.nullable(),
  SecretsMB: z.number().int().nullable(),
  IOPS: z.number().int().nullable(),
});
export type Resources = z.infer<typeof Resources>;
