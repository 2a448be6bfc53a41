// Nodes as Nomad's API encodes them (Nomad's `api/nodes.go`, `api/node_meta.go`
// and the parts of `api/resources.go` a node reports): `GET /v1/nodes`
// (NodeListStub), `GET /v1/node/:id` (Node), the answers of `drain`,
// `eligibility`, `purge` and `evaluate`, and the client's node meta
// (`/v1/client/metadata`). Go's encoder writes every field, nil maps, slices
// and pointers as null; times are RFC 3339 strings (the zero time is
// 0001-01-01T00:00:00Z) and durations integer nanoseconds. What Berth adds is
// marked "Berth's" where it is defined.

import { z } from 'zod';

/** A Go `time.Time`: an RFC 3339 timestamp (the zero time is `0001-01-01T00:00:00Z`). */
export const GoTime = z.string().regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/, 'an RFC 3339 time');
/** A Go `time.Duration`: integer nanoseconds. */
export const GoDuration = z.number().int();
const Uint = z.number().int().nonnegative();
const StringMap = z.record(z.string(), z.string());

// --- Resources a node reports (api/resources.go) ---

const Port = z.object({ Label: z.string(), Value: z.number().int(), To: z.number().int(), HostNetwork: z.string(), IgnoreCollision: z.boolean() });
const DNSConfig = z.object({ Servers: z.array(z.string()).nullable(), Searches: z.array(z.string()).nullable(), Options: z.array(z.string()).nullable() });
const CNIConfig = z.object({ Args: StringMap.nullable() });

/** api.NetworkResource: a network of the node (its address), or one an allocation asked for. */
export const NetworkResource = z.object({
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

/**
 * api.Resources, as Node.Resources and Node.Reserved carry it (deprecated
 * by Nomad for NodeResources, still read by Nomad 1.1's `node status`).
 * `Devices` are RequestedDevices, which a node never reports: always empty.
 */
export const Resources = z.object({
  CPU: z.number().int().nullable(),
  Cores: z.number().int().nullable(),
  MemoryMB: z.number().int().nullable(),
  MemoryMaxMB: z.number().int().nullable(),
  DiskMB: z.number().int().nullable(),
  Networks: z.array(NetworkResource).nullable(),
  Devices: z.array(z.unknown()).max(0).nullable(),
  NUMA: z.object({ Affinity: z.string(), Devices: z.array(z.string()).nullable() }).nullable(),
  SecretsMB: z.number().int().nullable(),
  IOPS: z.number().int().nullable(),
});
export type Resources = z.infer<typeof Resources>;

/** api.Attribute: one of Float, Int, String or Bool, with a unit. */
const Attribute = z.object({ Float: z.number().optional(), Int: z.number().int().optional(), String: z.string().optional(), Bool: z.boolean().optional(), Unit: z.string() });

export const NodeDeviceResource = z.object({
  Vendor: z.string(),
  Type: z.string(),
  Name: z.string(),
  Instances: z.array(z.object({ ID: z.string(), Healthy: z.boolean(), HealthDescription: z.string(), Locality: z.object({ PciBusID: z.string() }).nullable() })).nullable(),
  Attributes: z.record(z.string(), Attribute).nullable(),
});

/** api.NodeResources: what the node has in all. */
export const NodeResources = z.object({
  Cpu: z.object({ CpuShares: z.number().int(), TotalCpuCores: Uint, ReservableCpuCores: z.array(Uint).nullable() }),
  Memory: z.object({ MemoryMB: z.number().int() }),
  Disk: z.object({ DiskMB: z.number().int() }),
  Networks: z.array(NetworkResource).nullable(),
  Devices: z.array(NodeDeviceResource).nullable(),
  MinDynamicPort: z.number().int(),
  MaxDynamicPort: z.number().int(),
});
export type NodeResources = z.infer<typeof NodeResources>;

/** api.NodeReservedResources: what the node keeps back from allocations. */
export const NodeReservedResources = z.object({
  Cpu: z.object({ CpuShares: Uint }),
  Memory: z.object({ MemoryMB: Uint }),
  Disk: z.object({ DiskMB: Uint }),
  Networks: z.object({ ReservedHostPorts: z.string() }),
});
export type NodeReservedResources = z.infer<typeof NodeReservedResources>;

// --- What the node runs ---

/** api.DriverInfo: a task driver as the node fingerprinted it. */
export const DriverInfo = z.object({
  Attributes: StringMap.nullable(),
  Detected: z.boolean(),
  Healthy: z.boolean(),
  HealthDescription: z.string(),
  UpdateTime: GoTime,
  /** Berth's: the driver is served by an external plugin (Nomad's driver plugin protocol). */
  External: z.boolean(),
  /** Berth's: the network modes its tasks can run in (`host`, `none`, `bridge`, `cni/*`), which placement checks. */
  NetworkModes: z.array(z.string()),
  /** Berth's: the cgroup hierarchy the driver puts tasks in; `none`: resource limits are not enforced. */
  Cgroups: z.enum(['v1', 'v2', 'none']),
});
export type DriverInfo = z.infer<typeof DriverInfo>;

export const HostVolumeInfo = z.object({ Path: z.string(), ReadOnly: z.boolean(), ID: z.string() });
export type HostVolumeInfo = z.infer<typeof HostVolumeInfo>;

/** api.HostNetworkInfo: a client `host_network`. */
export const HostNetworkInfo = z.object({
  Name: z.string(),
  CIDR: z.string(),
  Interface: z.string(),
  ReservedPorts: z.string(),
  /** Berth's: the address found for it ('' when none: ports asked on it cannot be placed on this node). */
  Address: z.string(),
});
export type HostNetworkInfo = z.infer<typeof HostNetworkInfo>;

const CSITopology = z.object({ Segments: StringMap.nullable() });

/** api.CSIControllerInfo: what a controller plugin instance supports. */
export const CSIControllerInfo = z.object({
  SupportsCreateDelete: z.boolean(),
  SupportsAttachDetach: z.boolean(),
  SupportsListVolumes: z.boolean(),
  SupportsGetCapacity: z.boolean(),
  SupportsCreateDeleteSnapshot: z.boolean(),
  SupportsListSnapshots: z.boolean(),
  SupportsClone: z.boolean(),
  SupportsReadOnlyAttach: z.boolean(),
  SupportsExpand: z.boolean(),
  SupportsListVolumesAttachedNodes: z.boolean(),
  SupportsCondition: z.boolean(),
  SupportsGet: z.boolean(),
});

/** api.CSINodeInfo: what a node plugin instance reported of the node. */
export const CSINodeInfo = z.object({
  ID: z.string(),
  MaxVolumes: z.number().int(),
  AccessibleTopology: CSITopology.nullable(),
  RequiresNodeStageVolume: z.boolean(),
  SupportsStats: z.boolean(),
  SupportsExpand: z.boolean(),
  SupportsCondition: z.boolean(),
});

/** api.CSIInfo: one CSI plugin instance on the node. ControllerInfo/NodeInfo are left out when not that kind (omitempty). */
export const CSIInfo = z.object({
  PluginID: z.string(),
  AllocID: z.string(),
  Healthy: z.boolean(),
  HealthDescription: z.string(),
  UpdateTime: GoTime,
  RequiresControllerPlugin: z.boolean(),
  RequiresTopologies: z.boolean(),
  ControllerInfo: CSIControllerInfo.optional(),
  NodeInfo: CSINodeInfo.optional(),
  /** Nomad's server sends these too (structs.CSIInfo); api's struct drops them: GetPluginInfo's name and vendor version. */
  Provider: z.string(),
  ProviderVersion: z.string(),
});
export type CSIInfo = z.infer<typeof CSIInfo>;

// --- Drains and events ---

/** api.DrainSpec: what an operator asks of a drain. */
export const DrainSpec = z.object({
  /** Nanoseconds after the drain starts when what is left is stopped; 0: none; negative: force (at once). */
  Deadline: GoDuration,
  IgnoreSystemJobs: z.boolean(),
});
export type DrainSpec = z.infer<typeof DrainSpec>;

/** api.DrainStrategy: a drain in progress (DrainSpec embedded). */
export const DrainStrategy = DrainSpec.extend({
  /** When what is left is stopped (the zero time: no deadline). */
  ForceDeadline: GoTime,
  StartedAt: GoTime,
});
export type DrainStrategy = z.infer<typeof DrainStrategy>;

export const DrainStatus = z.enum(['draining', 'complete', 'canceled']);

/** api.DrainMetadata: the node's latest drain. */
export const DrainMetadata = z.object({
  StartedAt: GoTime,
  UpdatedAt: GoTime,
  Status: DrainStatus,
  AccessorID: z.string(),
  /** What the operator sent with the drain (`node drain -m`, `-meta`). */
  Meta: StringMap.nullable(),
  /** Berth's: what the drainer last did or waits for, in the operator's words. */
  Message: z.string(),
});
export type DrainMetadata = z.infer<typeof DrainMetadata>;

/** api.NodeEvent: a change of the node (registered, missed heartbeats, drain set, ...). */
export const NodeEvent = z.object({
  Message: z.string(),
  /** `Cluster`, `Drain`, `Driver`, `Heartbeat`, `Scheduler`, `Storage`. */
  Subsystem: z.string(),
  Details: StringMap.nullable(),
  Timestamp: GoTime,
  CreateIndex: Uint,
});
export type NodeEvent = z.infer<typeof NodeEvent>;

export const NodeStatus = z.enum(['initializing', 'ready', 'down', 'disconnected']);
export const SchedulingEligibility = z.enum(['eligible', 'ineligible']);

// --- Nodes ---

/** api.Node: `GET /v1/node/:id`. */
export const Node = z.object({
  ID: z.string(),
  Datacenter: z.string(),
  Name: z.string(),
  /** `host:port` of the node agent's HTTP API ('' when it has none). */
  HTTPAddr: z.string(),
  TLSEnabled: z.boolean(),
  Attributes: StringMap.nullable(),
  Resources: Resources.nullable(),
  Reserved: Resources.nullable(),
  NodeResources: NodeResources.nullable(),
  ReservedResources: NodeReservedResources.nullable(),
  Links: StringMap.nullable(),
  Meta: StringMap.nullable(),
  NodeClass: z.string(),
  NodePool: z.string(),
  CgroupParent: z.string(),
  Drain: z.boolean(),
  DrainStrategy: DrainStrategy.nullable(),
  SchedulingEligibility: SchedulingEligibility,
  Status: NodeStatus,
  StatusDescription: z.string(),
  /** Unix seconds of the last status change. */
  StatusUpdatedAt: z.number().int(),
  Events: z.array(NodeEvent).nullable(),
  Drivers: z.record(z.string(), DriverInfo).nullable(),
  HostVolumes: z.record(z.string(), HostVolumeInfo).nullable(),
  GCVolumesOnNodeGC: z.boolean(),
  HostNetworks: z.record(z.string(), HostNetworkInfo).nullable(),
  CSIControllerPlugins: z.record(z.string(), CSIInfo).nullable(),
  CSINodePlugins: z.record(z.string(), CSIInfo).nullable(),
  LastDrain: DrainMetadata.nullable(),
  CreateIndex: Uint,
  ModifyIndex: Uint,
  NodeMaxAllocs: z.number().int(),
  /** Berth's: when the node last heartbeated, as the answering server saw it. */
  LastHeartbeat: GoTime,
  /**
   * Berth's: whether the node's connection (server-to-node calls, such as
   * CSI controller calls) is open to the leader. Only the leader knows: a
   * follower leaves it out.
   */
  LeaderConnected: z.boolean().optional(),
  /**
   * Berth's: the client's `stop_after_server_disconnect` (nanoseconds; 0:
   * the node does not fence): how long after losing every server it stops
   * the tasks holding single-writer volumes.
   */
  StopAfterServerDisconnect: GoDuration,
});
export type Node = z.infer<typeof Node>;

/**
 * api.NodeListStub: a row of `GET /v1/nodes`. `NodeResources` and
 * `ReservedResources` only with `?resources=true`, `Attributes` (`os.name`
 * alone) only with `?os=true`.
 */
export const NodeListStub = z.object({
  /** The host of the node agent's HTTP address. */
  Address: z.string(),
  ID: z.string(),
  Attributes: StringMap.optional(),
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
  Drivers: z.record(z.string(), DriverInfo).nullable(),
  /** Nomad's server sends it (structs.NodeListStub); api's struct drops it. */
  HostVolumes: z.record(z.string(), HostVolumeInfo).nullable(),
  NodeResources: NodeResources.optional(),
  ReservedResources: NodeReservedResources.optional(),
  LastDrain: DrainMetadata.nullable(),
  CreateIndex: Uint,
  ModifyIndex: Uint,
  /** Berth's: as Node.LeaderConnected. */
  LeaderConnected: z.boolean().optional(),
});
export type NodeListStub = z.infer<typeof NodeListStub>;

// --- Writes ---

/** api.NodeUpdateDrainRequest: the body of `POST /v1/node/:id/drain`. A null DrainSpec cancels the drain. */
export const NodeUpdateDrainRequest = z.object({
  NodeID: z.string().optional(),
  DrainSpec: DrainSpec.nullable().optional(),
  MarkEligible: z.boolean().optional(),
  Meta: StringMap.nullable().optional(),
});
export type NodeUpdateDrainRequest = z.infer<typeof NodeUpdateDrainRequest>;

/** The body of `POST /v1/node/:id/eligibility`. */
export const NodeUpdateEligibilityRequest = z.object({ NodeID: z.string().optional(), Eligibility: SchedulingEligibility });
export type NodeUpdateEligibilityRequest = z.infer<typeof NodeUpdateEligibilityRequest>;

/**
 * api.NodeDrainUpdateResponse, as Nomad's server writes it: with `Index`
 * (its WriteMeta; api's client fills LastIndex from X-Nomad-Index instead).
 */
export const NodeDrainUpdateResponse = z.object({ NodeModifyIndex: Uint, EvalIDs: z.array(z.string()).nullable(), EvalCreateIndex: Uint, Index: Uint });
export type NodeDrainUpdateResponse = z.infer<typeof NodeDrainUpdateResponse>;

export const NodeEligibilityUpdateResponse = NodeDrainUpdateResponse;
export type NodeEligibilityUpdateResponse = NodeDrainUpdateResponse;

/**
 * structs.NodeUpdateResponse as `purge` and `evaluate` answer it (api reads
 * NodePurgeResponse's EvalIDs, EvalCreateIndex and NodeModifyIndex from it).
 * Fields only a registering node uses (heartbeat TTL, servers, features) are
 * zero here, as in Nomad's answer to an operator.
 */
export const NodeUpdateResponse = z.object({
  HeartbeatTTL: GoDuration,
  EvalIDs: z.array(z.string()).nullable(),
  EvalCreateIndex: Uint,
  NodeModifyIndex: Uint,
  Features: Uint,
  LeaderRPCAddr: z.string(),
  NumNodes: z.number().int(),
  Servers: z.array(z.unknown()).nullable(),
  SchedulingEligibility: z.string(),
  SignedIdentity: z.string().nullable(),
  Index: Uint,
  LastContact: GoDuration,
  KnownLeader: z.boolean(),
  NextToken: z.string(),
});
export type NodeUpdateResponse = z.infer<typeof NodeUpdateResponse>;
/** api.NodePurgeResponse: what Nomad's client reads of a purge. */
export const NodePurgeResponse = z.object({ EvalIDs: z.array(z.string()).nullable(), EvalCreateIndex: Uint, NodeModifyIndex: Uint });
export type NodePurgeResponse = z.infer<typeof NodePurgeResponse>;

// --- Node meta (the node agent's /v1/client/metadata) ---

/**
 * api.NodeMetaApplyRequest: the body of `POST /v1/client/metadata`. A null
 * value removes the key (a static one too, until set again).
 */
export const NodeMetaApplyRequest = z.object({
  NodeID: z.string().optional(),
  Meta: z.record(z.string(), z.string().nullable()),
  /** Berth's: dynamic keys to forget, so that each returns to its static value (if any). */
  Unset: z.array(z.string()).optional(),
});
export type NodeMetaApplyRequest = z.infer<typeof NodeMetaApplyRequest>;

/** api.NodeMetaResponse: the node's meta, merged, dynamic (null: removed) and static. */
export const NodeMetaResponse = z.object({
  Meta: StringMap,
  Dynamic: z.record(z.string(), z.string().nullable()),
  Static: StringMap,
});
export type NodeMetaResponse = z.infer<typeof NodeMetaResponse>;
