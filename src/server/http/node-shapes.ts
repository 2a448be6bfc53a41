// Berth's nodes (src/structs) in Nomad's shapes (src/api/nodes.ts): what
// `GET /v1/node/:id` and `GET /v1/nodes` answer, and what drain, purge and
// evaluate write back. Pure functions; typed with the API's types, so a
// field the shape has and the converter forgets fails the typecheck.

import type * as Api from '../../api/index.js';
import type { CsiPluginReport, DrainMetadata, Node, NodeHistoryEvent } from '../../structs/index.js';

/** Go's zero time, as encoding/json writes it. */
const ZERO_TIME = '0001-01-01T00:00:00Z';

/** Epoch milliseconds as a Go time (the zero time for 0 or none). */
export function goTime(ms: number | undefined): string {
  return ms ? new Date(ms).toISOString() : ZERO_TIME;
}

/** Milliseconds as a Go duration (nanoseconds). */
export function goDuration(ms: number): number {
  return Math.round(ms * 1e6);
}

/** The default range dynamic ports are picked from, as the scheduler uses it. */
const DYNAMIC_PORTS = { min: 20000, max: 32000 };

/** What a node answer adds to the stored node, from the answering server's memory. */
export interface NodeLink {
  /** Only the leader knows the node connection. */
  leaderConnected?: boolean;
  /** When this server last heard from the node, if later than the stored node says. */
  lastHeartbeat?: number;
}

/** `host:port` of the node agent and whether it speaks TLS, from its URL (Nomad's HTTPAddr and TLSEnabled). */
export function agentAddress(httpAddr: string): { hostPort: string; host: string; tls: boolean } {
  if (!httpAddr) return { hostPort: '', host: '', tls: false };
  try {
    const url = new URL(httpAddr);
    return { hostPort: url.host, host: url.hostname.replace(/^\[(.*)\]$/, '$1'), tls: url.protocol === 'https:' };
  } catch {
    return { hostPort: httpAddr, host: httpAddr.replace(/:\d+$/, ''), tls: false };
  }
}

/** `GET /v1/node/:id`: the whole node. */
export function nodeOf(n: Node, link: NodeLink = {}): Api.Node {
  const addr = agentAddress(n.httpAddr);
  const out: Api.Node = {
    ID: n.id,
    Datacenter: n.datacenter,
    Name: n.name,
    HTTPAddr: addr.hostPort,
    TLSEnabled: addr.tls,
    Attributes: { ...n.attributes },
    Resources: legacyResources(n),
    Reserved: legacyReserved(),
    NodeResources: nodeResources(n),
    ReservedResources: reservedResources(n),
    Links: {},
    Meta: { ...(n.meta ?? {}) },
    NodeClass: n.nodeClass ?? '',
    NodePool: 'default',
    CgroupParent: '',
    Drain: Boolean(n.drainStrategy),
    DrainStrategy: n.drainStrategy
      ? {
          Deadline: n.drainStrategy.deadlineMs < 0 ? -1 : goDuration(n.drainStrategy.deadlineMs),
          IgnoreSystemJobs: n.drainStrategy.ignoreSystemJobs,
          ForceDeadline: goTime(n.drainStrategy.forceDeadline),
          StartedAt: goTime(n.drainStrategy.startedAt),
        }
      : null,
    SchedulingEligibility: eligibilityOf(n),
    Status: n.status,
    StatusDescription: n.statusDescription,
    StatusUpdatedAt: Math.floor((n.statusUpdatedAt ?? n.lastHeartbeat) / 1000),
    Events: (n.events ?? []).map(nodeEventOf),
    Drivers: driversOf(n),
    HostVolumes: hostVolumesOf(n),
    GCVolumesOnNodeGC: false,
    HostNetworks: hostNetworksOf(n),
    CSIControllerPlugins: csiInfos(n.csiControllerPlugins),
    CSINodePlugins: csiInfos(n.csiNodePlugins),
    LastDrain: n.lastDrain ? drainMetadataOf(n.lastDrain) : null,
    CreateIndex: n.createIndex,
    ModifyIndex: n.modifyIndex,
    NodeMaxAllocs: 0,
    BerthLastHeartbeat: goTime(Math.max(n.lastHeartbeat, link.lastHeartbeat ?? 0)),
  };
  if (link.leaderConnected !== undefined) out.BerthLeaderConnected = link.leaderConnected;
  if (n.stopAfterDisconnectMs) out.BerthStopAfterServerDisconnect = goDuration(n.stopAfterDisconnectMs);
  return out;
}

/** Which optional parts a list row carries (`?resources=true`, `?os=true`). */
export interface StubFields {
  resources?: boolean;
  os?: boolean;
}

/** A row of `GET /v1/nodes` (Nomad's Node.Stub). */
export function nodeStubOf(n: Node, fields: StubFields = {}, link: NodeLink = {}): Api.NodeListStub {
  const out: Api.NodeListStub = {
    Address: agentAddress(n.httpAddr).host,
    ID: n.id,
    Datacenter: n.datacenter,
    Name: n.name,
    NodeClass: n.nodeClass ?? '',
    NodePool: 'default',
    Version: n.attributes['nomad.version'] ?? n.attributes['berth.version'] ?? '',
    Drain: Boolean(n.drainStrategy),
    SchedulingEligibility: eligibilityOf(n),
    Status: n.status,
    StatusDescription: n.statusDescription,
    Drivers: driversOf(n),
    HostVolumes: hostVolumesOf(n),
    LastDrain: n.lastDrain ? drainMetadataOf(n.lastDrain) : null,
    CreateIndex: n.createIndex,
    ModifyIndex: n.modifyIndex,
  };
  if (fields.os) out.Attributes = { 'os.name': n.attributes['os.name'] ?? '' };
  if (fields.resources) {
    out.NodeResources = nodeResources(n);
    out.ReservedResources = reservedResources(n);
  }
  if (link.leaderConnected !== undefined) out.BerthLeaderConnected = link.leaderConnected;
  return out;
}

/** A draining node is ineligible whatever was stored (Nomad sets both together). */
function eligibilityOf(n: Node): Api.Node['SchedulingEligibility'] {
  return n.drainStrategy ? 'ineligible' : (n.schedulingEligibility ?? 'eligible');
}

function nodeEventOf(e: NodeHistoryEvent): Api.NodeEvent {
  return { Message: e.message, Subsystem: e.subsystem, Details: e.details ? { ...e.details } : null, Timestamp: goTime(e.at), CreateIndex: e.createIndex };
}

function drainMetadataOf(d: DrainMetadata): Api.DrainMetadata {
  const out: Api.DrainMetadata = { StartedAt: goTime(d.startedAt), UpdatedAt: goTime(d.updatedAt), Status: d.status, AccessorID: '', Meta: d.meta ? { ...d.meta } : null };
  if (d.message) out.BerthMessage = d.message;
  return out;
}

function driversOf(n: Node): Record<string, Api.DriverInfo> {
  const out: Record<string, Api.DriverInfo> = {};
  for (const [name, d] of Object.entries(n.drivers)) {
    const attributes: Record<string, string> = {};
    for (const [k, v] of Object.entries(d.attributes ?? {})) attributes[k.startsWith('driver.') ? k : `driver.${name}.${k}`] = v;
    const info: Api.DriverInfo = {
      Attributes: attributes,
      Detected: d.detected,
      Healthy: d.healthy,
      HealthDescription: d.healthReason,
      // Drivers are fingerprinted with every heartbeat that carries a fingerprint.
      UpdateTime: goTime(n.lastHeartbeat),
    };
    if (d.external) info.BerthExternal = true;
    if (d.networkModes.length) info.BerthNetworkModes = [...d.networkModes];
    if (d.cgroups) info.BerthCgroups = d.cgroups;
    out[name] = info;
  }
  return out;
}

function hostNetworksOf(n: Node): Record<string, Api.HostNetworkInfo> {
  const out: Record<string, Api.HostNetworkInfo> = {};
  for (const [name, h] of Object.entries(n.hostNetworks ?? {})) {
    out[name] = { Name: name, CIDR: h.cidr ?? '', Interface: h.interface ?? '', ReservedPorts: portRanges(h.reservedPorts ?? []), ...(h.address ? { BerthAddress: h.address } : {}) };
  }
  return out;
}

function csiInfos(reports: Record<string, CsiPluginReport>): Record<string, Api.CSIInfo> {
  const out: Record<string, Api.CSIInfo> = {};
  for (const [id, r] of Object.entries(reports)) out[id] = csiInfoOf(r);
  return out;
}

/** One plugin instance's report as Nomad's CSIInfo: its capabilities from the fingerprint, none before the first. */
export function csiInfoOf(r: CsiPluginReport): Api.CSIInfo {
  const fp = r.fingerprint;
  const services = fp?.capabilities.services ?? [];
  const info: Api.CSIInfo = {
    PluginID: r.pluginId,
    AllocID: r.allocId,
    Healthy: r.healthy,
    HealthDescription: r.healthReason,
    UpdateTime: goTime(r.updatedAt),
    RequiresControllerPlugin: services.includes('CONTROLLER_SERVICE'),
    RequiresTopologies: services.includes('VOLUME_ACCESSIBILITY_CONSTRAINTS'),
    Provider: r.provider,
    ProviderVersion: r.version,
  };
  if (r.type === 'csi-controller') {
    const caps = new Set<string>(fp?.controller?.capabilities ?? []);
    info.ControllerInfo = {
      SupportsCreateDelete: caps.has('CREATE_DELETE_VOLUME'),
      SupportsAttachDetach: caps.has('PUBLISH_UNPUBLISH_VOLUME'),
      SupportsListVolumes: caps.has('LIST_VOLUMES'),
      SupportsGetCapacity: caps.has('GET_CAPACITY'),
      SupportsCreateDeleteSnapshot: caps.has('CREATE_DELETE_SNAPSHOT'),
      SupportsListSnapshots: caps.has('LIST_SNAPSHOTS'),
      SupportsClone: caps.has('CLONE_VOLUME'),
      SupportsReadOnlyAttach: caps.has('PUBLISH_READONLY'),
      SupportsExpand: caps.has('EXPAND_VOLUME'),
      SupportsListVolumesAttachedNodes: caps.has('LIST_VOLUMES_PUBLISHED_NODES'),
      SupportsCondition: caps.has('VOLUME_CONDITION'),
      SupportsGet: caps.has('GET_VOLUME'),
    };
  } else {
    const caps = new Set<string>(fp?.node?.capabilities ?? []);
    const topology = fp?.node?.info.accessibleTopology;
    info.NodeInfo = {
      ID: fp?.node?.info.nodeId ?? '',
      MaxVolumes: fp?.node?.info.maxVolumesPerNode ?? 0,
      AccessibleTopology: topology ? { Segments: { ...topology } } : null,
      RequiresNodeStageVolume: caps.has('STAGE_UNSTAGE_VOLUME'),
      SupportsStats: caps.has('GET_VOLUME_STATS'),
      SupportsExpand: caps.has('EXPAND_VOLUME'),
      SupportsCondition: caps.has('VOLUME_CONDITION'),
    };
  }
  return info;
}

/** The node's own network (its address, as Nomad's host network fingerprint reports it), then each bridge / cni/<name> mode it can set up (Nomad's bridge and cni fingerprints). */
function networksOf(n: Node): Api.NetworkResource[] {
  const ip = n.networkAddress;
  const blank = { Device: '', CIDR: '', IP: '', DNS: null, ReservedPorts: null, DynamicPorts: null, Hostname: '', MBits: 0, CNI: null };
  const modes = (n.networkModes ?? []).filter((m) => m === 'bridge' || m.startsWith('cni/')).map((m) => ({ ...blank, Mode: m }));
  if (!ip) return modes;
  return [{ ...blank, Mode: 'host', CIDR: `${ip}/${ip.includes(':') ? 128 : 32}`, IP: ip }, ...modes];
}

function nodeResources(n: Node): Api.NodeResources {
  const cores = Number(n.attributes['cpu.numcores'] ?? 0);
  return {
    Cpu: { CpuShares: n.resources.cpuMhz, TotalCpuCores: Number.isInteger(cores) && cores > 0 ? cores : 0, ReservableCpuCores: [] },
    Memory: { MemoryMB: n.resources.memoryMb },
    Disk: { DiskMB: 0 },
    Networks: networksOf(n),
    Devices: [],
    MinDynamicPort: n.minDynamicPort ?? DYNAMIC_PORTS.min,
    MaxDynamicPort: n.maxDynamicPort ?? DYNAMIC_PORTS.max,
  };
}

function reservedResources(n: Node): Api.NodeReservedResources {
  return { Cpu: { CpuShares: 0 }, Memory: { MemoryMB: 0 }, Disk: { DiskMB: 0 }, Networks: { ReservedHostPorts: portRanges(n.reservedPorts ?? []) } };
}

/** Node.Resources (deprecated by Nomad, read by Nomad 1.1's CLI): the node's totals in the old shape. */
function legacyResources(n: Node): Api.Resources {
  return {
    CPU: n.resources.cpuMhz,
    Cores: 0,
    MemoryMB: n.resources.memoryMb,
    MemoryMaxMB: 0,
    DiskMB: 0,
    Networks: networksOf(n),
    Devices: [],
    NUMA: null,
    SecretsMB: 0,
    IOPS: 0,
  };
}

/** Node.Reserved: Berth reserves no CPU, memory or disk. */
function legacyReserved(): Api.Resources {
  return { CPU: 0, Cores: 0, MemoryMB: 0, MemoryMaxMB: 0, DiskMB: 0, Networks: [], Devices: [], NUMA: null, SecretsMB: 0, IOPS: 0 };
}

/** Ports as Nomad writes a port list: `22,80,8000-8010`. Pure. */
export function portRanges(ports: readonly number[]): string {
  const sorted = [...new Set(ports)].sort((a, b) => a - b);
  const parts: string[] = [];
  for (let i = 0; i < sorted.length; ) {
    let j = i;
    while (j + 1 < sorted.length && sorted[j + 1] === (sorted[j] as number) + 1) j++;
    parts.push(j === i ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return parts.join(',');
}

/** api.HostVolumeInfo by name: the node's static and dynamic host volumes (ID '' for a static one). */
function hostVolumesOf(n: Node): Record<string, { Path: string; ReadOnly: boolean; ID: string }> {
  return Object.fromEntries(Object.entries(n.hostVolumes ?? {}).map(([name, v]) => [name, { Path: v.path, ReadOnly: v.readOnly, ID: v.id }]));
}
