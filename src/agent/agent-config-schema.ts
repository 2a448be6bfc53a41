// What the agent's configuration file may say: its HCL body (blocks and
// attributes, as Nomad's agent config names them) and the zod schema that
// checks it, with the words of each refusal. agent-config.ts reads a file
// through them into an AgentConfig.

import { z } from 'zod';
import { parseBytes } from '../client/index.js';
import type { HclBody } from '../spec-files/index.js';
import { DEFAULT_MAX_DYNAMIC_PORT, DEFAULT_MIN_DYNAMIC_PORT, parsePortList } from '../structs/index.js';
import { lazySchema } from '../api/index.js';

const attr = (to: string) => ({ t: 'attr', to }) as const;

/** How the HCL form maps to the canonical (camelCase) JSON form. */
export const CONFIG_BODY: HclBody = {
  data_dir: attr('dataDir'),
  bind_addr: attr('bindAddr'),
  log_level: attr('logLevel'),
  log_file: attr('logFile'),
  ports: { t: 'block', to: 'ports', body: { http: attr('http') } },
  tokens: {
    t: 'block',
    to: 'tokens',
    body: {
      management: attr('management'),
      read_only: attr('readOnly'),
      node: attr('node'),
      management_file: attr('managementFile'),
      read_only_file: attr('readOnlyFile'),
      node_file: attr('nodeFile'),
    },
  },
  server: {
    t: 'block',
    to: 'server',
    body: {
      heartbeat_ttl: attr('heartbeatTtl'),
      heartbeat_grace: attr('heartbeatGrace'),
      name: attr('name'),
      advertise_address: attr('advertiseAddress'),
      lease_ttl: attr('leaseTtl'),
      max_heartbeats_per_second: attr('maxHeartbeatsPerSecond'),
      oidc_issuer: attr('oidcIssuer'),
      api_workers: attr('apiWorkers'),
      api_readers: attr('apiReaders'),
      store: { t: 'block', to: 'store', body: { etcd: { t: 'block', to: 'etcd', body: { endpoints: attr('endpoints'), prefix: attr('prefix'), write_timeout: attr('writeTimeout') } } } },
    },
  },
  client: {
    t: 'block',
    to: 'client',
    body: {
      node_name: attr('nodeName'),
      datacenter: attr('datacenter'),
      node_class: attr('nodeClass'),
      meta: { t: 'map', to: 'meta' },
      server_address: attr('serverAddress'),
      servers: attr('servers'),
      token: attr('token'),
      token_file: attr('tokenFile'),
      host_volume: { t: 'labeledMap', to: 'hostVolumes', body: { path: attr('path') } },
      host_volumes_dir: attr('hostVolumesDir'),
      host_volume_plugin_dir: attr('hostVolumePluginDir'),
      file_roots: attr('fileRoots'),
      artifact: {
        t: 'block',
        to: 'artifact',
        body: {
          http_read_timeout: attr('httpReadTimeout'),
          http_max_size: attr('httpMaxSize'),
          git_timeout: attr('gitTimeout'),
          decompression_size_limit: attr('decompressionSizeLimit'),
          decompression_file_count_limit: attr('decompressionFileCountLimit'),
        },
      },
      options: { t: 'map', to: 'options' },
      chroot_env: { t: 'map', to: 'chrootEnv' },
      gc_interval: attr('gcInterval'),
      gc_max_age: attr('gcMaxAge'),
      gc_max_allocs: attr('gcMaxAllocs'),
      gc_disk_usage_threshold: attr('gcDiskUsageThreshold'),
      stop_after_server_disconnect: attr('stopAfterServerDisconnect'),
      tasks_per_executor: attr('tasksPerExecutor'),
      spare_executor: attr('spareExecutor'),
      bridge_network_name: attr('bridgeNetworkName'),
      bridge_network_subnet: attr('bridgeNetworkSubnet'),
      cni_path: attr('cniPath'),
      cni_config_dir: attr('cniConfigDir'),
      network_interface: attr('networkInterface'),
      min_dynamic_port: attr('minDynamicPort'),
      max_dynamic_port: attr('maxDynamicPort'),
      reserved: { t: 'block', to: 'reserved', body: { reserved_ports: attr('reservedPorts') } },
      host_network: { t: 'labeledMap', to: 'hostNetworks', body: { cidr: attr('cidr'), interface: attr('interface'), reserved_ports: attr('reservedPorts') } },
    },
  },
  csi: {
    t: 'block',
    to: 'csi',
    body: {
      probe_interval: attr('probeInterval'),
      health_timeout: attr('healthTimeout'),
      volume_stats_interval: attr('volumeStatsInterval'),
      volume_condition_interval: attr('volumeConditionInterval'),
      drift_interval: attr('driftInterval'),
    },
  },
  plugin_dir: attr('pluginDir'),
  plugin: { t: 'labeledMap', to: 'plugins', body: { args: attr('args'), config: { t: 'map', to: 'config' } } },
};

/** An etcd client URL. */
export const ETCD_URL = /^https?:\/\/[^\s/]+$/;
const ETCD_URL_MESSAGE = 'must be an etcd client URL such as "http://127.0.0.1:2379"';
const DURATION = /^(\d+(\.\d+)?(ms|s|m|h))+$/;
const duration = lazySchema(() => z.string().regex(DURATION, 'must be a duration such as "500ms", "30s" or "5m"'));
const httpUrl = lazySchema(() => z.string().regex(/^https?:\/\/\S+$/, 'must be an http:// URL such as "http://127.0.0.1:4646"'));
/** A byte size as Nomad's agent config writes one ("100GB", "512MiB"); 0 for no limit. */
const byteSize = lazySchema(() => z.string().refine((s) => parseBytes(s) !== undefined, 'must be a size such as "100GB", "512MiB" or "4096"'));
/** Nomad's client `artifact` block (the timeouts and limits Berth applies; default Nomad's). */
const artifactSchema = lazySchema(() => z.strictObject({
  httpReadTimeout: duration.refine((d) => !/^0+(\.0+)?(ms|s|m|h)$/.test(d), 'http_read_timeout must be > 0').optional(),
  httpMaxSize: byteSize.optional(),
  gitTimeout: duration.refine((d) => !/^0+(\.0+)?(ms|s|m|h)$/.test(d), 'git_timeout must be > 0').optional(),
  decompressionSizeLimit: byteSize.optional(),
  decompressionFileCountLimit: z.number().int().min(0, 'decompression_file_count_limit must be >= 0').optional(),
}));
const tokenList = lazySchema(() => z.array(z.string().min(8, 'a token has at least 8 characters')));
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const KNOWN_OPTIONS = ['driver.raw_exec.enable', 'driver.exec.enable', 'driver.docker.enable', 'driver.raw_exec.mode', 'driver.exec.mode', 'driver.docker.mode'];
export const DRIVER_MODES = ['in-process', 'external'] as const;

const portNumber = lazySchema(() => z.number().int().min(1, 'must be a port between 1 and 65535').max(65535, 'must be a port between 1 and 65535'));
/** Nomad's "22,80,8500-8600" -> the ports. */
const portList = lazySchema(() => z.string().transform((text, ctx) => {
  try {
    return parsePortList(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: `${(err as Error).message}; write ports and ranges such as "22,80,8500-8600"` });
    return z.NEVER;
  }
}));

export const configSchema = lazySchema(() => z.strictObject({
  dataDir: z.string().min(1).optional(),
  bindAddr: z.string().min(1).optional(),
  logLevel: z.enum(LOG_LEVELS).optional(),
  logFile: z.string().min(1).optional(),
  ports: z.strictObject({ http: z.number().int().min(0).max(65535).optional() }).optional(),
  tokens: z
    .strictObject({
      management: tokenList.optional(),
      readOnly: tokenList.optional(),
      node: tokenList.optional(),
      managementFile: z.string().min(1).optional(),
      readOnlyFile: z.string().min(1).optional(),
      nodeFile: z.string().min(1).optional(),
    })
    .optional(),
  server: z
    .strictObject({
      heartbeatTtl: duration.optional(),
      /** Nomad's heartbeat_grace: how late past its TTL a node's heartbeat may come before the node is marked down. */
      heartbeatGrace: duration.optional(),
      name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must be letters, digits, ".", "_" or "-"').optional(),
      advertiseAddress: httpUrl.optional(),
      leaseTtl: duration.optional(),
      /** Nomad's max_heartbeats_per_second: the heartbeat TTL grows with the node count so that all nodes send at most this many a second. */
      maxHeartbeatsPerSecond: z.number().positive('must be a number of heartbeats a second above 0, e.g. 100').optional(),
      /** Nomad's oidc_issuer: the `iss` of workload identities, and what OIDC discovery names. */
      oidcIssuer: httpUrl.optional(),
      /** HTTP front workers (threads) beside the main thread; 0: the main thread serves the API alone. */
      apiWorkers: z.number().int().min(0, 'must be 0 or more (0: the main thread serves the API alone)').max(64, 'must be at most 64').optional(),
      apiReaders: z.number().int().min(0, 'must be 0 or more (0: the main thread reads every registration)').max(64, 'must be at most 64').optional(),
      store: z
        .strictObject({
          etcd: z
            .strictObject({
              endpoints: z.array(z.string().regex(ETCD_URL, ETCD_URL_MESSAGE)).min(1, 'name at least one etcd endpoint'),
              prefix: z.string().regex(/^\/\S*[^/]$/, 'must start with "/" and not end with one, e.g. "/berth"').optional(),
              writeTimeout: duration.optional(),
            })
            .optional(),
        })
        .optional(),
    })
    .optional(),
  client: z
    .strictObject({
      nodeName: z.string().min(1).optional(),
      datacenter: z.string().min(1).optional(),
      nodeClass: z.string().optional(),
      meta: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]).transform(String)).optional(),
      serverAddress: httpUrl.optional(),
      servers: z.array(httpUrl).min(1, 'must name at least one server').optional(),
      token: z.string().min(8, 'a token has at least 8 characters').optional(),
      tokenFile: z.string().min(1).optional(),
      hostVolumes: z.record(z.string(), z.strictObject({ path: z.string().startsWith('/', 'must be an absolute path') })).optional(),
      hostVolumesDir: z.string().startsWith('/', 'must be an absolute path').optional(),
      hostVolumePluginDir: z.string().startsWith('/', 'must be an absolute path').optional(),
      fileRoots: z.array(z.string().startsWith('/', 'must be an absolute path')).optional(),
      artifact: artifactSchema.optional(),
      options: z
        .record(z.string(), z.union([z.boolean(), z.string(), z.number()]))
        .superRefine((opts, ctx) => {
          for (const key of Object.keys(opts)) {
            if (!KNOWN_OPTIONS.includes(key)) ctx.addIssue({ code: 'custom', path: [key], message: `unknown option; known: ${KNOWN_OPTIONS.join(', ')}` });
          }
        })
        .optional(),
      chrootEnv: z.record(z.string().startsWith('/', 'must be an absolute host path'), z.string().min(1, 'must name a path in the task directory')).optional(),
      gcInterval: duration.optional(),
      gcMaxAge: duration.optional(),
      gcMaxAllocs: z.number().int().min(0).optional(),
      gcDiskUsageThreshold: z.number().min(0).max(100).optional(),
      stopAfterServerDisconnect: duration.optional(),
      tasksPerExecutor: z.number().int().min(1).max(1000).optional(),
      spareExecutor: z.boolean().optional(),
      bridgeNetworkName: z.string().regex(/^[A-Za-z0-9_.-]{1,15}$/, 'must be a Linux interface name: 1-15 letters, digits, "_", "." or "-"').optional(),
      bridgeNetworkSubnet: z.string().regex(/^(\d{1,3}\.){3}\d{1,3}\/([89]|[12]\d|30)$/, 'must be an IPv4 CIDR between /8 and /30, e.g. 172.26.64.0/20').optional(),
      cniPath: z.string().min(1).optional(),
      cniConfigDir: z.string().startsWith('/', 'must be an absolute path').optional(),
      networkInterface: z.string().min(1).optional(),
      minDynamicPort: portNumber.optional(),
      maxDynamicPort: portNumber.optional(),
      reserved: z.strictObject({ reservedPorts: portList.optional() }).optional(),
      hostNetworks: z
        .record(
          z.string().regex(/^[A-Za-z0-9_-]+$/, 'a host network name is letters, digits, "_" or "-"'),
          z.strictObject({
            cidr: z.string().regex(/^[0-9A-Fa-f.:]+\/\d{1,3}$/, 'must be a CIDR such as "10.0.0.0/8"').optional(),
            interface: z.string().min(1).optional(),
            reservedPorts: portList.optional(),
          }),
        )
        .optional(),
    })
    .refine((c) => (c.minDynamicPort ?? DEFAULT_MIN_DYNAMIC_PORT) <= (c.maxDynamicPort ?? DEFAULT_MAX_DYNAMIC_PORT), {
      message: 'min_dynamic_port must not be above max_dynamic_port (default 20000-32000)',
      path: ['minDynamicPort'],
    })
    .optional(),
  csi: z
    .strictObject({
      probeInterval: duration.optional(),
      healthTimeout: duration.optional(),
      volumeStatsInterval: duration.optional(),
      volumeConditionInterval: duration.optional(),
      driftInterval: duration.optional(),
    })
    .optional(),
  pluginDir: z.string().min(1).optional(),
  plugins: z
    .record(
      z.string(),
      z.strictObject({
        args: z.array(z.string()).optional(),
        // Checked against the plugin's ConfigSchema once it runs (the agent reports problems with their position then).
        config: z.record(z.string(), z.unknown()).optional(),
      }),
    )
    .optional(),
}));

export type RawConfig = z.infer<typeof configSchema>;
