// Berth's task driver shapes <-> Nomad's driver plugin protocol shapes, for
// ExternalTaskDriver: capabilities, the TaskConfig a task is started with, the
// task handle as persisted, exit results, stats samples and exec streams.
// Translations (pluginTaskConfig also readies the log FIFOs and task dirs
// StartTask expects); the calls to the plugin are external-task-driver.ts's.

import { mkdirSync } from 'node:fs';
import { constants as osConstants, cpus } from 'node:os';
import {
  DriverError,
  GROUP_NETWORK_MODES,
  type AnyTaskHandle,
  type DriverCapabilities,
  type ExitResult,
  type ForeignTaskHandle,
  type TaskConfig,
  type TaskResourceUsage,
} from '../drivers/index.js';
import { cpuShares, type TaskCgroup } from '../cgroups/index.js';
import type { LogMonitor } from '../logmon/index.js';
import type {
  Capabilities as PluginCapabilities,
  DriverPlugin,
  ExitResult as PluginExitResult,
  NetworkIsolationSpec,
  TaskConfig as PluginTaskConfig,
  TaskHandle as PluginTaskHandle,
} from '../../plugins/index.js';

/** One sample of a plugin's TaskStats stream. */
type PluginTaskResourceUsage = ReturnType<DriverPlugin['taskStats']> extends AsyncIterable<infer U> ? U : never;

/** What pluginTaskConfig needs of the driver beside the task's config. */
export interface PluginTaskConfigContext {
  /** The node's log monitor, which holds the task's log FIFOs. */
  logmon: LogMonitor;
  /** The plugin's own capabilities. */
  pluginCapabilities: PluginCapabilities;
  /** Berth's capabilities of the driver, as they are when read. */
  capabilities: () => DriverCapabilities;
  /** A task's `config {}` as go-cty msgpack against the plugin's TaskConfigSchema; throws on a config it refuses. */
  encodeTaskConfig: (body: Record<string, unknown>) => Uint8Array;
  /** The node's name. */
  nodeName: string;
  /** PATH for tasks that set none. */
  defaultPath?: string;
  /** The spec CreateNetwork gave the allocation's namespace, if this driver made it. */
  knownNetwork: () => NetworkIsolationSpec | undefined;
}

/** Persisted form of a plugin's task handle (driverState base64). */
export interface StoredHandle extends ForeignTaskHandle {
  plugin: { version: number; state: string; driverState: string; config: Omit<PluginTaskConfig, 'msgpackDriverConfig'> & { msgpackDriverConfig: string } };
}

/**
 * The TaskConfig fields of the allocation's network the task runner fills
 * for every driver (RunnerTaskConfig): the group's mode, the allocation's
 * ports and what CreateNetwork labelled the namespace with.
 */
export type NetworkedTaskConfig = TaskConfig & {
  networkMode?: string;
  ports?: Array<{ label: string; value: number; to: number; hostIp: string }>;
  networkLabels?: Record<string, string>;
  networkAddress?: string;
};

/** The label Nomad's docker driver puts on the namespace of its pause container: the container's ID. */
const DOCKER_SANDBOX_LABEL = 'docker_sandbox_container_id';

/**
 * Nomad's NetworkIsolationSpec of the group's namespace for a task. As
 * Nomad's network hook, a namespace a docker driver made (its pause
 * container's, by the label) gets HostsConfig once the agent attached it:
 * the pause container's hostname (its short ID) and the allocation's
 * address, which docker writes into the task's /etc/hosts.
 */
function isolationSpec(cfg: NetworkedTaskConfig, known: NetworkIsolationSpec | undefined): NetworkIsolationSpec | undefined {
  if (!cfg.networkNamespacePath) return undefined;
  const labels = { ...(cfg.networkLabels ?? known?.labels) };
  const sandbox = labels[DOCKER_SANDBOX_LABEL];
  return {
    mode: 'group',
    path: cfg.networkNamespacePath,
    labels,
    ...(sandbox && cfg.networkAddress ? { hostsConfig: { hostname: sandbox.slice(0, 12), address: cfg.networkAddress } } : {}),
  };
}

const SIGNAL_NAMES = new Map(Object.entries(osConstants.signals).map(([name, n]) => [n as number, name]));

/** Berth's capabilities from a plugin's (Nomad's `group` isolation is a namespace made for the group: Berth's none, bridge and cni networks). */
export function berthCapabilities(c: PluginCapabilities): DriverCapabilities {
  const modes = new Set<string>();
  for (const m of c.netIsolationModes) {
    if (m === 'host') modes.add('host');
    if (m === 'none') modes.add('none');
    if (m === 'group') for (const g of GROUP_NETWORK_MODES) modes.add(g);
  }
  if (c.netIsolationModes.length === 0) modes.add('host');
  return {
    sendSignals: c.sendSignals,
    exec: c.exec,
    fsIsolation: c.fsIsolation === 'chroot' || c.fsIsolation === 'image' ? c.fsIsolation : 'none',
    networkModes: [...modes],
    mustInitiateNetwork: c.mustInitiateNetwork,
    mountConfigs: c.mountConfigs === 'all' ? 'any' : 'none',
  };
}

export function toExit(r: PluginExitResult): ExitResult {
  const signal = r.signal ? (SIGNAL_NAMES.get(r.signal) ?? `signal ${r.signal}`) : null;
  const message = r.err ? r.err : signal ? `killed by ${signal}` : `exited with code ${r.exitCode}`;
  return { exitCode: r.exitCode, signal, oomKilled: r.oomKilled, message };
}

const b64 = (b: Uint8Array): string => Buffer.from(b).toString('base64');

export function encodeHandle(driver: string, h: PluginTaskHandle): StoredHandle {
  return {
    version: 2,
    driver,
    taskId: h.config.id,
    plugin: { version: h.version, state: h.state, driverState: b64(h.driverState), config: { ...h.config, msgpackDriverConfig: b64(h.config.msgpackDriverConfig) } },
  };
}

export function decodeHandle(driver: string, h: AnyTaskHandle): PluginTaskHandle {
  const stored = h as Partial<StoredHandle>;
  if (stored.version !== 2 || stored.driver !== driver || !stored.plugin) {
    throw new DriverError('DRIVER_TASK_NOT_RECOVERABLE', `task ${h.taskId}: the handle is not a handle of the ${driver} driver plugin`);
  }
  const p = stored.plugin;
  return {
    version: p.version,
    state: p.state as PluginTaskHandle['state'],
    driverState: Buffer.from(p.driverState, 'base64'),
    config: { ...p.config, msgpackDriverConfig: Buffer.from(p.config.msgpackDriverConfig, 'base64') },
  };
}

/**
 * Nomad's TaskConfig for a Berth task, every field as a Nomad client fills
 * it: the log FIFOs held by the host's log monitor before StartTask (as the
 * protocol promises), the task's cgroup, the node's share of CPU, the
 * allocation's ports (Resources.Ports, what docker's `ports = [...]`
 * publishes) and the group's namespace with the labels CreateNetwork gave
 * it (docker joins its pause container by them). An image driver's task
 * gets no PATH of ours: the image's own applies.
 */
export async function pluginTaskConfig(cfg: NetworkedTaskConfig, cgroup: TaskCgroup | undefined, ctx: PluginTaskConfigContext): Promise<PluginTaskConfig> {
  let stdoutPath = '';
  let stderrPath = '';
  if (!cfg.logs.disabled && !ctx.pluginCapabilities.disableLogCollection) {
    ({ stdoutPath, stderrPath } = await ctx.logmon.add({ dir: cfg.logs.dir, taskName: cfg.taskName, maxFiles: cfg.logs.maxFiles, maxFileSizeMb: cfg.logs.maxFileSizeMb }));
  }
  mkdirSync(cfg.taskDir, { recursive: true });
  mkdirSync(cfg.secretsDir, { recursive: true });
  const driverConfig = cfg.driverConfig ?? { command: cfg.command, args: cfg.args };
  const msgpackDriverConfig = ctx.encodeTaskConfig(driverConfig);
  const cpuPeriod = 100_000;
  const memoryLimitBytes = (cfg.resources.memoryMaxMb ?? cfg.resources.memoryMb) * 1024 * 1024;
  const nodeMhz = cpus().reduce((n, c) => n + (c.speed || 1000), 0);
  const cgroupPath = cgroup ? (cgroup.dirs.find((d) => d.includes('/cpuset/')) ?? cgroup.dirs[0] ?? '') : '';
  return {
    id: cfg.id,
    jobName: cfg.jobName ?? cfg.jobId ?? '',
    jobId: cfg.jobId ?? '',
    taskGroupName: cfg.groupName ?? '',
    name: cfg.taskName,
    parentJobId: cfg.parentJobId ?? '',
    namespace: cfg.namespace ?? 'default',
    nodeName: ctx.nodeName,
    nodeId: cfg.nodeId ?? '',
    env: cfg.env['PATH'] === undefined && ctx.defaultPath && ctx.capabilities().fsIsolation !== 'image' ? { ...cfg.env, PATH: ctx.defaultPath } : cfg.env,
    deviceEnv: cfg.deviceEnv ?? {},
    resources: {
      allocated: { cpuShares: cfg.resources.cpuMhz, memoryMb: cfg.resources.memoryMb, memoryMaxMb: cfg.resources.memoryMaxMb ?? 0, networks: [] },
      linux: {
        cpuPeriod: cfg.resources.cores ? cpuPeriod : 0,
        cpuQuota: cfg.resources.cores ? Math.round(cfg.resources.cores * cpuPeriod) : 0,
        cpuShares: cpuShares(cfg.resources.cpuMhz),
        memoryLimitBytes,
        oomScoreAdj: 0,
        cpusetCpus: '',
        cpusetCgroupPath: cgroupPath,
        percentTicks: nodeMhz > 0 ? Math.min(1, cfg.resources.cpuMhz / nodeMhz) : 0,
      },
      ports: (cfg.ports ?? []).map((p) => ({ label: p.label, value: p.value, to: p.to, hostIp: p.hostIp })),
    },
    devices: (cfg.devices ?? []).map((d) => ({ taskPath: d.taskPath, hostPath: d.hostPath, permissions: d.permissions })),
    mounts: cfg.mounts.map((m) => ({ taskPath: m.destination, hostPath: m.source, readonly: m.readOnly, propagationMode: m.propagation, selinuxLabel: '', requestName: m.volume ?? '' })),
    user: cfg.user ?? '',
    allocDir: cfg.allocDir,
    msgpackDriverConfig,
    stdoutPath,
    stderrPath,
    allocId: cfg.allocId,
    ...(cfg.networkNamespacePath ? { networkIsolation: isolationSpec(cfg, ctx.knownNetwork()) } : {}),
  };
}

/** One sample of a plugin's TaskStats stream as Berth's TaskResourceUsage. */
export function taskResourceUsage(u: PluginTaskResourceUsage): TaskResourceUsage {
    const cpu = u.resourceUsage.cpu;
    const mem = u.resourceUsage.memory;
    return {
      timestamp: u.timestamp.getTime(),
      source: 'cgroup',
      cpu: {
        userMs: cpu?.userMode ?? 0,
        systemMs: cpu?.systemMode ?? 0,
        totalMs: cpu?.totalTicks ?? 0,
        percent: cpu?.percent ?? 0,
        throttledPeriods: cpu?.throttledPeriods ?? 0,
        throttledMs: cpu?.throttledTime ?? 0,
      },
      memory: { rssBytes: mem?.rss ?? 0, cacheBytes: mem?.cache ?? 0, usageBytes: mem?.usage ?? 0, maxUsageBytes: mem?.maxUsage ?? 0 },
      pids: Object.keys(u.pids).map(Number).filter((n) => Number.isInteger(n)),
    };
}

export async function* bytes(src: AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>): AsyncIterable<Uint8Array> {
  for await (const c of src) yield typeof c === 'string' ? Buffer.from(c) : c;
}

export async function* sizes(
  first: { cols: number; rows: number } | undefined,
  rest: AsyncIterable<{ cols: number; rows: number }> | Iterable<{ cols: number; rows: number }>,
): AsyncIterable<{ width: number; height: number }> {
  if (first) yield { width: first.cols, height: first.rows };
  for await (const s of rest) yield { width: s.cols, height: s.rows };
}
