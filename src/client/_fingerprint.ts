// The node's fingerprint: what the server schedules on (drivers, resources,
// attributes, CSI plugins). Private to src/client (the Client's registration
// asks it before each register and heartbeat).

import { readFileSync } from 'node:fs';
import os from 'node:os';
import { describeError, type Clock } from '../lib/index.js';
import type { DriverInfo, NodeFingerprint } from '../structs/index.js';
import type { ClientOptions } from './_client-types.js';
import { networkFingerprint } from './_network-fingerprint.js';
import { DEFAULT_CNI_CONFIG_DIR, DEFAULT_CNI_PATH, networkModesOf } from './network/index.js';
import type { CsiManager } from './csimanager/index.js';
import type { HostVolumeManager } from './hostvolumes/index.js';
import type { TaskDriver } from './drivers/index.js';

export interface FingerprinterDeps {
  /** The enabled drivers (the map may fill after construction). */
  drivers: Map<string, TaskDriver>;
  clock: Clock;
  opts: Pick<ClientOptions, 'nodeName' | 'datacenter' | 'nodeClass' | 'httpAddr' | 'attributes' | 'stopAfterServerDisconnectMs' | 'network' | 'hostVolumes' | 'groupNetworks'>;
  /** The node's meta now (static config merged with dynamic `node meta apply`). */
  meta?: () => Record<string, string>;
  /** The CSI manager, once started. */
  csi: () => CsiManager | undefined;
  /** The host volume manager, once started: dynamic host volumes and plugin versions. */
  hostVolumes?: () => HostVolumeManager | undefined;
}

/** Builds the node's fingerprint; drivers are asked at most every 30 s unless forced. */
export class NodeFingerprinter {
  readonly #deps: FingerprinterDeps;
  #driverInfo: Record<string, DriverInfo> = {};
  #driverInfoAt = 0;
  #last: NodeFingerprint | undefined;

  constructor(deps: FingerprinterDeps) {
    this.#deps = deps;
  }

  async refreshDriverInfo(force = false): Promise<void> {
    const now = this.#deps.clock.now();
    if (!force && now - this.#driverInfoAt < 30_000) return;
    this.#driverInfoAt = now;
    const info: Record<string, DriverInfo> = {};
    for (const [name, driver] of this.#deps.drivers) {
      try {
        info[name] = await driver.fingerprint();
      } catch (err) {
        info[name] = { detected: false, healthy: false, healthReason: `fingerprint failed: ${describeError(err)}`, networkModes: [] };
      }
    }
    this.#driverInfo = info;
  }

  async fingerprint(): Promise<NodeFingerprint> {
    await this.refreshDriverInfo();
    const opts = this.#deps.opts;
    const reports = this.#deps.csi()?.pluginReports() ?? { controller: {}, node: {} };
    const cpus = os.cpus();
    const hostVolumes = this.#deps.hostVolumes?.();
    const staticVolumes = Object.fromEntries(Object.entries(opts.hostVolumes ?? {}).map(([name, p]) => [name, { path: p, readOnly: false, id: '' }]));
    this.#last = {
      name: opts.nodeName,
      datacenter: opts.datacenter ?? 'dc1',
      httpAddr: opts.httpAddr ?? '',
      drivers: this.#driverInfo,
      resources: {
        cpuMhz: cpus.reduce((sum, c) => sum + (c.speed || 1000), 0),
        memoryMb: Math.floor(os.totalmem() / (1024 * 1024)),
      },
      attributes: {
        'kernel.name': os.platform(),
        'kernel.version': os.release(),
        'cpu.arch': os.arch(),
        'unique.hostname': os.hostname(),
        'cpu.numcores': String(cpus.length),
        ...osRelease(),
        ...driverAttributes(this.#driverInfo),
        ...hostVolumes?.pluginAttributes(),
        ...opts.attributes,
      },
      ...(opts.nodeClass ? { nodeClass: opts.nodeClass } : {}),
      meta: this.#deps.meta?.() ?? {},
      csiControllerPlugins: reports.controller,
      csiNodePlugins: reports.node,
      // Dynamic ones win over a static volume of the same name, as Nomad's.
      hostVolumes: { ...staticVolumes, ...hostVolumes?.volumes() },
      ...(opts.stopAfterServerDisconnectMs ? { stopAfterDisconnectMs: opts.stopAfterServerDisconnectMs } : {}),
      ...networkFingerprint(opts.network),
      networkModes: networkModesOf({
        cniPath: opts.groupNetworks?.cniPath?.length ? opts.groupNetworks.cniPath : DEFAULT_CNI_PATH,
        cniConfigDir: opts.groupNetworks?.cniConfigDir ?? DEFAULT_CNI_CONFIG_DIR,
      }),
    };
    return this.#last;
  }

  /** The last fingerprint made (undefined before the first). Does not block. */
  get last(): NodeFingerprint | undefined {
    return this.#last;
  }
}

let osAttributes: Record<string, string> | undefined;

/**
 * `os.name` and `os.version` as Nomad's host fingerprint reports them (the
 * distribution's ID and VERSION_ID from /etc/os-release; the platform when
 * there is none). Read once per process.
 */
function osRelease(): Record<string, string> {
  if (osAttributes) return osAttributes;
  const fields: Record<string, string> = {};
  try {
    for (const line of readFileSync('/etc/os-release', 'utf8').split('\n')) {
      const m = /^([A-Z_]+)=(.*)$/.exec(line.trim());
      if (m) fields[m[1] as string] = (m[2] as string).replace(/^"(.*)"$/, '$1');
    }
  } catch {
    // No os-release (not Linux, or a minimal image): the platform's name is all there is.
  }
  osAttributes = { 'os.name': fields['ID'] || os.platform(), ...(fields['VERSION_ID'] ? { 'os.version': fields['VERSION_ID'] } : {}) };
  return osAttributes;
}

/** Node attributes from the drivers' fingerprints: `driver.<name>` for each healthy driver and what external drivers report. */
function driverAttributes(info: Record<string, DriverInfo>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, d] of Object.entries(info)) {
    if (d.detected && d.healthy) out[`driver.${name}`] = '1';
    for (const [k, v] of Object.entries(d.attributes ?? {})) out[k.startsWith('driver.') ? k : `driver.${name}.${k}`] = v;
  }
  return out;
}
