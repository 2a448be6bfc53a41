import type { Topology } from '../../csi/index.js';
import { silentLogger, type Logger } from '../../lib/index.js';
import type { NodeRpcMethod, NodeRpcParams, NodeRpcResult } from '../../structs/index.js';
import { NodeRpcCallError, type NodeConnections } from '../noderpc/index.js';
import { rowKey, type StateStore } from '../state/index.js';
import { KeyedSerial } from './_serial.js';
import { VolumeError, type VolumeErrorCode } from './errors.js';

export interface ControllerRouterOptions {
  store: StateStore;
  connections: NodeConnections;
  logger?: Logger;
  /** Deadline of one call on one controller. Default 60 s. */
  callTimeoutMs?: number;
}

/** The outcome of a routed call that failed on every controller. */
export class ControllerCallError extends VolumeError {
  /** True when some attempt may have happened (its negation is owed on teardown). */
  readonly uncertain: boolean;
  /** The last error a controller answered with, e.g. CSI_FAILED_PRECONDITION. */
  readonly lastCode: string;

  constructor(code: VolumeErrorCode, message: string, opts: { retryable: boolean; uncertain: boolean; lastCode: string; cause?: unknown }) {
    super(code, message, { retryable: opts.retryable, cause: opts.cause });
    this.uncertain = opts.uncertain;
    this.lastCode = opts.lastCode;
  }
}

/**
 * Sends controller calls of a plugin to a node that runs a healthy controller
 * instance of it and is connected, one call at a time per plugin. A call
 * that fails with a retryable error (the node went away, UNAVAILABLE,
 * DEADLINE_EXCEEDED, ABORTED...) moves on to the next controller; a final
 * error (FAILED_PRECONDITION, INVALID_ARGUMENT, NOT_FOUND...) is returned at
 * once. Controllers on nodes inside the volume's topology are tried first
 * (a plugin whose volumes live on one node, like hostpath, knows them only
 * there); among equals, the controller that last succeeded goes first.
 */
export class ControllerRouter {
  readonly #store: StateStore;
  readonly #connections: NodeConnections;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  readonly #serial = new KeyedSerial();
  readonly #preferred = new Map<string, string>();

  constructor(opts: ControllerRouterOptions) {
    this.#store = opts.store;
    this.#connections = opts.connections;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'controller-router' });
    this.#timeoutMs = opts.callTimeoutMs ?? 60_000;
  }

  /**
   * Node IDs that could serve a controller call of the plugin now, in the
   * order they would be tried. `topology`: where the volume lives (its
   * accessible topology, or the topology it was asked for); nodes whose node
   * plugin reports a matching segment come first.
   */
  candidates(pluginId: string, topology: readonly Topology[] = []): string[] {
    const snap = this.#store.snapshot();
    const plugin = snap.get('plugins', rowKey(pluginId));
    if (!plugin) return [];
    const ids = Object.values(plugin.controllers)
      .filter((c) => c.healthy && snap.get('nodes', rowKey(c.nodeId))?.status === 'ready' && this.#connections.connected(c.nodeId))
      .map((c) => c.nodeId)
      .sort();
    const first = this.#preferred.get(pluginId);
    const ordered = first && ids.includes(first) ? [first, ...ids.filter((i) => i !== first)] : ids;
    const segments = topology.filter((t) => Object.keys(t).length > 0);
    if (segments.length === 0) return ordered;
    const inside = (nodeId: string): boolean => {
      const own = snap.get('nodes', rowKey(nodeId))?.csiNodePlugins[pluginId]?.fingerprint?.node?.info.accessibleTopology;
      return own !== undefined && segments.some((seg) => Object.entries(seg).every(([k, v]) => own[k] === v));
    };
    return [...ordered.filter(inside), ...ordered.filter((id) => !inside(id))];
  }

  /**
   * Calls `method` on a controller of `pluginId` (serialized per plugin).
   * Throws ControllerCallError: UNAVAILABLE (retryable) when no controller
   * is reachable or all failed retryably; for a final plugin error, a code
   * mapped from it (CONFLICT for FAILED_PRECONDITION / ALREADY_EXISTS,
   * NOT_FOUND, INVALID for INVALID_ARGUMENT / OUT_OF_RANGE /
   * UNIMPLEMENTED and for a request the node's CSI client refused to send
   * (CSI_BAD_REQUEST: a size limit), UNAVAILABLE otherwise) with the
   * plugin's message.
   */
  call<M extends NodeRpcMethod>(
    pluginId: string,
    method: M,
    params: NodeRpcParams<M>,
    opts: { signal?: AbortSignal; topology?: readonly Topology[] } = {},
  ): Promise<NodeRpcResult<M>> {
    return this.#serial.run(pluginId, async () => {
      const nodes = this.candidates(pluginId, opts.topology);
      if (nodes.length === 0) {
        throw new ControllerCallError('UNAVAILABLE', `no healthy controller of plugin ${pluginId} is connected`, {
          retryable: true,
          uncertain: false,
          lastCode: 'NO_CONTROLLER',
        });
      }
      let uncertain = false;
      let last: NodeRpcCallError | undefined;
      for (const nodeId of nodes) {
        try {
          const result = await this.#connections.call(nodeId, method, params, { timeoutMs: this.#timeoutMs, ...(opts.signal ? { signal: opts.signal } : {}) });
          this.#preferred.set(pluginId, nodeId);
          return result;
        } catch (err) {
          if (!(err instanceof NodeRpcCallError)) throw err;
          last = err;
          uncertain ||= err.uncertain;
          if (!err.retryable) throw finalError(pluginId, err, uncertain);
          this.#logger.warn({ pluginId, nodeId, method, code: err.code }, 'controller call failed; trying the next controller');
        }
      }
      throw new ControllerCallError(
        'UNAVAILABLE',
        `every controller of plugin ${pluginId} failed ${method}; last: ${last?.message ?? 'unknown'}`,
        { retryable: true, uncertain, lastCode: last?.code ?? 'UNKNOWN', cause: last },
      );
    });
  }
}

function finalError(pluginId: string, err: NodeRpcCallError, uncertain: boolean): ControllerCallError {
  const code =
    err.code === 'CSI_FAILED_PRECONDITION' || err.code === 'CSI_ALREADY_EXISTS'
      ? 'CONFLICT'
      : err.code === 'CSI_NOT_FOUND'
        ? 'NOT_FOUND'
        : err.code === 'CSI_INVALID_ARGUMENT' || err.code === 'CSI_OUT_OF_RANGE' || err.code === 'CSI_UNIMPLEMENTED' || err.code === 'CSI_BAD_REQUEST'
          ? 'INVALID'
          : 'UNAVAILABLE';
  return new ControllerCallError(code, `plugin ${pluginId}: ${err.message}`, {
    retryable: err.code === 'CSI_FAILED_PRECONDITION',
    uncertain: uncertain || err.uncertain,
    lastCode: err.code,
    cause: err,
  });
}
