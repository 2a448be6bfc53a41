// Nodes as Nomad's API encodes them (Nomad's `api/nodes.go` and
// `api/node_meta.go`; the deprecated Node.Resources is resources.ts's): `GET /v1/nodes`
// (NodeListStub), `GET /v1/node/:id` (Node), the answers of `drain`,
// `eligibility`, `purge` and `evaluate`, and the client's node meta
// (`/v1/client/metadata`). Go's encoder writes every field, nil maps, slices
// and pointers as null (_go.ts); times are RFC 3339 strings (the zero time is
// 0001-01-01T00:00:00Z) and durations integer nanoseconds. What Berth adds
// rides as `Berth...` fields, each marked where it is defined and left out
// when unset.

import { z } from 'zod';
import { CSIInfo } from './csi.js';
import { NetworkResource, Resources } from './resources.js';
import { int, list, map, nanos, ptr, stringMap, time, uint } from './_go.js';
import { lazySchema } from './lazy-schema.js';

/** api.Attribute: one of Float, Int, String or Bool, with a unit. */
const Attribute = lazySchema(() => z.strictObject({ Float: z.number().optional(), Int: int.optional(), String: z.string().optional(), Bool: z.boolean().optional(), Unit: z.string() }));

/** api.NodeDevice: one instance of a device group. */
const NodeDevice = lazySchema(() => z.strictObject({ ID: z.string(), Healthy: z.boolean(), HealthDescription: z.string(), Locality: ptr(z.strictObject({ PciBusID: z.string() })) }));

/** api.NodeDeviceResource: a group of devices the node has (Berth's nodes report none yet). */
export const NodeDeviceResource = lazySchema(() => z.strictObject({
  Vendor: z.string(),
  Type: z.string(),
  Name: z.string(),
  Instances: list(NodeDevice),
  Attributes: map(Attribute),
}));

/** api.NodeResources: what the node has in all. */
export const NodeResources = lazySchema(() => z.strictObject({
  Cpu: z.strictObject({ CpuShares: int, TotalCpuCores: uint, ReservableCpuCores: list(uint) }),
  Memory: z.strictObject({ MemoryMB: int }),
  Disk: z.strictObject({ DiskMB: int }),
  Networks: list(NetworkResource),
  Devices: list(NodeDeviceResource),
  MinDynamicPort: int,
  MaxDynamicPort: int,
}));
export type NodeResources = z.infer<typeof NodeResources>;

/** api.NodeReservedResources: what the node keeps back from allocations. */
export const NodeReservedResources = lazySchema(() => z.strictObject({
  Cpu: z.strictObject({ CpuShares: uint }),
  Memory: z.strictObject({ MemoryMB: uint }),
  Disk: z.strictObject({ DiskMB: uint }),
  Networks: z.strictObject({ ReservedHostPorts: z.string() }),
}));
export type NodeReservedResources = z.infer<typeof NodeReservedResources>;

// --- What the node runs ---

/** api.DriverInfo: a task driver as the node fingerprinted it. */
export const DriverInfo = lazySchema(() => z.strictObject({
  Attributes: stringMap,
  Detected: z.boolean(),
  Healthy: z.boolean(),
  HealthDescription: z.string(),
  UpdateTime: time,
  /** Berth's: true when the driver is served by an external plugin (Nomad's driver plugin protocol); left out for a built-in one. */
  BerthExternal: z.literal(true).optional(),
  /** Berth's: the network modes its tasks can run in (`host`, `none`, `bridge`, `cni/*`), which placement checks; left out when none. */
  BerthNetworkModes: z.array(z.string()).optional(),
  /** Berth's: the cgroup hierarchy the driver puts tasks in (`none`: resource limits are not enforced); left out when the driver does not say. */
  BerthCgroups: z.enum(['v1', 'v2', 'none']).optional(),
}));
export type DriverInfo = z.infer<typeof DriverInfo>;

/** api.HostVolumeInfo: a client host volume, static (ID '') or dynamic. */
export const HostVolumeInfo = lazySchema(() => z.strictObject({ Path: z.string(), ReadOnly: z.boolean(), ID: z.string() }));
export type HostVolumeInfo = z.infer<typeof HostVolumeInfo>;

/** api.HostNetworkInfo: a client `host_network`. */
export const HostNetworkInfo = lazySchema(() => z.strictObject({
  Name: z.string(),
  CIDR: z.string(),
  Interface: z.string(),
  ReservedPorts: z.string(),
  /** Berth's: the address found for it; left out when none was (ports asked on it cannot be placed on this node). */
  BerthAddress: z.string().optional(),
}));
export type HostNetworkInfo = z.infer<typeof HostNetworkInfo>;

// A node's CSI plugin instances are Nomad's CSIInfo, as a plugin lists them (csi.ts).

// --- Drains and events ---

/** api.DrainSpec: what an operator asks of a drain. */
export const DrainSpec = lazySchema(() => z.strictObject({
  /** Nanoseconds after the drain starts when what is left is stopped; 0: none; negative: force (at once). */
  Deadline: nanos,
  IgnoreSystemJobs: z.boolean(),
}));
export type DrainSpec = z.infer<typeof DrainSpec>;

/** api.DrainStrategy: a drain in progress (DrainSpec embedded). */
export const DrainStrategy = lazySchema(() => DrainSpec.extend({
  /** When what is left is stopped (the zero time: no deadline). */
  ForceDeadline: time,
  StartedAt: time,
}));
export type DrainStrategy = z.infer<typeof DrainStrategy>;

export const DrainStatus = lazySchema(() => z.enum(['draining', 'complete', 'canceled']));

/** api.DrainMetadata: the node's latest drain. */
export const DrainMetadata = lazySchema(() => z.strictObject({
  StartedAt: time,
  UpdatedAt: time,
  Status: DrainStatus,
  AccessorID: z.string(),
  /** What the operator sent with the drain (`node drain -m`, `-meta`). */
  Meta: stringMap,
  /** Berth's: what the drainer last did or waits for, in the operator's words; left out when it said nothing. */
  BerthMessage: z.string().optional(),
}));
export type DrainMetadata = z.infer<typeof DrainMetadata>;

/** api.NodeEvent: a change of the node (registered, missed heartbeats, drain set, ...). */
export const NodeEvent = lazySchema(() => z.strictObject({
  Message: z.string(),
  /** `Cluster`, `Drain`, `Driver`, `Heartbeat`, `Scheduler`, `Storage`. */
  Subsystem: z.string(),
  Details: stringMap,
  Timestamp: time,
  CreateIndex: uint,
}));
export type NodeEvent = z.infer<typeof NodeEvent>;

export const NodeStatus = lazySchema(() => z.enum(['initializing', 'ready', 'down', 'disconnected']));
export const SchedulingEligibility = lazySchema(() => z.enum(['eligible', 'ineligible']));

// --- Nodes ---

/** api.Node: `GET /v1/node/:id`. */
export const Node = lazySchema(() => z.strictObject({
  ID: z.string(),
  Datacenter: z.string(),
  Name: z.string(),
  /** `host:port` of the node agent's HTTP API ('' when it has none). */
  HTTPAddr: z.string(),
  TLSEnabled: z.boolean(),
  Attributes: stringMap,
  Resources: ptr(Resources),
  Reserved: ptr(Resources),
  NodeResources: ptr(NodeResources),
  ReservedResources: ptr(NodeReservedResources),
  Links: stringMap,
  Meta: stringMap,
  NodeClass: z.string(),
  NodePool: z.string(),
  CgroupParent: z.string(),
  Drain: z.boolean(),
  DrainStrategy: ptr(DrainStrategy),
  SchedulingEligibility: SchedulingEligibility,
  Status: NodeStatus,
  StatusDescription: z.string(),
  /** Unix seconds of the last status change. */
  StatusUpdatedAt: int,
  Events: list(NodeEvent),
  Drivers: map(DriverInfo),
  HostVolumes: map(HostVolumeInfo),
  GCVolumesOnNodeGC: z.boolean(),
  HostNetworks: map(HostNetworkInfo),
  CSIControllerPlugins: map(CSIInfo),
  CSINodePlugins: map(CSIInfo),
  LastDrain: ptr(DrainMetadata),
  CreateIndex: uint,
  ModifyIndex: uint,
  NodeMaxAllocs: int,
  /** Berth's: when the node last heartbeated, as the answering server heard it. */
  BerthLastHeartbeat: time.optional(),
  /**
   * Berth's: whether the node's connection (server-to-node calls, such as
   * CSI controller calls) is open to the leader. Only the leader knows: a
   * follower leaves it out.
   */
  BerthLeaderConnected: z.boolean().optional(),
  /**
   * Berth's: the client's `stop_after_server_disconnect` (nanoseconds): how
   * long after losing every server it stops the tasks holding single-writer
   * volumes. Left out when the node does not fence.
   */
  BerthStopAfterServerDisconnect: nanos.optional(),
}));
export type Node = z.infer<typeof Node>;

/**
 * api.NodeListStub: a row of `GET /v1/nodes`. `NodeResources` and
 * `ReservedResources` only with `?resources=true`, `Attributes` (`os.name`
 * alone) only with `?os=true`.
 */
export const NodeListStub = lazySchema(() => z.strictObject({
  /** The host of the node agent's HTTP address. */
  Address: z.string(),
  ID: z.string(),
  Attributes: z.record(z.string(), z.string()).optional(), // omitempty
  Datacenter: z.string(),
  Name: z.string(),
  NodeClass: z.string(),
  NodePool: z.string(),
  /** The agent's version (attribute `nomad.version`; Berth's agents report `berth.version`). */
  Version: z.string(),
  Drain: z.boolean(),
  SchedulingEligibility: SchedulingEligibility,
  Status: NodeStatus,
  StatusDescription: z.string(),
  Drivers: map(DriverInfo),
  /** Nomad's server sends it (structs.NodeListStub); api's struct drops it. */
  HostVolumes: map(HostVolumeInfo),
  NodeResources: NodeResources.optional(), // omitempty
  ReservedResources: NodeReservedResources.optional(), // omitempty
  LastDrain: ptr(DrainMetadata),
  CreateIndex: uint,
  ModifyIndex: uint,
  /** Berth's: as Node.BerthLeaderConnected. */
  BerthLeaderConnected: z.boolean().optional(),
}));
export type NodeListStub = z.infer<typeof NodeListStub>;

// --- Writes (request bodies are read as Go's decoder reads them: unknown fields ignored, missing ones zero) ---

/** api.NodeUpdateDrainRequest: the body of `POST /v1/node/:id/drain`. A null DrainSpec cancels the drain. */
export const NodeUpdateDrainRequest = lazySchema(() => z.object({
  NodeID: z.string().optional(),
  DrainSpec: z.object({ Deadline: nanos, IgnoreSystemJobs: z.boolean().optional() }).nullable().optional(),
  MarkEligible: z.boolean().optional(),
  Meta: stringMap.optional(),
}));
export type NodeUpdateDrainRequest = z.infer<typeof NodeUpdateDrainRequest>;

/** The body of `POST /v1/node/:id/eligibility`. */
export const NodeUpdateEligibilityRequest = lazySchema(() => z.object({ NodeID: z.string().optional(), Eligibility: SchedulingEligibility }));
export type NodeUpdateEligibilityRequest = z.infer<typeof NodeUpdateEligibilityRequest>;

/**
 * api.NodeDrainUpdateResponse, as Nomad's server writes it: with `Index`
 * (its WriteMeta; api's client fills LastIndex from X-Nomad-Index instead).
 */
export const NodeDrainUpdateResponse = lazySchema(() => z.strictObject({ NodeModifyIndex: uint, EvalIDs: list(z.string()), EvalCreateIndex: uint, Index: uint }));
export type NodeDrainUpdateResponse = z.infer<typeof NodeDrainUpdateResponse>;

export const NodeEligibilityUpdateResponse = NodeDrainUpdateResponse;
export type NodeEligibilityUpdateResponse = NodeDrainUpdateResponse;

/**
 * structs.NodeUpdateResponse as `purge` and `evaluate` answer it (api reads
 * NodePurgeResponse's EvalIDs, EvalCreateIndex and NodeModifyIndex from it).
 * Fields only a registering node uses (heartbeat TTL, servers, features) are
 * zero here, as in Nomad's answer to an operator.
 */
export const NodeUpdateResponse = lazySchema(() => z.strictObject({
  HeartbeatTTL: nanos,
  EvalIDs: list(z.string()),
  EvalCreateIndex: uint,
  NodeModifyIndex: uint,
  Features: uint,
  LeaderRPCAddr: z.string(),
  NumNodes: int,
  Servers: list(z.unknown()),
  SchedulingEligibility: z.string(),
  SignedIdentity: ptr(z.string()),
  Index: uint,
  LastContact: nanos,
  KnownLeader: z.boolean(),
  NextToken: z.string(),
}));
export type NodeUpdateResponse = z.infer<typeof NodeUpdateResponse>;

/** api.NodePurgeResponse: what Nomad's client reads of a purge. */
export const NodePurgeResponse = lazySchema(() => z.strictObject({ EvalIDs: list(z.string()), EvalCreateIndex: uint, NodeModifyIndex: uint }));
export type NodePurgeResponse = z.infer<typeof NodePurgeResponse>;

// --- Node meta (the node agent's /v1/client/metadata) ---

/**
 * api.NodeMetaApplyRequest: the body of `POST /v1/client/metadata`. A null
 * value removes the key (a static one too, until set again).
 */
export const NodeMetaApplyRequest = lazySchema(() => z.object({
  NodeID: z.string().optional(),
  Meta: z.record(z.string(), z.string().nullable()),
  /** Berth's: dynamic keys to forget, so that each returns to its static value (if any). */
  BerthUnset: z.array(z.string()).optional(),
}));
export type NodeMetaApplyRequest = z.infer<typeof NodeMetaApplyRequest>;

/** api.NodeMetaResponse: the node's meta, merged, dynamic (null: removed) and static. */
export const NodeMetaResponse = lazySchema(() => z.strictObject({
  Meta: stringMap,
  Dynamic: map(z.string().nullable()),
  Static: stringMap,
}));
export type NodeMetaResponse = z.infer<typeof NodeMetaResponse>;
