// A group's or a task's `service` and `check` blocks as Nomad's API writes
// them (api/services.go), and the Consul blocks a job may carry
// (api/consul.go: consul, connect with its sidecars, proxies and gateways).
// Berth registers services with Nomad's native provider and has no Consul:
// a job that gives a Consul block is refused by name, but the shapes are
// whole so a Nomad job reads and validates as Nomad writes it.

import { z } from 'zod';
import { Resources } from './resources.js';
import { anyMap, int, list, map, nanos, ptr, stringMap, uint } from './_go.js';
import { LogConfig, VolumeMount, WorkloadIdentity } from './job-task-blocks.js';
import { lazySchema } from './lazy-schema.js';

/** Restart the task after `Limit` unhealthy results in a row (Grace: 1s when unset). */
export const CheckRestart = lazySchema(() => z.strictObject({
  Limit: int,
  Grace: ptr(nanos),
  IgnoreWarnings: z.boolean(),
}));
export type CheckRestart = z.infer<typeof CheckRestart>;

export const ServiceCheck = lazySchema(() => z.strictObject({
  Name: z.string(),
  Type: z.string(),
  Command: z.string(),
  Args: list(z.string()),
  Path: z.string(),
  Protocol: z.string(),
  PortLabel: z.string(),
  Expose: z.boolean(),
  AddressMode: z.string(),
  Advertise: z.string(),
  Interval: nanos,
  Timeout: nanos,
  InitialStatus: z.string(),
  Notes: z.string(),
  TLSServerName: z.string(),
  TLSSkipVerify: z.boolean(),
  Header: map(z.array(z.string())),
  Method: z.string(),
  CheckRestart: ptr(CheckRestart),
  GRPCService: z.string(),
  GRPCUseTLS: z.boolean(),
  TaskName: z.string(),
  SuccessBeforePassing: int,
  FailuresBeforeCritical: int,
  FailuresBeforeWarning: int,
  Body: z.string(),
  OnUpdate: z.string(),
  /** Berth's: the HTTP statuses that pass (a job file's `expected_status`); absent: 2xx passes, 429 warns. */
  BerthExpectedStatus: z.array(int).optional(),
}));
export type ServiceCheck = z.infer<typeof ServiceCheck>;

export const ServiceWeights = lazySchema(() => z.strictObject({
  Passing: int,
  Warning: int,
}));
export type ServiceWeights = z.infer<typeof ServiceWeights>;

/** A group's or a task's `consul` block. */
export const Consul = lazySchema(() => z.strictObject({
  Namespace: z.string(),
  Cluster: z.string(),
  Partition: z.string(),
}));
export type Consul = z.infer<typeof Consul>;

export const ConsulExposePath = lazySchema(() => z.strictObject({
  Path: z.string(),
  Protocol: z.string(),
  LocalPathPort: int,
  ListenerPort: z.string(),
}));
export type ConsulExposePath = z.infer<typeof ConsulExposePath>;

export const ConsulExposeConfig = lazySchema(() => z.strictObject({
  Paths: list(ConsulExposePath),
  /** Deprecated (Nomad): use Paths. */
  Path: list(ConsulExposePath),
}));
export type ConsulExposeConfig = z.infer<typeof ConsulExposeConfig>;

export const ConsulMeshGateway = lazySchema(() => z.strictObject({
  Mode: z.string(),
}));
export type ConsulMeshGateway = z.infer<typeof ConsulMeshGateway>;

export const ConsulUpstream = lazySchema(() => z.strictObject({
  DestinationName: z.string(),
  DestinationNamespace: z.string(),
  DestinationPeer: z.string(),
  DestinationPartition: z.string(),
  DestinationType: z.string(),
  LocalBindPort: int,
  Datacenter: z.string(),
  LocalBindAddress: z.string(),
  LocalBindSocketPath: z.string(),
  LocalBindSocketMode: z.string(),
  MeshGateway: ptr(ConsulMeshGateway),
  Config: anyMap,
}));
export type ConsulUpstream = z.infer<typeof ConsulUpstream>;

export const ConsulTransparentProxy = lazySchema(() => z.strictObject({
  UID: z.string(),
  OutboundPort: uint,
  ExcludeInboundPorts: list(z.string()),
  ExcludeOutboundPorts: list(uint),
  ExcludeOutboundCIDRs: list(z.string()),
  ExcludeUIDs: list(z.string()),
  NoDNS: z.boolean(),
}));
export type ConsulTransparentProxy = z.infer<typeof ConsulTransparentProxy>;

export const ConsulProxy = lazySchema(() => z.strictObject({
  LocalServiceAddress: z.string(),
  LocalServicePort: int,
  Expose: ptr(ConsulExposeConfig),
  /** Deprecated (Nomad): use Expose. */
  ExposeConfig: ptr(ConsulExposeConfig),
  Upstreams: list(ConsulUpstream),
  TransparentProxy: ptr(ConsulTransparentProxy),
  Config: anyMap,
}));
export type ConsulProxy = z.infer<typeof ConsulProxy>;

export const ConsulSidecarService = lazySchema(() => z.strictObject({
  Tags: list(z.string()),
  Port: z.string(),
  Proxy: ptr(ConsulProxy),
  DisableDefaultTCPCheck: z.boolean(),
  Meta: stringMap,
}));
export type ConsulSidecarService = z.infer<typeof ConsulSidecarService>;

export const SidecarTask = lazySchema(() => z.strictObject({
  Name: z.string(),
  Driver: z.string(),
  User: z.string(),
  Config: anyMap,
  Env: stringMap,
  Resources: ptr(Resources),
  Meta: stringMap,
  KillTimeout: ptr(nanos),
  LogConfig: ptr(LogConfig),
  ShutdownDelay: ptr(nanos),
  KillSignal: z.string(),
  VolumeMounts: list(VolumeMount),
  Identities: list(WorkloadIdentity),
}));
export type SidecarTask = z.infer<typeof SidecarTask>;

export const ConsulGatewayBindAddress = lazySchema(() => z.strictObject({
  Name: z.string(),
  Address: z.string(),
  Port: int,
}));
export type ConsulGatewayBindAddress = z.infer<typeof ConsulGatewayBindAddress>;

export const ConsulGatewayProxy = lazySchema(() => z.strictObject({
  ConnectTimeout: ptr(nanos),
  EnvoyGatewayBindTaggedAddresses: z.boolean(),
  EnvoyGatewayBindAddresses: map(ConsulGatewayBindAddress),
  EnvoyGatewayNoDefaultBind: z.boolean(),
  EnvoyDNSDiscoveryType: z.string(),
  Config: anyMap,
}));
export type ConsulGatewayProxy = z.infer<typeof ConsulGatewayProxy>;

export const ConsulGatewayTLSSDSConfig = lazySchema(() => z.strictObject({
  ClusterName: z.string(),
  CertResource: z.string(),
}));
export type ConsulGatewayTLSSDSConfig = z.infer<typeof ConsulGatewayTLSSDSConfig>;

export const ConsulGatewayTLSConfig = lazySchema(() => z.strictObject({
  Enabled: z.boolean(),
  TLSMinVersion: z.string(),
  TLSMaxVersion: z.string(),
  CipherSuites: list(z.string()),
  SDS: ptr(ConsulGatewayTLSSDSConfig),
}));
export type ConsulGatewayTLSConfig = z.infer<typeof ConsulGatewayTLSConfig>;

export const ConsulHTTPHeaderModifiers = lazySchema(() => z.strictObject({
  Add: stringMap,
  Set: stringMap,
  Remove: list(z.string()),
}));
export type ConsulHTTPHeaderModifiers = z.infer<typeof ConsulHTTPHeaderModifiers>;

export const ConsulIngressService = lazySchema(() => z.strictObject({
  Name: z.string(),
  Hosts: list(z.string()),
  TLS: ptr(ConsulGatewayTLSConfig),
  RequestHeaders: ptr(ConsulHTTPHeaderModifiers),
  ResponseHeaders: ptr(ConsulHTTPHeaderModifiers),
  MaxConnections: ptr(uint),
  MaxPendingRequests: ptr(uint),
  MaxConcurrentRequests: ptr(uint),
}));
export type ConsulIngressService = z.infer<typeof ConsulIngressService>;

export const ConsulIngressListener = lazySchema(() => z.strictObject({
  Port: int,
  Protocol: z.string(),
  Services: list(ConsulIngressService),
}));
export type ConsulIngressListener = z.infer<typeof ConsulIngressListener>;

export const ConsulIngressConfigEntry = lazySchema(() => z.strictObject({
  TLS: ptr(ConsulGatewayTLSConfig),
  Listeners: list(ConsulIngressListener),
}));
export type ConsulIngressConfigEntry = z.infer<typeof ConsulIngressConfigEntry>;

export const ConsulLinkedService = lazySchema(() => z.strictObject({
  Name: z.string(),
  CAFile: z.string(),
  CertFile: z.string(),
  KeyFile: z.string(),
  SNI: z.string(),
}));
export type ConsulLinkedService = z.infer<typeof ConsulLinkedService>;

export const ConsulTerminatingConfigEntry = lazySchema(() => z.strictObject({
  Services: list(ConsulLinkedService),
}));
export type ConsulTerminatingConfigEntry = z.infer<typeof ConsulTerminatingConfigEntry>;

/** Nomad's ConsulMeshConfigEntry has no fields (yet). */
export const ConsulMeshConfigEntry = lazySchema(() => z.strictObject({}));
export type ConsulMeshConfigEntry = z.infer<typeof ConsulMeshConfigEntry>;

export const ConsulGateway = lazySchema(() => z.strictObject({
  Proxy: ptr(ConsulGatewayProxy),
  Ingress: ptr(ConsulIngressConfigEntry),
  Terminating: ptr(ConsulTerminatingConfigEntry),
  Mesh: ptr(ConsulMeshConfigEntry),
}));
export type ConsulGateway = z.infer<typeof ConsulGateway>;

/** A service's `connect` block (Consul service mesh). */
export const ConsulConnect = lazySchema(() => z.strictObject({
  Native: z.boolean(),
  Gateway: ptr(ConsulGateway),
  SidecarService: ptr(ConsulSidecarService),
  SidecarTask: ptr(SidecarTask),
}));
export type ConsulConnect = z.infer<typeof ConsulConnect>;

/**
 * A `service` block. Nomad's Canonicalize names it `<job>-<group>[-<task>]`
 * when unnamed, and fills AddressMode "auto", OnUpdate "require_healthy",
 * Provider "consul" (Berth's is always "nomad") and Cluster "default".
 */
export const Service = lazySchema(() => z.strictObject({
  Name: z.string(),
  Tags: list(z.string()),
  CanaryTags: list(z.string()),
  EnableTagOverride: z.boolean(),
  PortLabel: z.string(),
  AddressMode: z.string(),
  Address: z.string(),
  Checks: list(ServiceCheck),
  CheckRestart: ptr(CheckRestart),
  Connect: ptr(ConsulConnect),
  Meta: stringMap,
  CanaryMeta: stringMap,
  TaggedAddresses: stringMap,
  TaskName: z.string(),
  OnUpdate: z.string(),
  Identity: ptr(WorkloadIdentity),
  Weights: ptr(ServiceWeights),
  Provider: z.string(),
  Cluster: z.string(),
  Kind: z.string(),
}));
export type Service = z.infer<typeof Service>;
