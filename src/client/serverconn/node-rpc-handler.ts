// Answers the calls the server makes on this node (src/structs/node-rpc.ts):
// controller calls go to the serving controller instance's CsiClient, node
// detach and expand to the node plugin's volume manager, which knows the
// paths and keeps the usage counts. Each call is sent once: the server owns
// the retries. Message bodies carry secrets and are never logged.

import type { CsiClient } from '../../csi/index.js';
import { anySignal, BerthError, describeError, SecretMap, silentLogger, type Logger } from '../../lib/index.js';
import type {
  CsiPluginType,
  NodeRpcMethod,
  NodeRpcParams,
  NodeRpcResult,
  NodeRpcRequest,
  NodeRpcResponse,
} from '../../structs/index.js';
import type { ClientStateStore } from '../state/index.js';
import { RecordedVolumes, takeMountInventory, unmountStray, type MountableVolume, type PluginMountRoot, type UnmountReport, type VolumeUsage } from '../volumes/index.js';
import { controllerCallHandlers, errorAnswer, type NodeRpcHandlers } from './controller-calls.js';

/** What the handler needs of the CSI manager (CsiManager has it all). */
export interface CsiPluginSource {
  /** The instance serving (id, type) once fingerprinted; waits for it until `signal` fires. */
  managerForPlugin(id: string, opts: { signal?: AbortSignal; type?: CsiPluginType }): Promise<{ client: CsiClient | undefined }>;
  /** The volume manager of node plugin `id`; throws when no healthy instance serves it. */
  volumeManagerFor(id: string): {
    unmountVolume(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts?: { signal?: AbortSignal; force?: boolean }): Promise<UnmountReport>;
    expand(
      volume: MountableVolume,
      allocId: string,
      usage: VolumeUsage,
      opts: { capacityRange: { requiredBytes?: number; limitBytes?: number }; secrets?: SecretMap; signal?: AbortSignal },
    ): Promise<{ capacityBytes: number }>;
  };
  /** The volume manager of node plugin `id` even when no instance serves it (a forced detach); throws when it has none. */
  volumeManagerForTeardown?(id: string): ReturnType<CsiPluginSource['volumeManagerFor']>;
  pluginReports(): { controller: Record<string, unknown>; node: Record<string, unknown> };
  /** Each node plugin's mount root on this host, for the mount inventory. Absent: no plugin mounts here. */
  mountRoots?(): PluginMountRoot[];
}

export interface NodeRpcHandlerOptions {
  csi: CsiPluginSource;
  /** The client state store holding the volume manager's publication records. */
  store: ClientStateStore;
  logger?: Logger;
  /** How long a controller call waits for a registered plugin's first fingerprint. Default 10 s. */
  pluginWaitMs?: number;
  /** The node's dynamic host volumes (the `hostvolume.*` calls); absent: those calls are refused. */
  hostVolumes?: HostVolumeCalls | undefined;
}

/** What the `hostvolume.*` calls need (HostVolumeManager has it). */
export interface HostVolumeCalls {
  create(p: NodeRpcParams<'hostvolume.create'>, opts: { signal?: AbortSignal }): Promise<NodeRpcResult<'hostvolume.create'>>;
  register(p: NodeRpcParams<'hostvolume.register'>): Promise<void>;
  delete(p: NodeRpcParams<'hostvolume.delete'>, opts: { signal?: AbortSignal }): Promise<void>;
}

export type NodeRpcHandlerErrorCode = 'CSI_PLUGIN_NOT_FOUND' | 'CSI_PLUGIN_UNHEALTHY' | 'CLIENT_VOLUME_NOT_MOUNTED' | 'CLIENT_HOST_VOLUMES_UNAVAILABLE';

/** A call this node cannot serve (plugin not here or not ready, nothing mounted). */
export class NodeRpcHandlerError extends BerthError<NodeRpcHandlerErrorCode> {
  readonly retryable: boolean;
  readonly final: boolean;

  constructor(code: NodeRpcHandlerErrorCode, message: string, opts: { retryable: boolean; final?: boolean }) {
    super(code, message);
    this.retryable = opts.retryable;
    this.final = opts.final ?? true;
  }
}

type Handlers = NodeRpcHandlers<NodeRpcMethod>;

/**
 * Serves the node-rpc methods. `handle` never throws: every failure becomes
 * an error answer. Safe to call concurrently (the volume manager serializes
 * calls per volume).
 */
export class NodeRpcHandler {
  readonly #csi: CsiPluginSource;
  readonly #recorded: RecordedVolumes;
  readonly #logger: Logger;
  readonly #pluginWaitMs: number;
  readonly #handlers: Handlers;
  readonly #hostVolumes: HostVolumeCalls | undefined;

  constructor(opts: NodeRpcHandlerOptions) {
    this.#hostVolumes = opts.hostVolumes;
    this.#csi = opts.csi;
    this.#recorded = new RecordedVolumes(opts.store);
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'node-rpc' });
    this.#pluginWaitMs = opts.pluginWaitMs ?? 10_000;
    this.#handlers = this.#makeHandlers();
  }

  /** Answers one request; resolves with the response to send. Never rejects. */
  async handle(req: NodeRpcRequest, opts: { signal?: AbortSignal } = {}): Promise<NodeRpcResponse> {
    const signal = opts.signal ?? new AbortController().signal;
    const handler = this.#handlers[req.method] as ((p: unknown, s: AbortSignal) => Promise<unknown>) | undefined;
    if (!handler) {
      return { id: req.id, error: { code: 'NODE_UNKNOWN_METHOD', message: `this node does not serve ${String(req.method)}`, final: true, retryable: false } };
    }
    try {
      const result = await handler(req.params, signal);
      this.#logger.debug({ method: req.method }, 'node call answered');
      return { id: req.id, result };
    } catch (err) {
      const error = errorAnswer(err);
      this.#logger.info({ method: req.method, code: error.code, err: error.message }, 'node call failed');
      return { id: req.id, error };
    }
  }

  async #controller(pluginId: string, signal: AbortSignal): Promise<CsiClient> {
    if (!(pluginId in this.#csi.pluginReports().controller)) {
      throw new NodeRpcHandlerError('CSI_PLUGIN_NOT_FOUND', `controller plugin ${pluginId} does not run on this node`, { retryable: true });
    }
    const wait = anySignal([signal, AbortSignal.timeout(this.#pluginWaitMs)]);
    let client: CsiClient | undefined;
    try {
      client = (await this.#csi.managerForPlugin(pluginId, { type: 'csi-controller', signal: wait })).client;
    } catch (err) {
      if (signal.aborted) throw err;
      throw new NodeRpcHandlerError('CSI_PLUGIN_UNHEALTHY', `controller plugin ${pluginId} is not ready on this node: ${describeError(err)}`, { retryable: true });
    }
    if (!client) throw new NodeRpcHandlerError('CSI_PLUGIN_UNHEALTHY', `controller plugin ${pluginId} has no connection yet`, { retryable: true });
    return client;
  }

  #hostVolumeCalls(): HostVolumeCalls {
    if (!this.#hostVolumes) throw new NodeRpcHandlerError('CLIENT_HOST_VOLUMES_UNAVAILABLE', 'this node does not serve dynamic host volumes', { retryable: false });
    return this.#hostVolumes;
  }

  #makeHandlers(): Handlers {
    return {
      // Controller calls: the shared node-rpc <-> CSI translation, on the serving controller instance.
      ...controllerCallHandlers((pluginId, signal) => this.#controller(pluginId, signal)),
      'csi.node.detach': async (p, s) => {
        const volume = { pluginId: p.pluginId, namespace: p.namespace, volumeId: p.berthVolumeId };
        const recs = this.#recorded.publications({ ...volume, allocId: p.allocId });
        // Stagings of the volume that no publication uses any more: an unstage is owed or in flight (the
        // allocation's own teardown may be running). Waiting for it keeps NodeUnstage before ControllerUnpublish.
        const orphans = this.#recorded.unusedStagings(volume);
        this.#logger.debug({ pluginId: p.pluginId, volumeId: p.berthVolumeId, allocId: p.allocId, publications: recs.length, stagings: orphans.length }, 'node detach');
        // Nothing recorded: nothing of this allocation is mounted here (never was, or already torn down).
        if (recs.length === 0 && orphans.length === 0) return { alreadyDone: true };
        const force = p.force === true;
        let vm: ReturnType<CsiPluginSource['volumeManagerFor']>;
        try {
          vm = this.#csi.volumeManagerFor(p.pluginId);
        } catch (err) {
          // Forced: no serving plugin does not stop the agent from unmounting itself.
          if (!force || !this.#csi.volumeManagerForTeardown) throw err;
          vm = this.#csi.volumeManagerForTeardown(p.pluginId);
        }
        const unmountedByAgent: UnmountReport['unmountedByAgent'] = [];
        for (const rec of recs) {
          unmountedByAgent.push(...(await vm.unmountVolume(rec.volume, rec.allocId, rec.usage, { signal: s, force })).unmountedByAgent);
        }
        // Serialized behind whatever holds the volume now; unstages only if still unused then.
        for (const st of orphans) unmountedByAgent.push(...(await vm.unmountVolume(st.volume, p.allocId, st.usage, { signal: s, force })).unmountedByAgent);
        return { alreadyDone: false, ...(unmountedByAgent.length > 0 ? { unmountedByAgent } : {}) };
      },
      'csi.node.expand': async (p, s) => {
        const rec = this.#recorded.publications({ pluginId: p.pluginId, namespace: p.namespace, volumeId: p.berthVolumeId })[0];
        if (!rec) {
          throw new NodeRpcHandlerError('CLIENT_VOLUME_NOT_MOUNTED', `volume ${p.berthVolumeId} is not mounted on this node`, { retryable: false });
        }
        return this.#csi.volumeManagerFor(p.pluginId).expand(rec.volume, rec.allocId, rec.usage, {
          capacityRange: p.capacityRange,
          secrets: new SecretMap(p.secrets),
          signal: s,
        });
      },
      'csi.node.inventory': async () => takeMountInventory(this.#recorded, this.#csi.mountRoots?.() ?? []),
      'hostvolume.create': async (p, s) => this.#hostVolumeCalls().create(p, { signal: s }),
      'hostvolume.register': async (p) => {
        await this.#hostVolumeCalls().register(p);
        return {};
      },
      'hostvolume.delete': async (p, s) => {
        await this.#hostVolumeCalls().delete(p, { signal: s });
        return {};
      },
      'csi.node.unmountStray': async (p) => {
        const result = await unmountStray(this.#recorded, this.#csi.mountRoots?.() ?? [], p.path);
        this.#logger.warn({ path: p.path, alreadyDone: result.alreadyDone }, 'unmounted a mount no record names (volume doctor)');
        return result;
      },
    };
  }
}
