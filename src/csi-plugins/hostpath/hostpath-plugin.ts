// The hostpath CSI plugin Berth ships: a real plugin on a real unix socket,
// whose volumes are directories under a data directory and whose node side
// makes real bind mounts. For development clusters and for testing COs
// (Berth's own conformance suite runs against it). Capacity is bookkeeping:
// a directory is not size-limited.

import { lstat, mkdir, readdir, realpath, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import { createServer, ServerError, Status, type CallContext, type Server, type ServerMiddlewareCall } from 'nice-grpc';
import {
  ControllerDefinition,
  IdentityDefinition,
  NodeDefinition,
  PluginCapability_Service_Type as ServiceType,
  PluginCapability_VolumeExpansion_Type as ExpansionType,
  type DeepPartial,
  type IdentityServiceImplementation,
  type PluginCapability,
} from '../../gen/csi/v1/csi.js';
import { BerthError, describeError, Lifecycle, silentLogger, type LifecycleState, type Logger } from '../../lib/index.js';
import { KeyedLocks, Layout, type HostpathContext } from './_context.js';
import { createControllerService } from './_controller.js';
import { isErrno } from './_mount.js';
import { createNodeService } from './_node.js';
import { StateStore } from './_state.js';

/** The name the plugin reports in GetPluginInfo. */
export const HOSTPATH_PLUGIN_NAME = 'hostpath.csi.berth.dev';

/** Reported as vendor_version; kept equal to package.json's version by a test. */
export const HOSTPATH_VERSION = '0.1.0';

/** Which CSI services an instance serves. */
export type HostpathMode = 'controller' | 'node' | 'monolith';

export interface HostpathOptions {
  /** Where to listen: 'unix:///abs/path.sock' (the path must fit a socket address, < 108 bytes). */
  endpoint: string;
  /** Reported by NodeGetInfo and the only node ControllerPublishVolume accepts. */
  nodeId: string;
  /** Absolute directory for volumes, snapshots and state files; created if missing. */
  dataDir: string;
  /**
   * Absolute directory for the node's records (node-state.json) instead of
   * dataDir; created if missing. Each node needs its own when several nodes
   * share one dataDir (storage every node reaches, under one node ID).
   */
  nodeStateDir?: string;
  /** Which services it advertises and serves; default 'monolith' (both). */
  mode?: HostpathMode;
  /** Advertise and serve ControllerPublish/Unpublish; default true. */
  publishUnpublish?: boolean;
  /** Reported by NodeGetInfo and enforced by ControllerPublishVolume; default 256, 0 means no limit. */
  maxVolumesPerNode?: number;
  /** Total bytes GetCapacity starts from; default the free space of dataDir. */
  capacityBytes?: number;
  logger?: Logger;
}

/** Where an instance is in its life. */
export type HostpathStatus = LifecycleState;

const MAX_SOCKET_PATH_BYTES = 107;

/**
 * A hostpath CSI plugin serving Identity and, by mode, Controller and Node on
 * one unix socket. State survives a restart: a new instance over the same
 * dataDir knows every volume, snapshot, staging and publication.
 *
 * Calls that change a volume take that volume's lock; an overlapping call
 * for the same volume is answered ABORTED at once.
 */
export class HostpathPlugin {
  /** The endpoint given in the options, 'unix:///...'. */
  readonly endpoint: string;
  readonly #socketPath: string;
  readonly #opts: Required<Omit<HostpathOptions, 'capacityBytes' | 'logger' | 'nodeStateDir'>> & { capacityBytes: number | undefined; nodeStateDir: string | undefined };
  readonly #logger: Logger;
  readonly #life: Lifecycle;
  #server: Server | undefined;
  #store: StateStore | undefined;

  /** Checks the options; throws BerthError('HOSTPATH_INVALID_OPTIONS'). Does no I/O. */
  constructor(opts: HostpathOptions) {
    const invalid = (msg: string): BerthError => new BerthError('HOSTPATH_INVALID_OPTIONS', msg);
    if (!opts.endpoint.startsWith('unix://')) throw invalid(`endpoint must be unix:///abs/path.sock, got ${JSON.stringify(opts.endpoint)}`);
    const socketPath = opts.endpoint.slice('unix://'.length);
    if (!path.isAbsolute(socketPath)) throw invalid('endpoint must name an absolute socket path');
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
      throw invalid(`socket path is ${Buffer.byteLength(socketPath)} bytes; unix sockets allow ${MAX_SOCKET_PATH_BYTES}`);
    }
    if (opts.nodeId === '' || Buffer.byteLength(opts.nodeId) > 256) throw invalid('nodeId must be 1 to 256 bytes');
    if (!path.isAbsolute(opts.dataDir)) throw invalid('dataDir must be an absolute path');
    if (opts.nodeStateDir !== undefined && !path.isAbsolute(opts.nodeStateDir)) throw invalid('nodeStateDir must be an absolute path');
    const mode = opts.mode ?? 'monolith';
    if (!['controller', 'node', 'monolith'].includes(mode)) throw invalid(`mode must be controller, node or monolith, got ${String(mode)}`);
    const maxVolumesPerNode = opts.maxVolumesPerNode ?? 256;
    if (!Number.isSafeInteger(maxVolumesPerNode) || maxVolumesPerNode < 0) throw invalid('maxVolumesPerNode must be a whole number >= 0');
    if (opts.capacityBytes !== undefined && (!Number.isSafeInteger(opts.capacityBytes) || opts.capacityBytes < 0)) {
      throw invalid('capacityBytes must be a whole number of bytes >= 0');
    }
    this.endpoint = opts.endpoint;
    this.#socketPath = socketPath;
    this.#opts = {
      endpoint: opts.endpoint,
      nodeId: opts.nodeId,
      dataDir: path.resolve(opts.dataDir),
      mode,
      publishUnpublish: opts.publishUnpublish ?? true,
      maxVolumesPerNode,
      capacityBytes: opts.capacityBytes,
      nodeStateDir: opts.nodeStateDir === undefined ? undefined : path.resolve(opts.nodeStateDir),
    };
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'hostpath', nodeId: opts.nodeId, mode });
    this.#life = new Lifecycle({
      logger: this.#logger,
      refuse: () => new BerthError('HOSTPATH_STOPPED', 'this hostpath plugin was stopped; create a new instance'),
    });
  }

  /** The lib Lifecycle's state: new, starting, running, stopping, stopped. */
  get status(): HostpathStatus {
    return this.#life.state;
  }

  /**
   * Loads state and listens. Resolves once the socket accepts calls; safe
   * to call again (returns the same start). Throws BerthError on bad state
   * or when stopped; the instance cannot be restarted after stop().
   */
  start(): Promise<void> {
    return this.#life.start(() => this.#start());
  }

  async #start(): Promise<void> {
    const { mode, dataDir, nodeId } = this.#opts;
    const controller = mode !== 'node';
    const node = mode !== 'controller';
    try {
      await mkdir(dataDir, { recursive: true, mode: 0o700 });
      const layout = new Layout(await realpath(dataDir));
      await Promise.all([layout.volumesDir, layout.snapshotsDir, layout.tmpDir].map((d) => mkdir(d, { recursive: true })));
      // tmp holds only copies a crash interrupted; they were never recorded anywhere.
      if (controller) {
        for (const entry of await readdir(layout.tmpDir)) await rm(path.join(layout.tmpDir, entry), { recursive: true, force: true });
      }
      const nodeDir = this.#opts.nodeStateDir;
      if (nodeDir !== undefined) await mkdir(nodeDir, { recursive: true, mode: 0o700 });
      const store = new StateStore({ dir: layout.root, ...(nodeDir === undefined ? {} : { nodeDir: await realpath(nodeDir) }), controller, node, nodeId });
      await store.load();
      this.#store = store;

      const ctx: HostpathContext = {
        nodeId,
        maxVolumesPerNode: this.#opts.maxVolumesPerNode,
        capacityBytes: this.#opts.capacityBytes,
        publishUnpublish: this.#opts.publishUnpublish,
        layout,
        store,
        locks: new KeyedLocks(),
        reservations: { bytes: 0 },
        logger: this.#logger,
      };
      const server = createServer().use(this.#errorMiddleware()).use(refreshMiddleware(store));
      server.add(IdentityDefinition, this.#identity(controller));
      if (controller) server.add(ControllerDefinition, createControllerService(ctx));
      if (node) server.add(NodeDefinition, createNodeService(ctx));
      await this.#removeStaleSocket();
      await server.listen(this.endpoint);
      this.#server = server;
      this.#logger.info({ endpoint: this.endpoint, volumes: store.volumes.size, snapshots: store.snapshots.size }, 'hostpath plugin started');
    } catch (err) {
      throw err instanceof BerthError ? err : new BerthError('HOSTPATH_START_FAILED', `hostpath plugin failed to start: ${describeError(err)}`, { cause: err });
    }
  }

  /**
   * Stops listening, waits for calls in flight and for the last state write,
   * and removes the socket. Safe to call twice and before start().
   */
  stop(): Promise<void> {
    return this.#life.stop(() => this.#stop());
  }

  async #stop(): Promise<void> {
    await this.#server?.shutdown();
    await this.#store?.flushed();
    if (this.#server) await unlink(this.#socketPath).catch(() => undefined);
    this.#logger.info('hostpath plugin stopped');
  }

  async #removeStaleSocket(): Promise<void> {
    try {
      const st = await lstat(this.#socketPath);
      if (!st.isSocket()) throw new BerthError('HOSTPATH_INVALID_OPTIONS', `${this.#socketPath} exists and is not a socket; not replacing it`);
      await unlink(this.#socketPath);
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err;
    }
  }

  #identity(controller: boolean): IdentityServiceImplementation {
    const capabilities: DeepPartial<PluginCapability>[] = [
      ...(controller ? [{ service: { type: ServiceType.CONTROLLER_SERVICE } }] : []),
      { service: { type: ServiceType.VOLUME_ACCESSIBILITY_CONSTRAINTS } },
      { volumeExpansion: { type: ExpansionType.ONLINE } },
    ];
    return {
      getPluginInfo: async () => ({ name: HOSTPATH_PLUGIN_NAME, vendorVersion: HOSTPATH_VERSION }),
      getPluginCapabilities: async () => ({ capabilities }),
      probe: async () => ({ ready: this.#life.state === 'running' }),
    };
  }

  /** Turns anything that is not already a gRPC status into INTERNAL, logged once here. */
  #errorMiddleware() {
    const log = this.#logger;
    return async function* guard<Req, Res>(call: ServerMiddlewareCall<Req, Res>, context: CallContext) {
      try {
        return yield* call.next(call.request, context);
      } catch (err) {
        if (err instanceof ServerError) {
          if (err.code === Status.INTERNAL) log.error({ method: call.method.path, err: err.details }, 'call failed');
          throw err;
        }
        log.error({ method: call.method.path, err: describeError(err) }, 'call failed');
        throw new ServerError(Status.INTERNAL, describeError(err));
      }
    };
  }
}

/**
 * Before every call, takes what other instances sharing the data directory
 * wrote to the controller file (one stat when nothing changed), so no call
 * acts on a stale copy: a volume created through another node is found.
 */
function refreshMiddleware(store: StateStore) {
  return async function* refresh<Req, Res>(call: ServerMiddlewareCall<Req, Res>, context: CallContext) {
    await store.refresh();
    return yield* call.next(call.request, context);
  };
}
