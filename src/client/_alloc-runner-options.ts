// What the Client derives from its options for the parts it builds: an
// allocation runner's options and the heartbeat interval. Private to
// src/client.

import path from 'node:path';
import type { Clock, Logger } from '../lib/index.js';
import type { Allocation, IdentityRequest, IdentitySignAnswer, Job } from '../structs/index.js';
import type { AllocRunnerOptions } from './allocrunner/index.js';
import type { ChrootCache } from './allocdir/index.js';
import type { CsiManager } from './csimanager/index.js';
import type { TaskDriver } from './drivers/index.js';
import type { PluginRegistry } from './dynamicplugins/index.js';
import type { NetworkManager } from './network/index.js';
import type { HttpVolumeClaimer } from './serverconn/index.js';
import type { ClientStateStore } from './state/index.js';
import type { ServiceCatalog } from './template/index.js';
import type { ClientOptions } from './_client-types.js';

/** The Client's parts an allocation runner works with. */
export interface RunnerParts {
  drivers: Map<string, TaskDriver>;
  registry: PluginRegistry;
  csiManager: CsiManager;
  network: NetworkManager;
  claimer: HttpVolumeClaimer;
  store: ClientStateStore;
  catalog: ServiceCatalog | undefined;
  /** Signs workload identities of a node's allocation on the server (ServerApi.signIdentities). */
  signIdentities: ((nodeId: string, allocId: string, requests: IdentityRequest[], signal: AbortSignal) => Promise<IdentitySignAnswer>) | undefined;
  chroot: ChrootCache | undefined;
  onStatus: AllocRunnerOptions['onStatus'];
  /** The node's dynamic host volumes, by name -> path (they join the static ones). */
  dynamicHostVolumes: Record<string, string>;
  /** The node's attributes as last fingerprinted, and its merged meta. */
  attributes: Record<string, string>;
  meta: Record<string, string>;
  logger: Logger;
  clock: Clock;
}

/** The options of the runner of `alloc` (of `job`) on this node. */
export function allocRunnerOptions(opts: ClientOptions, parts: RunnerParts, alloc: Allocation, job: Job): AllocRunnerOptions {
  const dataDir = opts.dataDir;
  return {
    alloc,
    job,
    drivers: parts.drivers,
    registry: parts.registry,
    csiManager: parts.csiManager,
    network: parts.network,
    claimer: parts.claimer,
    onStatus: parts.onStatus,
    store: parts.store,
    ...(parts.catalog ? { serviceCatalog: parts.catalog } : {}),
    ...(parts.signIdentities ? { signIdentities: bindSigner(parts.signIdentities, alloc) } : {}),
    allocDirRoot: opts.allocDirRoot ?? path.join(dataDir, 'alloc'),
    ...(parts.chroot ? { chroot: parts.chroot } : {}),
    pluginDirRoot: opts.pluginDirRoot ?? path.join(dataDir, 'p'),
    hostVolumes: { ...opts.hostVolumes, ...parts.dynamicHostVolumes },
    node: {
      id: alloc.nodeId,
      name: opts.nodeName,
      datacenter: opts.datacenter ?? 'dc1',
      ...(opts.region ? { region: opts.region } : {}),
      nodeClass: opts.nodeClass ?? '',
      attributes: parts.attributes,
      meta: parts.meta,
    },
    ...(opts.fileRoots ? { fileRoots: opts.fileRoots } : {}),
    ...(opts.artifactLimits ? { artifactLimits: opts.artifactLimits } : {}),
    logger: parts.logger,
    clock: parts.clock,
    ...(opts.retry ? { retry: opts.retry } : {}),
    ...(opts.killTimeoutMs !== undefined ? { killTimeoutMs: opts.killTimeoutMs } : {}),
    ...(opts.stopAfterServerDisconnectMs ? { stopAfterServerDisconnectMs: opts.stopAfterServerDisconnectMs } : {}),
  };
}

/** The signer of one allocation's identities. */
function bindSigner(sign: NonNullable<RunnerParts['signIdentities']>, alloc: Allocation): NonNullable<AllocRunnerOptions['signIdentities']> {
  return (requests, signal) => sign(alloc.nodeId, alloc.id, requests, signal);
}

/** The heartbeat interval asked for, shortened so that fencing leases are renewed at least three times per window. */
export function heartbeatIntervalMs(opts: ClientOptions): number | undefined {
  const window = opts.stopAfterServerDisconnectMs;
  if (!window) return opts.heartbeatIntervalMs;
  return Math.min(opts.heartbeatIntervalMs ?? Number.POSITIVE_INFINITY, Math.max(100, Math.floor(window / 3)));
}
