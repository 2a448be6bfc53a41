// The agent's configuration file (HCL as Nomad's agent config, or JSON):
// data dir, bind address and port, API tokens, the client's node name,
// server address, host volumes and driver options, CSI defaults, logging.
// Parsed like job files (src/spec-files), so every problem names
// file:line:col and the field; never quotes a token. What the file may say
// (its HCL body and zod schema) is agent-config-schema.ts.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { z } from 'zod';
import { BerthError } from '../lib/index.js';
import type { SpecProblem } from '../spec-files/index.js';
import { DEFAULT_ARTIFACT_LIMITS, parseBytes, type ArtifactLimits } from '../client/index.js';
import { durationMs, formatPath } from '../structs/index.js';
import { CONFIG_BODY, configSchema, DRIVER_MODES, type LOG_LEVELS, type RawConfig } from './agent-config-schema.js';

export { ETCD_URL } from './agent-config-schema.js';

/** The agent's configuration, checked; relative paths resolved against the file's directory. */
export interface AgentConfig {
  dataDir?: string;
  bindAddr?: string;
  httpPort?: number;
  logLevel?: (typeof LOG_LEVELS)[number];
  logFile?: string;
  /** Token secrets by role (files already read). */
  tokens: { management: string[]; readOnly: string[]; node: string[] };
  server: {
    heartbeatTtlMs?: number;
    /** Time a heartbeat may come late past the TTL before its node is marked down (Nomad's heartbeat_grace). Default 10 s. */
    heartbeatGraceMs?: number;
    /** This server's name in `berth server members` (a cluster of servers on etcd). */
    name?: string;
    /** The URL other servers and clients reach this one at; default: the bind address and port. */
    advertiseAddress?: string;
    /** How long a dead leader keeps the cluster leaderless. Default 3 s. */
    leaseTtlMs?: number;
    /** The heartbeats a second all nodes may send the leader in all (the TTL grows with the node count). Default 100. */
    maxHeartbeatsPerSecond?: number;
    /** The `iss` of workload identities and the issuer /.well-known/openid-configuration names (Nomad's oidc_issuer); without it that endpoint answers 404. */
    oidcIssuer?: string;
    /** HTTP front workers (threads) in front of the main thread; 0: the main thread serves the API alone. Default 0 (opt-in: see docs/guide/running-a-cluster.md). */
    apiWorkers?: number;
    /** Reader threads that read a burst's job registrations for the main thread; none beside front workers. Default 1 on a machine of two cores or more, else 0 (docs/guide/running-a-cluster.md). */
    apiReaders?: number;
    /**
     * Keep the state in etcd instead of <data_dir>/server/state.db. write_timeout: how long a
     * change (and the start) waits for etcd before STORE_UNAVAILABLE; default 5 s.
     */
    etcd?: { endpoints: string[]; prefix?: string; writeTimeoutMs?: number };
  };
  client: {
    nodeName?: string;
    datacenter?: string;
    /** node_class and meta: what tasks read as `${node.class}` and `${meta.<key>}`. */
    nodeClass?: string;
    meta?: Record<string, string>;
    /** The first server the client talks to (kept for single-server setups; `servers[0]` when both are given). */
    serverAddress?: string;
    /** Every server address the client may use, in order (set when several are configured); fails over to the next. */
    servers?: string[];
    /** The node-role token the client presents to the server. */
    token?: string;
    hostVolumes: Record<string, string>;
    /** host_volumes_dir: where host volume plugins put dynamic host volumes (default <client data dir>/host_volumes). */
    hostVolumesDir?: string;
    /** host_volume_plugin_dir: external host volume plugins (default <client data dir>/host_volume_plugins). */
    hostVolumePluginDir?: string;
    /** chroot_env: host path -> path in the task directory, for chroot drivers (Nomad's default map when absent). */
    chrootEnv?: Record<string, string>;
    /** Host directories that artifact and template sources may read (file_roots); unset: none ('/' in dev mode). */
    fileRoots?: string[];
    /** The `artifact` block: artifact fetch timeouts and limits, Nomad's defaults for what it leaves out. */
    artifact?: ArtifactLimits;
    drivers: { raw_exec?: boolean; exec?: boolean; docker?: boolean };
    /** Garbage collection of finished allocations: gc_interval, gc_max_age, gc_max_allocs, gc_disk_usage_threshold. */
    gc?: { intervalMs?: number; maxAgeMs?: number; maxAllocs?: number; diskUsageThreshold?: number };
    /** stop_after_server_disconnect: see Client's stopAfterServerDisconnectMs. */
    stopAfterServerDisconnectMs?: number;
    /** tasks_per_executor: raw_exec/exec tasks sharing one executor process (1: each its own). */
    tasksPerExecutor?: number;
    /** spare_executor: keep one shared executor started ahead of need per driver in use (default true). */
    spareExecutor?: boolean;
    /** bridge_network_name, bridge_network_subnet, cni_path (":"-separated), cni_config_dir: group networks (src/client/network). */
    groupNetworks?: { bridge?: { name?: string; subnet?: string }; cniPath?: string[]; cniConfigDir?: string };
    /** network_interface, min/max_dynamic_port, reserved { reserved_ports }, host_network: the node's ports (Client's `network`). */
    network?: {
      interface?: string;
      minDynamicPort?: number;
      maxDynamicPort?: number;
      reservedPorts?: number[];
      hostNetworks?: Record<string, { cidr?: string; interface?: string; reservedPorts?: number[] }>;
    };
    /** Whether Berth's own drivers run inside the agent (default) or as plugins (`berth driver serve <name>`). */
    driverModes?: { raw_exec?: DriverMode; exec?: DriverMode; docker?: DriverMode };
  };
  csi: {
    probeIntervalMs?: number;
    healthTimeoutMs?: number;
    /** volume_stats_interval: NodeGetVolumeStats of each published volume (client). Default 60 s. */
    volumeStatsIntervalMs?: number;
    /** volume_condition_interval: ControllerGetVolume of each unpublished volume (leader). Default 60 s. */
    volumeConditionIntervalMs?: number;
    /** drift_interval: the volume doctor's leader loop. Default 5 min. */
    driftIntervalMs?: number;
  };
  /** Every executable in it is a candidate task-driver plugin. */
  pluginDir?: string;
  /** `plugin "<executable's file name>" { args, config {} }` blocks. */
  plugins?: Record<string, { args: string[]; config?: Record<string, unknown> }>;
  /** `file:line:col` of a path inside a plugin block (`config.volumes.enabled`), for plugin config errors found at start. */
  locatePlugin?: (plugin: string, path: string) => string | undefined;
}

export type DriverMode = (typeof DRIVER_MODES)[number];

/** An empty configuration (no file). */
export function emptyAgentConfig(): AgentConfig {
  return { tokens: { management: [], readOnly: [], node: [] }, server: {}, client: { hostVolumes: {}, drivers: {} }, csi: {} };
}

/** A config file that cannot be used: code CONFIG_INVALID (schema, syntax) or CONFIG_UNREADABLE. */
export class AgentConfigError extends BerthError {}

function describeIssue(issue: z.core.$ZodIssue): string {
  // zod's default messages may quote the input (tokens): keep field names only.
  if (issue.code === 'unrecognized_keys') return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
  if (issue.code === 'invalid_value') return `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
  if (issue.code === 'invalid_type') return `expected ${issue.expected}`;
  return issue.message;
}

function truthy(v: boolean | string | number | undefined): boolean | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'boolean') return v;
  return ['1', 'true', 'yes', 'on'].includes(String(v).toLowerCase());
}

const camel = (k: string): string => k.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
// Keys whose values hold free names (host volume names, option keys) kept as written.
const FREE_KEYS = new Set(['hostVolumes', 'options', 'plugins', 'chrootEnv', 'hostNetworks']);
const SNAKE: Record<string, string> = { hostVolumes: 'host_volume', plugins: 'plugin', hostNetworks: 'host_network' };

/** JSON configs use the HCL names (data_dir, host_volume): the canonical camelCase form, free names untouched. */
function camelizeJson(obj: Record<string, unknown>, depth = 0): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    const key = k === 'host_volume' ? 'hostVolumes' : k === 'host_network' ? 'hostNetworks' : k === 'plugin' && depth === 0 ? 'plugins' : camel(k);
    if (FREE_KEYS.has(key) && isObject(v)) {
      // A plugin's `config` is the plugin's own, kept as written.
      out[key] = key === 'hostVolumes' || key === 'plugins' || key === 'hostNetworks' ? Object.fromEntries(Object.entries(v).map(([name, hv]) => [name, isObject(hv) ? (key === 'plugins' ? hv : camelizeJson(hv, depth + 1)) : hv])) : v;
    } else out[key] = isObject(v) && depth < 3 ? camelizeJson(v, depth + 1) : v;
  }
  return out;
}

/** A canonical path (`client.hostVolumes.x.path`) as the JSON file spells it (`client.host_volume.x.path`). */
function jsonPath(p: string): string {
  const parts = p.split('.');
  return parts
    .map((seg, i) => {
      if (i > 0 && FREE_KEYS.has(parts[i - 1]?.replace(/\[\d+\]$/, '') ?? '')) return seg;
      return seg.replace(/^[A-Za-z]+/, (name) => SNAKE[name] ?? name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));
    })
    .join('.');
}

/**
 * Parses config text. `file` names it in errors and picks the format (.hcl
 * or .json, else by content). Token files named in it are read relative to
 * the file's directory. Rejects with SpecFileError (file:line:col: field:
 * message, one line per problem) or AgentConfigError CONFIG_UNREADABLE for a
 * token file that cannot be read. Never quotes a token.
 */
export async function parseAgentConfig(file: string, text: string): Promise<AgentConfig> {
  // The spec-file reader (HCL and its functions, YAML among them) loads with the first config file: a dev
  // agent without one never evaluates it (~10 ms of its start's CPU, issue 40).
  const { fileFormat, parseSpecText } = await import('../spec-files/index.js');
  let locateIn: ((path: string) => string | undefined) | undefined;
  const raw = await parseSpecText<RawConfig>(file, text, {
    hclBody: CONFIG_BODY,
    wrapper: 'agent',
    validate(input, locate) {
      locateIn = locate;
      const json = fileFormat(file, text) === 'json';
      const r = configSchema.safeParse(json ? camelizeJson(input) : input);
      if (r.success) return { value: r.data };
      return {
        problems: r.error.issues.map((i): SpecProblem => {
          const p = formatPath(i.path as PropertyKey[]);
          const unknown = i.code === 'unrecognized_keys' && json ? { ...i, keys: i.keys.map((k) => jsonPath(k)) } : i;
          return { path: json ? jsonPath(p) : p, message: describeIssue(unknown) };
        }),
      };
    },
  });
  const mode = (v: boolean | string | number | undefined, key: string): DriverMode | undefined => {
    if (v === undefined) return undefined;
    if (!DRIVER_MODES.includes(v as DriverMode)) throw new AgentConfigError('CONFIG_INVALID', `${locateIn?.(`client.options.${key}`) ?? file}: client.options.${key}: must be one of "in-process", "external"`);
    return v as DriverMode;
  };
  const rawExecMode = mode(raw.client?.options?.['driver.raw_exec.mode'], 'driver.raw_exec.mode');
  const execMode = mode(raw.client?.options?.['driver.exec.mode'], 'driver.exec.mode');
  const dockerMode = mode(raw.client?.options?.['driver.docker.mode'], 'driver.docker.mode');
  const locateAt = locateIn;
  const base = path.dirname(path.resolve(file));
  const abs = (p: string | undefined): string | undefined => (p === undefined ? undefined : path.resolve(base, p));
  const readTokens = async (f: string | undefined, field: string): Promise<string[]> => {
    if (!f) return [];
    let text: string;
    try {
      text = await readFile(abs(f) as string, 'utf8');
    } catch (err) {
      throw new AgentConfigError('CONFIG_UNREADABLE', `${file}: ${field}: cannot read ${f}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { cause: err });
    }
    return text
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
  };
  const t = raw.tokens ?? {};
  const c = raw.client ?? {};
  const clientToken = c.token ?? (await readTokens(c.tokenFile, 'client.token_file'))[0];
  const dataDir = abs(raw.dataDir);
  const logFile = abs(raw.logFile);
  return {
    ...(dataDir ? { dataDir } : {}),
    ...(raw.bindAddr ? { bindAddr: raw.bindAddr } : {}),
    ...(raw.ports?.http !== undefined ? { httpPort: raw.ports.http } : {}),
    ...(raw.logLevel ? { logLevel: raw.logLevel } : {}),
    ...(logFile ? { logFile } : {}),
    tokens: {
      management: [...(t.management ?? []), ...(await readTokens(t.managementFile, 'tokens.management_file'))],
      readOnly: [...(t.readOnly ?? []), ...(await readTokens(t.readOnlyFile, 'tokens.read_only_file'))],
      node: [...(t.node ?? []), ...(await readTokens(t.nodeFile, 'tokens.node_file'))],
    },
    server: {
      ...(raw.server?.heartbeatTtl ? { heartbeatTtlMs: durationMs(raw.server.heartbeatTtl) } : {}),
      ...(raw.server?.heartbeatGrace !== undefined ? { heartbeatGraceMs: durationMs(raw.server.heartbeatGrace) } : {}),
      ...(raw.server?.name ? { name: raw.server.name } : {}),
      ...(raw.server?.advertiseAddress ? { advertiseAddress: raw.server.advertiseAddress } : {}),
      ...(raw.server?.leaseTtl ? { leaseTtlMs: durationMs(raw.server.leaseTtl) } : {}),
      ...(raw.server?.maxHeartbeatsPerSecond !== undefined ? { maxHeartbeatsPerSecond: raw.server.maxHeartbeatsPerSecond } : {}),
      ...(raw.server?.oidcIssuer ? { oidcIssuer: raw.server.oidcIssuer } : {}),
      ...(raw.server?.apiWorkers !== undefined ? { apiWorkers: raw.server.apiWorkers } : {}),
      ...(raw.server?.apiReaders !== undefined ? { apiReaders: raw.server.apiReaders } : {}),
      ...(raw.server?.store?.etcd ? { etcd: etcdSettings(raw.server.store.etcd) } : {}),
    },
    client: {
      ...(c.nodeName ? { nodeName: c.nodeName } : {}),
      ...(c.datacenter ? { datacenter: c.datacenter } : {}),
      ...(c.nodeClass ? { nodeClass: c.nodeClass } : {}),
      ...(c.meta ? { meta: c.meta } : {}),
      ...(c.serverAddress || c.servers ? { serverAddress: c.servers?.[0] ?? (c.serverAddress as string) } : {}),
      ...(c.servers ? { servers: [...new Set([...c.servers, ...(c.serverAddress ? [c.serverAddress] : [])])] } : {}),
      ...(clientToken ? { token: clientToken } : {}),
      hostVolumes: Object.fromEntries(Object.entries(c.hostVolumes ?? {}).map(([name, v]) => [name, v.path])),
      ...(c.hostVolumesDir ? { hostVolumesDir: c.hostVolumesDir } : {}),
      ...(c.hostVolumePluginDir ? { hostVolumePluginDir: c.hostVolumePluginDir } : {}),
      ...(c.chrootEnv ? { chrootEnv: c.chrootEnv } : {}),
      ...(c.fileRoots ? { fileRoots: c.fileRoots } : {}),
      ...(c.artifact ? { artifact: artifactLimits(c.artifact) } : {}),
      ...(c.gcInterval || c.gcMaxAge || c.gcMaxAllocs !== undefined || c.gcDiskUsageThreshold !== undefined
        ? {
            gc: {
              ...(c.gcInterval ? { intervalMs: durationMs(c.gcInterval) } : {}),
              ...(c.gcMaxAge ? { maxAgeMs: durationMs(c.gcMaxAge) } : {}),
              ...(c.gcMaxAllocs !== undefined ? { maxAllocs: c.gcMaxAllocs } : {}),
              ...(c.gcDiskUsageThreshold !== undefined ? { diskUsageThreshold: c.gcDiskUsageThreshold } : {}),
            },
          }
        : {}),
      ...(c.stopAfterServerDisconnect ? { stopAfterServerDisconnectMs: durationMs(c.stopAfterServerDisconnect) } : {}),
      ...(c.tasksPerExecutor !== undefined ? { tasksPerExecutor: c.tasksPerExecutor } : {}),
      ...(c.spareExecutor !== undefined ? { spareExecutor: c.spareExecutor } : {}),
      ...(c.bridgeNetworkName || c.bridgeNetworkSubnet || c.cniPath || c.cniConfigDir
        ? {
            groupNetworks: {
              ...(c.bridgeNetworkName || c.bridgeNetworkSubnet
                ? { bridge: { ...(c.bridgeNetworkName ? { name: c.bridgeNetworkName } : {}), ...(c.bridgeNetworkSubnet ? { subnet: c.bridgeNetworkSubnet } : {}) } }
                : {}),
              ...(c.cniPath ? { cniPath: c.cniPath.split(':').filter(Boolean) } : {}),
              ...(c.cniConfigDir ? { cniConfigDir: c.cniConfigDir } : {}),
            },
          }
        : {}),
      ...clientNetwork(c),
      drivers: {
        ...(truthy(c.options?.['driver.raw_exec.enable']) !== undefined ? { raw_exec: truthy(c.options?.['driver.raw_exec.enable']) as boolean } : {}),
        ...(truthy(c.options?.['driver.exec.enable']) !== undefined ? { exec: truthy(c.options?.['driver.exec.enable']) as boolean } : {}),
        ...(truthy(c.options?.['driver.docker.enable']) !== undefined ? { docker: truthy(c.options?.['driver.docker.enable']) as boolean } : {}),
      },
      ...(rawExecMode || execMode || dockerMode
        ? { driverModes: { ...(rawExecMode ? { raw_exec: rawExecMode } : {}), ...(execMode ? { exec: execMode } : {}), ...(dockerMode ? { docker: dockerMode } : {}) } }
        : {}),
    },
    csi: {
      ...(raw.csi?.probeInterval ? { probeIntervalMs: durationMs(raw.csi.probeInterval) } : {}),
      ...(raw.csi?.healthTimeout ? { healthTimeoutMs: durationMs(raw.csi.healthTimeout) } : {}),
      ...(raw.csi?.volumeStatsInterval ? { volumeStatsIntervalMs: durationMs(raw.csi.volumeStatsInterval) } : {}),
      ...(raw.csi?.volumeConditionInterval ? { volumeConditionIntervalMs: durationMs(raw.csi.volumeConditionInterval) } : {}),
      ...(raw.csi?.driftInterval ? { driftIntervalMs: durationMs(raw.csi.driftInterval) } : {}),
    },
    ...(raw.pluginDir ? { pluginDir: abs(raw.pluginDir) as string } : {}),
    ...(raw.plugins
      ? {
          plugins: Object.fromEntries(Object.entries(raw.plugins).map(([name, p]) => [name, { args: p.args ?? [], ...(p.config ? { config: p.config } : {}) }])),
          ...(locateAt ? { locatePlugin: (plugin: string, p: string) => locateAt(`plugins.${plugin}${p ? `.${p}` : ''}`) } : {}),
        }
      : {}),
  };
}

/** The server's etcd block, durations in ms. */
function etcdSettings(e: NonNullable<NonNullable<NonNullable<RawConfig['server']>['store']>['etcd']>): NonNullable<AgentConfig['server']['etcd']> {
  return { endpoints: e.endpoints, ...(e.prefix ? { prefix: e.prefix } : {}), ...(e.writeTimeout ? { writeTimeoutMs: durationMs(e.writeTimeout) } : {}) };
}

/** The client's port settings, when any is set. */
function clientNetwork(c: NonNullable<RawConfig['client']>): Pick<AgentConfig['client'], 'network'> {
  const hostNetworks = c.hostNetworks
    ? Object.fromEntries(
        Object.entries(c.hostNetworks).map(([name, hn]) => [
          name,
          { ...(hn.cidr ? { cidr: hn.cidr } : {}), ...(hn.interface ? { interface: hn.interface } : {}), ...(hn.reservedPorts ? { reservedPorts: hn.reservedPorts } : {}) },
        ]),
      )
    : undefined;
  const network = {
    ...(c.networkInterface ? { interface: c.networkInterface } : {}),
    ...(c.minDynamicPort !== undefined ? { minDynamicPort: c.minDynamicPort } : {}),
    ...(c.maxDynamicPort !== undefined ? { maxDynamicPort: c.maxDynamicPort } : {}),
    ...(c.reserved?.reservedPorts ? { reservedPorts: c.reserved.reservedPorts } : {}),
    ...(hostNetworks ? { hostNetworks } : {}),
  };
  return Object.keys(network).length ? { network } : {};
}

/** Reads and parses a config file (see parseAgentConfig). Rejects with AgentConfigError CONFIG_UNREADABLE or SpecFileError. */
export async function loadAgentConfig(file: string): Promise<AgentConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new AgentConfigError('CONFIG_UNREADABLE', `cannot read config file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`, { cause: err });
  }
  return parseAgentConfig(file, text);
}



/** The client's artifact block over Nomad's defaults. */
function artifactLimits(a: NonNullable<NonNullable<RawConfig['client']>['artifact']>): ArtifactLimits {
  const d = DEFAULT_ARTIFACT_LIMITS;
  return {
    httpReadTimeoutMs: a.httpReadTimeout ? durationMs(a.httpReadTimeout) : d.httpReadTimeoutMs,
    httpMaxBytes: a.httpMaxSize ? (parseBytes(a.httpMaxSize) ?? d.httpMaxBytes) : d.httpMaxBytes,
    gitTimeoutMs: a.gitTimeout ? durationMs(a.gitTimeout) : d.gitTimeoutMs,
    decompressionSizeLimit: a.decompressionSizeLimit ? (parseBytes(a.decompressionSizeLimit) ?? d.decompressionSizeLimit) : d.decompressionSizeLimit,
    decompressionFileCountLimit: a.decompressionFileCountLimit ?? d.decompressionFileCountLimit,
  };
}
