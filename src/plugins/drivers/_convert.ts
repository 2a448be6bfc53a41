// Protobuf <-> Berth's driver types, both ways (the client converts requests
// to the wire and answers back; the server the other way round). Protobuf
// types stay in this file and the two that call it.
import * as pb from '../../gen/nomad/plugins/drivers/proto/driver.js';
import { type Attribute as PbAttribute } from '../../gen/nomad/plugins/shared/structs/proto/attribute.js';
import { type Duration } from '../../gen/google/protobuf/duration.js';
import type * as t from './driver-plugin.js';

const n = (v: bigint | number | undefined): number => Number(v ?? 0);
const big = (v: number | undefined): bigint => BigInt(Math.trunc(v ?? 0));

export function durationToProto(ms: number): Duration {
  const whole = Math.max(0, Math.trunc(ms));
  return { seconds: BigInt(Math.floor(whole / 1000)), nanos: (whole % 1000) * 1_000_000 };
}
export function durationFromProto(d: Duration | undefined): number {
  return d ? Number(d.seconds) * 1000 + Math.floor(d.nanos / 1_000_000) : 0;
}

// ---- enums ---------------------------------------------------------------

const HEALTH: Record<t.HealthState, pb.FingerprintResponse_HealthState> = {
  undetected: pb.FingerprintResponse_HealthState.UNDETECTED,
  unhealthy: pb.FingerprintResponse_HealthState.UNHEALTHY,
  healthy: pb.FingerprintResponse_HealthState.HEALTHY,
};
const FS: Record<t.FsIsolation, pb.DriverCapabilities_FSIsolation> = {
  none: pb.DriverCapabilities_FSIsolation.NONE,
  chroot: pb.DriverCapabilities_FSIsolation.CHROOT,
  image: pb.DriverCapabilities_FSIsolation.IMAGE,
  unveil: pb.DriverCapabilities_FSIsolation.UNVEIL,
};
const NET: Record<t.NetIsolationMode, pb.NetworkIsolationSpec_NetworkIsolationMode> = {
  host: pb.NetworkIsolationSpec_NetworkIsolationMode.HOST,
  group: pb.NetworkIsolationSpec_NetworkIsolationMode.GROUP,
  task: pb.NetworkIsolationSpec_NetworkIsolationMode.TASK,
  none: pb.NetworkIsolationSpec_NetworkIsolationMode.NONE,
};
const STATE: Record<t.TaskState, pb.TaskState> = { unknown: pb.TaskState.UNKNOWN, running: pb.TaskState.RUNNING, exited: pb.TaskState.EXITED };
const CPU_FIELDS: t.CpuField[] = ['system_mode', 'user_mode', 'total_ticks', 'throttled_periods', 'throttled_time', 'percent'];
const MEM_FIELDS: t.MemoryField[] = ['rss', 'cache', 'max_usage', 'kernel_usage', 'kernel_max_usage', 'usage', 'swap'];

function reverse<K extends string, V extends number>(m: Record<K, V>, v: V, fallback: K): K {
  for (const [k, val] of Object.entries(m) as [K, V][]) if (val === v) return k;
  return fallback;
}

// ---- attributes, fingerprints, capabilities ------------------------------

export function attributeToProto(a: t.Attribute): PbAttribute {
  return { floatVal: a.float, intVal: a.int !== undefined ? big(a.int) : undefined, stringVal: a.string, boolVal: a.bool, unit: a.unit ?? '' };
}
export function attributeFromProto(a: PbAttribute): t.Attribute {
  const unit = a.unit ? { unit: a.unit } : {};
  if (a.stringVal !== undefined) return { string: a.stringVal, ...unit };
  if (a.intVal !== undefined) return { int: Number(a.intVal), ...unit };
  if (a.floatVal !== undefined) return { float: a.floatVal, ...unit };
  if (a.boolVal !== undefined) return { bool: a.boolVal, ...unit };
  return { ...unit };
}

export function fingerprintToProto(f: t.Fingerprint): pb.FingerprintResponse {
  return {
    attributes: Object.fromEntries(Object.entries(f.attributes).map(([k, v]) => [k, attributeToProto(v)])),
    health: HEALTH[f.health],
    healthDescription: f.healthDescription,
    err: f.err ?? '',
  };
}
export function fingerprintFromProto(p: pb.FingerprintResponse): t.Fingerprint {
  return {
    attributes: Object.fromEntries(Object.entries(p.attributes).map(([k, v]) => [k, attributeFromProto(v)])),
    health: reverse(HEALTH, p.health, 'undetected'),
    healthDescription: p.healthDescription,
    ...(p.err ? { err: p.err } : {}),
  };
}

export function capabilitiesToProto(c: t.Capabilities): pb.DriverCapabilities {
  return {
    sendSignals: c.sendSignals,
    exec: c.exec,
    fsIsolation: FS[c.fsIsolation],
    networkIsolationModes: c.netIsolationModes.map((m) => NET[m]),
    mustCreateNetwork: c.mustInitiateNetwork,
    mountConfigs: c.mountConfigs === 'none' ? pb.DriverCapabilities_MountConfigs.NO_MOUNTS : pb.DriverCapabilities_MountConfigs.ANY_MOUNTS,
    disableLogCollection: c.disableLogCollection,
    dynamicWorkloadUsers: c.dynamicWorkloadUsers,
  };
}
export function capabilitiesFromProto(p: pb.DriverCapabilities | undefined): t.Capabilities {
  return {
    sendSignals: p?.sendSignals ?? false,
    exec: p?.exec ?? false,
    fsIsolation: p ? reverse(FS, p.fsIsolation, 'none') : 'none',
    netIsolationModes: (p?.networkIsolationModes ?? []).map((m) => reverse(NET, m, 'host')),
    mustInitiateNetwork: p?.mustCreateNetwork ?? false,
    mountConfigs: p?.mountConfigs === pb.DriverCapabilities_MountConfigs.NO_MOUNTS ? 'none' : 'all',
    disableLogCollection: p?.disableLogCollection ?? false,
    dynamicWorkloadUsers: p?.dynamicWorkloadUsers ?? false,
  };
}

// ---- networks --------------------------------------------------------------

export function netSpecToProto(s: t.NetworkIsolationSpec | undefined): pb.NetworkIsolationSpec | undefined {
  if (!s) return undefined;
  return { mode: NET[s.mode], path: s.path, labels: { ...s.labels }, hostsConfig: s.hostsConfig ? { ...s.hostsConfig } : undefined };
}
export function netSpecFromProto(p: pb.NetworkIsolationSpec | undefined): t.NetworkIsolationSpec | undefined {
  if (!p) return undefined;
  return { mode: reverse(NET, p.mode, 'host'), path: p.path, labels: { ...p.labels }, ...(p.hostsConfig ? { hostsConfig: { hostname: p.hostsConfig.hostname, address: p.hostsConfig.address } } : {}) };
}
export function driverNetworkToProto(d: t.DriverNetwork | undefined): pb.NetworkOverride | undefined {
  return d ? { portMap: { ...d.portMap }, addr: d.ip, autoAdvertise: d.autoAdvertise } : undefined;
}
export function driverNetworkFromProto(p: pb.NetworkOverride | undefined): t.DriverNetwork | undefined {
  return p ? { portMap: { ...p.portMap }, ip: p.addr, autoAdvertise: p.autoAdvertise } : undefined;
}

// ---- task config and handle ------------------------------------------------

export function taskConfigToProto(c: t.TaskConfig): pb.TaskConfig {
  const r = c.resources;
  return {
    id: c.id,
    name: c.name,
    msgpackDriverConfig: Buffer.from(c.msgpackDriverConfig),
    env: { ...c.env },
    deviceEnv: { ...c.deviceEnv },
    resources: r
      ? {
          allocatedResources: r.allocated
            ? {
                cpu: { cpuShares: big(r.allocated.cpuShares) },
                memory: { memoryMb: big(r.allocated.memoryMb), memoryMaxMb: big(r.allocated.memoryMaxMb) },
                networks: r.allocated.networks.map((nw) => ({ ...nw, reservedPorts: nw.reservedPorts.map((p) => ({ ...p })), dynamicPorts: nw.dynamicPorts.map((p) => ({ ...p })) })),
              }
            : undefined,
          linuxResources: r.linux
            ? {
                cpuPeriod: big(r.linux.cpuPeriod),
                cpuQuota: big(r.linux.cpuQuota),
                cpuShares: big(r.linux.cpuShares),
                memoryLimitBytes: big(r.linux.memoryLimitBytes),
                oomScoreAdj: big(r.linux.oomScoreAdj),
                cpusetCpus: r.linux.cpusetCpus,
                cpusetCgroup: r.linux.cpusetCgroupPath,
                PercentTicks: r.linux.percentTicks,
              }
            : undefined,
          ports: r.ports.map((p) => ({ ...p })),
        }
      : undefined,
    mounts: c.mounts.map((m) => ({ ...m })),
    devices: c.devices.map((d) => ({ taskPath: d.taskPath, hostPath: d.hostPath, cgroupPermissions: d.permissions })),
    user: c.user,
    allocDir: c.allocDir,
    stdoutPath: c.stdoutPath,
    stderrPath: c.stderrPath,
    taskGroupName: c.taskGroupName,
    jobName: c.jobName,
    allocId: c.allocId,
    networkIsolationSpec: netSpecToProto(c.networkIsolation),
    dns: c.dns ? { servers: [...c.dns.servers], searches: [...c.dns.searches], options: [...c.dns.options] } : undefined,
    jobId: c.jobId,
    namespace: c.namespace,
    nodeName: c.nodeName,
    nodeId: c.nodeId,
    parentJobId: c.parentJobId,
  };
}

export function taskConfigFromProto(p: pb.TaskConfig | undefined): t.TaskConfig {
  const c = p ?? pb.TaskConfig.fromPartial({});
  const r = c.resources;
  const a = r?.allocatedResources;
  const l = r?.linuxResources;
  return {
    id: c.id,
    name: c.name,
    msgpackDriverConfig: new Uint8Array(c.msgpackDriverConfig),
    env: { ...c.env },
    deviceEnv: { ...c.deviceEnv },
    ...(r
      ? {
          resources: {
            ...(a
              ? {
                  allocated: {
                    cpuShares: n(a.cpu?.cpuShares),
                    memoryMb: n(a.memory?.memoryMb),
                    memoryMaxMb: n(a.memory?.memoryMaxMb),
                    networks: a.networks.map((nw) => ({ device: nw.device, cidr: nw.cidr, ip: nw.ip, mbits: nw.mbits, reservedPorts: nw.reservedPorts.map((x) => ({ label: x.label, value: x.value })), dynamicPorts: nw.dynamicPorts.map((x) => ({ label: x.label, value: x.value })) })),
                  },
                }
              : {}),
            ...(l
              ? {
                  linux: {
                    cpuPeriod: n(l.cpuPeriod),
                    cpuQuota: n(l.cpuQuota),
                    cpuShares: n(l.cpuShares),
                    memoryLimitBytes: n(l.memoryLimitBytes),
                    oomScoreAdj: n(l.oomScoreAdj),
                    cpusetCpus: l.cpusetCpus,
                    cpusetCgroupPath: l.cpusetCgroup,
                    percentTicks: l.PercentTicks,
                  },
                }
              : {}),
            ports: r.ports.map((x) => ({ label: x.label, value: x.value, to: x.to, hostIp: x.hostIp })),
          },
        }
      : {}),
    devices: c.devices.map((d) => ({ taskPath: d.taskPath, hostPath: d.hostPath, permissions: d.cgroupPermissions })),
    mounts: c.mounts.map((m) => ({ taskPath: m.taskPath, hostPath: m.hostPath, readonly: m.readonly, propagationMode: m.propagationMode, selinuxLabel: m.selinuxLabel, requestName: m.requestName })),
    user: c.user,
    allocDir: c.allocDir,
    stdoutPath: c.stdoutPath,
    stderrPath: c.stderrPath,
    taskGroupName: c.taskGroupName,
    jobName: c.jobName,
    jobId: c.jobId,
    parentJobId: c.parentJobId,
    allocId: c.allocId,
    namespace: c.namespace,
    nodeName: c.nodeName,
    nodeId: c.nodeId,
    ...(c.networkIsolationSpec ? { networkIsolation: netSpecFromProto(c.networkIsolationSpec) } : {}),
    ...(c.dns ? { dns: { servers: [...c.dns.servers], searches: [...c.dns.searches], options: [...c.dns.options] } } : {}),
  };
}

export function taskHandleToProto(h: t.TaskHandle): pb.TaskHandle {
  return { version: h.version, config: taskConfigToProto(h.config), state: STATE[h.state], driverState: Buffer.from(h.driverState) };
}
export function taskHandleFromProto(p: pb.TaskHandle | undefined): t.TaskHandle {
  return { version: p?.version ?? 0, config: taskConfigFromProto(p?.config), state: p ? reverse(STATE, p.state, 'unknown') : 'unknown', driverState: new Uint8Array(p?.driverState ?? []) };
}

// ---- results, status, stats, events ----------------------------------------

export function exitToProto(e: t.ExitResult): pb.ExitResult {
  return { exitCode: e.exitCode, signal: e.signal, oomKilled: e.oomKilled };
}
export function exitFromProto(p: pb.ExitResult | undefined, err?: string): t.ExitResult {
  return { exitCode: p?.exitCode ?? 0, signal: p?.signal ?? 0, oomKilled: p?.oomKilled ?? false, ...(err ? { err } : {}) };
}

export function taskStatusToProto(s: t.TaskStatus): pb.InspectTaskResponse {
  return {
    task: { id: s.id, name: s.name, state: STATE[s.state], startedAt: s.startedAt, completedAt: s.completedAt, result: s.exitResult ? exitToProto(s.exitResult) : undefined },
    driver: { attributes: { ...s.driverAttributes } },
    networkOverride: driverNetworkToProto(s.networkOverride),
  };
}
export function taskStatusFromProto(p: pb.InspectTaskResponse): t.TaskStatus {
  const task = p.task;
  return {
    id: task?.id ?? '',
    name: task?.name ?? '',
    state: task ? reverse(STATE, task.state, 'unknown') : 'unknown',
    ...(task?.startedAt && task.startedAt.getTime() > 0 ? { startedAt: task.startedAt } : {}),
    ...(task?.completedAt && task.completedAt.getTime() > 0 ? { completedAt: task.completedAt } : {}),
    ...(task?.result ? { exitResult: exitFromProto(task.result) } : {}),
    driverAttributes: { ...(p.driver?.attributes ?? {}) },
    ...(p.networkOverride ? { networkOverride: driverNetworkFromProto(p.networkOverride) } : {}),
  };
}

function usageToProto(u: t.ResourceUsage): pb.TaskResourceUsage {
  return {
    cpu: u.cpu
      ? {
          systemMode: u.cpu.systemMode,
          userMode: u.cpu.userMode,
          totalTicks: u.cpu.totalTicks,
          throttledPeriods: big(u.cpu.throttledPeriods),
          throttledTime: big(u.cpu.throttledTime),
          percent: u.cpu.percent,
          measuredFields: u.cpu.measured.map((f) => CPU_FIELDS.indexOf(f) as pb.CPUUsage_Fields),
        }
      : undefined,
    memory: u.memory
      ? {
          rss: big(u.memory.rss),
          cache: big(u.memory.cache),
          maxUsage: big(u.memory.maxUsage),
          kernelUsage: big(u.memory.kernelUsage),
          kernelMaxUsage: big(u.memory.kernelMaxUsage),
          usage: big(u.memory.usage),
          swap: big(u.memory.swap),
          measuredFields: u.memory.measured.map((f) => MEM_FIELDS.indexOf(f) as pb.MemoryUsage_Fields),
        }
      : undefined,
  };
}
function usageFromProto(p: pb.TaskResourceUsage | undefined): t.ResourceUsage {
  const c = p?.cpu;
  const m = p?.memory;
  return {
    ...(c
      ? {
          cpu: {
            systemMode: c.systemMode,
            userMode: c.userMode,
            totalTicks: c.totalTicks,
            throttledPeriods: n(c.throttledPeriods),
            throttledTime: n(c.throttledTime),
            percent: c.percent,
            measured: c.measuredFields.map((f) => CPU_FIELDS[f]).filter((f): f is t.CpuField => f !== undefined),
          },
        }
      : {}),
    ...(m
      ? {
          memory: {
            rss: n(m.rss),
            cache: n(m.cache),
            maxUsage: n(m.maxUsage),
            kernelUsage: n(m.kernelUsage),
            kernelMaxUsage: n(m.kernelMaxUsage),
            usage: n(m.usage),
            swap: n(m.swap),
            measured: m.measuredFields.map((f) => MEM_FIELDS[f]).filter((f): f is t.MemoryField => f !== undefined),
          },
        }
      : {}),
  };
}

export function statsToProto(s: t.TaskResourceUsage): pb.TaskStatsResponse {
  return {
    stats: {
      id: s.taskId,
      timestamp: s.timestamp,
      aggResourceUsage: usageToProto(s.resourceUsage),
      resourceUsageByPid: Object.fromEntries(Object.entries(s.pids).map(([k, v]) => [k, usageToProto(v)])),
    },
  };
}
export function statsFromProto(p: pb.TaskStatsResponse): t.TaskResourceUsage {
  const s = p.stats;
  return {
    taskId: s?.id ?? '',
    timestamp: s?.timestamp ?? new Date(0),
    resourceUsage: usageFromProto(s?.aggResourceUsage),
    pids: Object.fromEntries(Object.entries(s?.resourceUsageByPid ?? {}).map(([k, v]) => [k, usageFromProto(v)])),
  };
}

export function eventToProto(e: t.TaskEvent): pb.DriverTaskEvent {
  return { taskId: e.taskId, allocId: e.allocId, taskName: e.taskName, timestamp: e.timestamp, message: e.message, annotations: { ...e.annotations } };
}
export function eventFromProto(p: pb.DriverTaskEvent): t.TaskEvent {
  return { taskId: p.taskId, allocId: p.allocId, taskName: p.taskName, timestamp: p.timestamp ?? new Date(0), message: p.message, annotations: { ...p.annotations } };
}
