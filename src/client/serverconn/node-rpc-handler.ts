// Answers the calls the server makes on this node (src/structs/node-rpc.ts):
// controller calls go to the serving controller instance's CsiClient, node
// detach and expand to the node plugin's volume manager, which knows the
// paths and keeps the usage counts. Each call is sent once: the server owns
// the retries. Message bodies carry secrets and are never logged.

import { capabilityFromRequest, CsiError, type CsiClient, type CapabilityRequest, type VolumeCapability } from '../../csi/index.js';
import { AbortedError, BerthError, describeError, SecretMap, silentLogger, type Logger } from '../../lib/index.js';
import type {
  CapabilityWire,
  CsiPluginType,
  NodeRpcError,
  NodeRpcMethod,
  NodeRpcMethods,
  NodeRpcRequest,
  NodeRpcResponse,
} from '../../structs/index.js';
import type { ClientStateStore } from '../state/index.js';
import { PUBLISH_BUCKET, STAGE_BUCKET, type MountableVolume, type PublishRecord, type StageRecord, type VolumeUsage } from '../volumes/index.js';

/** What the handler needs of the CSI manager (CsiManager has it all). */
export interface CsiPluginSource {
  /** The instance serving (id, type) once fingerprinted; waits for it until `signal` fires. */
  managerForPlugin(id: string, opts: { signal?: AbortSignal; type?: CsiPluginType }): Promise<{ client: CsiClient | undefined }>;
  /** The volume manager of node plugin `id`; throws when no healthy instance serves it. */
  mounterForPlugin(id: string): {
    unmountVolume(volume: MountableVolume, allocId: string, usage: VolumeUsage, opts?: { signal?: AbortSignal }): Promise<void>;
    expand(
      volume: MountableVolume,
      allocId: string,
      usage: VolumeUsage,
      opts: { capacityRange: { requiredBytes?: number; limitBytes?: number }; secrets?: SecretMap; signal?: AbortSignal },
    ): Promise<{ capacityBytes: number }>;
  };
  pluginReports(): { controller: Record<string, unknown>; node: Record<string, unknown> };
}

export interface NodeRpcHandlerOptions {
  csi: CsiPluginSource;
  /** The client state store holding the volume manager's publication records. */
  store: ClientStateStore;
  logger?: Logger;
  /** How long a controller call waits for a registered plugin's first fingerprint. Default 10 s. */
  pluginWaitMs?: number;
}

export type NodeRpcHandlerErrorCode = 'CSI_PLUGIN_NOT_FOUND' | 'CSI_PLUGIN_UNHEALTHY' | 'CLIENT_VOLUME_NOT_MOUNTED';

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

type Handlers = { [M in NodeRpcMethod]: (p: NodeRpcMethods[M]['params'], signal: AbortSignal) => Promise<NodeRpcMethods[M]['result']> };

const toCapability = (w: CapabilityWire): VolumeCapability => capabilityFromRequest(w as CapabilityRequest);

function toWire(c: VolumeCapability): CapabilityWire {
  return c.isBlock
    ? { accessMode: c.accessMode, attachmentMode: c.attachment }
    : { accessMode: c.accessMode, attachmentMode: c.attachment, fsType: c.fsType, mountFlags: [...c.revealMountFlags()] };
}

/** Turns any failure into the answer the server classifies (`CSI_<CODE>` with final/retryable for plugin errors). */
export function errorAnswer(err: unknown): NodeRpcError {
  if (err instanceof CsiError) return { code: err.code, message: err.message, final: err.final, retryable: err.retryable };
  if (err instanceof AbortedError) return { code: 'NODE_CALL_ABORTED', message: err.message, final: false, retryable: true };
  const e = err as { code?: unknown; retryable?: unknown; final?: unknown };
  return {
    code: err instanceof BerthError ? err.code : typeof e?.code === 'string' ? e.code : 'NODE_ERROR',
    message: describeError(err),
    ...(typeof e?.final === 'boolean' ? { final: e.final } : {}),
    ...(typeof e?.retryable === 'boolean' ? { retryable: e.retryable } : {}),
  };
}

/**
 * Serves the node-rpc methods. `handle` never throws: every failure becomes
 * an error answer. Safe to call concurrently (the volume manager serializes
 * calls per volume).
 */
export class NodeRpcHandler {
  readonly #csi: CsiPluginSource;
  readonly #store: ClientStateStore;
  readonly #logger: Logger;
  readonly #pluginWaitMs: number;
  readonly #handlers: Handlers;

  constructor(opts: NodeRpcHandlerOptions) {
    this.#csi = opts.csi;
    this.#store = opts.store;
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
    const wait = AbortSignal.any([signal, AbortSignal.timeout(this.#pluginWaitMs)]);
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

  /** The publication records of (plugin, Berth volume) on this node, optionally of one allocation. */
  #publications(pluginId: string, namespace: string, volumeId: string, allocId?: string): PublishRecord[] {
    return this.#store
      .bucket<PublishRecord>(PUBLISH_BUCKET)
      .list()
      .map((r) => r.value)
      .filter((r) => r.pluginId === pluginId && r.namespace === namespace && r.volumeId === volumeId && (allocId === undefined || r.allocId === allocId));
  }

  /** Staging records of (plugin, Berth volume) that no publication record uses. */
  #unusedStagings(pluginId: string, namespace: string, volumeId: string): StageRecord[] {
    const used = new Set(
      this.#store
        .bucket<PublishRecord>(PUBLISH_BUCKET)
        .list()
        .map((r) => r.value.stageKey)
        .filter((k): k is string => k !== undefined),
    );
    return this.#store
      .bucket<StageRecord>(STAGE_BUCKET)
      .list()
      .filter((r) => !used.has(r.key) && r.value.pluginId === pluginId && r.value.namespace === namespace && r.value.volumeId === volumeId)
      .map((r) => r.value);
  }

  #makeHandlers(): Handlers {
    const once = (signal: AbortSignal) => ({ retry: false as const, signal });
    return {
      'csi.controller.publish': async (p, s) =>
        (await this.#controller(p.pluginId, s)).controllerPublishVolume(
          {
            volumeId: p.volumeId,
            nodeId: p.nodeId,
            volumeCapability: toCapability(p.capability),
            readonly: p.readonly,
            secrets: new SecretMap(p.secrets),
            volumeContext: p.volumeContext,
          },
          once(s),
        ),
      'csi.controller.unpublish': async (p, s) =>
        (await this.#controller(p.pluginId, s)).controllerUnpublishVolume(
          { volumeId: p.volumeId, nodeId: p.nodeId, secrets: new SecretMap(p.secrets) },
          once(s),
        ),
      'csi.controller.validate': async (p, s) => {
        const answer = await (await this.#controller(p.pluginId, s)).validateVolumeCapabilities(
          {
            volumeId: p.volumeId,
            volumeContext: p.volumeContext,
            volumeCapabilities: p.capabilities.map(toCapability),
            parameters: p.parameters,
            secrets: new SecretMap(p.secrets),
          },
          once(s),
        );
        return {
          message: answer.message,
          ...(answer.confirmed
            ? {
                confirmed: {
                  volumeContext: answer.confirmed.volumeContext,
                  capabilities: answer.confirmed.volumeCapabilities.map(toWire),
                  parameters: answer.confirmed.parameters,
                  mutableParameters: answer.confirmed.mutableParameters,
                },
              }
            : {}),
        };
      },
      'csi.controller.create': async (p, s) => ({
        volume: await (await this.#controller(p.pluginId, s)).createVolume(
          {
            name: p.name,
            capacityRange: p.capacityRange,
            volumeCapabilities: p.capabilities.map(toCapability),
            parameters: p.parameters,
            secrets: new SecretMap(p.secrets),
            ...(p.contentSource ? { contentSource: p.contentSource } : {}),
            ...(p.accessibilityRequirements ? { accessibilityRequirements: p.accessibilityRequirements } : {}),
          },
          once(s),
        ),
      }),
      'csi.controller.delete': async (p, s) =>
        (await this.#controller(p.pluginId, s)).deleteVolume(p.volumeId, { ...once(s), secrets: new SecretMap(p.secrets) }),
      'csi.controller.createSnapshot': async (p, s) => ({
        snapshot: await (await this.#controller(p.pluginId, s)).createSnapshot(
          { sourceVolumeId: p.sourceVolumeId, name: p.name, parameters: p.parameters, secrets: new SecretMap(p.secrets) },
          once(s),
        ),
      }),
      'csi.controller.deleteSnapshot': async (p, s) =>
        (await this.#controller(p.pluginId, s)).deleteSnapshot(p.snapshotId, { ...once(s), secrets: new SecretMap(p.secrets) }),
      'csi.controller.listSnapshots': async (p, s) =>
        (await this.#controller(p.pluginId, s)).listSnapshots(
          {
            ...(p.sourceVolumeId ? { sourceVolumeId: p.sourceVolumeId } : {}),
            ...(p.snapshotId ? { snapshotId: p.snapshotId } : {}),
            ...(p.maxEntries ? { maxEntries: p.maxEntries } : {}),
            ...(p.startingToken ? { startingToken: p.startingToken } : {}),
            secrets: new SecretMap(p.secrets),
          },
          once(s),
        ),
      'csi.controller.expand': async (p, s) =>
        (await this.#controller(p.pluginId, s)).controllerExpandVolume(
          {
            volumeId: p.volumeId,
            capacityRange: p.capacityRange,
            secrets: new SecretMap(p.secrets),
            ...(p.capability ? { volumeCapability: toCapability(p.capability) } : {}),
          },
          once(s),
        ),
      'csi.controller.listVolumes': async (p, s) =>
        (await this.#controller(p.pluginId, s)).listVolumes(
          { ...(p.maxEntries ? { maxEntries: p.maxEntries } : {}), ...(p.startingToken ? { startingToken: p.startingToken } : {}) },
          once(s),
        ),
      'csi.node.detach': async (p, s) => {
        const recs = this.#publications(p.pluginId, p.namespace, p.berthVolumeId, p.allocId);
        // Stagings of the volume that no publication uses any more: an unstage is owed or in flight (the
        // allocation's own teardown may be running). Waiting for it keeps NodeUnstage before ControllerUnpublish.
        const orphans = this.#unusedStagings(p.pluginId, p.namespace, p.berthVolumeId);
        this.#logger.debug({ pluginId: p.pluginId, volumeId: p.berthVolumeId, allocId: p.allocId, publications: recs.length, stagings: orphans.length }, 'node detach');
        // Nothing recorded: nothing of this allocation is mounted here (never was, or already torn down).
        if (recs.length === 0 && orphans.length === 0) return { alreadyDone: true };
        const vm = this.#csi.mounterForPlugin(p.pluginId);
        for (const rec of recs) {
          await vm.unmountVolume(volumeOf(rec), rec.allocId, usageOf(rec), { signal: s });
        }
        // Serialized behind whatever holds the volume now; unstages only if still unused then.
        for (const st of orphans) await vm.unmountVolume(volumeOf(st), p.allocId, usageOf(st), { signal: s });
        return { alreadyDone: false };
      },
      'csi.node.expand': async (p, s) => {
        const rec = this.#publications(p.pluginId, p.namespace, p.berthVolumeId)[0];
        if (!rec) {
          throw new NodeRpcHandlerError('CLIENT_VOLUME_NOT_MOUNTED', `volume ${p.berthVolumeId} is not mounted on this node`, { retryable: false });
        }
        return this.#csi.mounterForPlugin(p.pluginId).expand(volumeOf(rec), rec.allocId, usageOf(rec), {
          capacityRange: p.capacityRange,
          secrets: new SecretMap(p.secrets),
          signal: s,
        });
      },
    };
  }
}

function volumeOf(rec: PublishRecord | StageRecord): MountableVolume {
  return { id: rec.volumeId, namespace: rec.namespace, externalId: rec.externalId, volumeContext: rec.volumeContext };
}

/** The usage a publication was made with, rebuilt from its record (the same usage key, hence the same paths). */
function usageOf(rec: PublishRecord | StageRecord): VolumeUsage {
  const { fsType, volumeMountGroup } = rec.capability;
  return {
    readOnly: rec.readOnly,
    accessMode: rec.capability.accessMode,
    attachmentMode: rec.capability.attachmentMode,
    ...(fsType || volumeMountGroup ? { mountOptions: { ...(fsType ? { fsType } : {}), ...(volumeMountGroup ? { volumeMountGroup } : {}) } } : {}),
  };
}
