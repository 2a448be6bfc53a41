import { randomUUID } from 'node:crypto';
import { AbortedError, silentLogger, type Logger } from '../../lib/index.js';
import type {
  NodeRpcMethod,
  NodeRpcParams,
  NodeRpcRequest,
  NodeRpcResponse,
  NodeRpcResult,
} from '../../structs/index.js';
import { NodeRpcCallError } from './errors.js';

/**
 * One open connection to a node agent, whatever carries it (a WebSocket in
 * production, an in-process object in tests). `send` must not throw for a
 * closed peer; the owner calls `NodeConnections.detach` when it closes.
 */
export interface NodeTransport {
  send(msg: NodeRpcRequest): void;
  close(): void;
}

export interface CallOpts {
  signal?: AbortSignal;
  /** No answer by then fails with NODE_TIMEOUT (uncertain). Default 30 s. */
  timeoutMs?: number;
}

interface Pending {
  nodeId: string;
  method: string;
  transport: NodeTransport;
  resolve: (result: unknown) => void;
  reject: (err: Error) => void;
}

const DEFAULT_TIMEOUT_MS = 30_000;

export interface NodeConnectionsOptions {
  logger?: Logger;
}

/**
 * The table of open node connections and the calls in flight on them.
 * Transport-agnostic: the owner of a connection `attach`es it, feeds every
 * message the node sends to `receive`, and `detach`es it when it closes.
 * Message bodies are never logged (they carry secrets).
 */
export class NodeConnections {
  readonly #logger: Logger;
  readonly #transports = new Map<string, NodeTransport>();
  readonly #pending = new Map<string, Pending>();
  readonly #listeners = new Set<(nodeId: string, connected: boolean) => void>();

  constructor(opts: NodeConnectionsOptions = {}) {
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'node-connections' });
  }

  /**
   * Makes `transport` the node's connection. A previous connection of the
   * same node is closed, and its calls in flight fail with NODE_UNREACHABLE.
   */
  attach(nodeId: string, transport: NodeTransport): void {
    const old = this.#transports.get(nodeId);
    this.#transports.set(nodeId, transport);
    if (old && old !== transport) {
      this.#failCalls(old, 'its connection was replaced');
      old.close();
    }
    this.#logger.info({ nodeId }, 'node connected');
    for (const l of this.#listeners) l(nodeId, true);
  }

  /**
   * Forgets the node's connection if it is still `transport` (a late detach
   * of a replaced connection does nothing to the new one). Calls in flight on
   * it fail with NODE_UNREACHABLE. Safe to call twice.
   */
  detach(nodeId: string, transport: NodeTransport): void {
    this.#failCalls(transport, 'its connection closed');
    if (this.#transports.get(nodeId) !== transport) return;
    this.#transports.delete(nodeId);
    this.#logger.info({ nodeId }, 'node disconnected');
    for (const l of this.#listeners) l(nodeId, false);
  }

  /** Whether the node has an open connection now. */
  connected(nodeId: string): boolean {
    return this.#transports.has(nodeId);
  }

  /** IDs of the nodes with an open connection. */
  connectedNodes(): string[] {
    return [...this.#transports.keys()];
  }

  /** Calls `fn` whenever a node connects or disconnects; returns the unsubscribe function. */
  onChange(fn: (nodeId: string, connected: boolean) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * Feeds a message the node sent. Answers to unknown (timed out, cancelled)
   * calls are dropped. Never throws on malformed input; logs it.
   */
  receive(nodeId: string, msg: unknown): void {
    const m = msg as Partial<NodeRpcResponse> | null;
    const id = m && typeof m === 'object' && typeof m.id === 'string' ? m.id : undefined;
    const pending = id ? this.#pending.get(id) : undefined;
    if (!id || !pending || pending.nodeId !== nodeId) {
      this.#logger.warn({ nodeId }, 'dropped an answer to no call in flight');
      return;
    }
    this.#pending.delete(id);
    if ('error' in m! && m.error) {
      const e = m.error;
      pending.reject(
        NodeRpcCallError.fromAnswer(nodeId, pending.method, {
          code: typeof e.code === 'string' ? e.code : 'NODE_ERROR',
          message: typeof e.message === 'string' ? e.message : 'the node gave no message',
          ...(typeof e.final === 'boolean' ? { final: e.final } : {}),
          ...(typeof e.retryable === 'boolean' ? { retryable: e.retryable } : {}),
        }),
      );
    } else pending.resolve((m as { result?: unknown }).result);
  }

  /**
   * Calls `method` on the node and resolves with its result. Fails at once
   * with NodeRpcCallError NODE_UNREACHABLE (retryable, final: nothing was
   * sent) when the node has no connection; NODE_UNREACHABLE (uncertain) when
   * it goes away mid-call; NODE_TIMEOUT (uncertain) after `timeoutMs`;
   * AbortedError when `signal` fires; the node's own error otherwise.
   */
  call<M extends NodeRpcMethod>(nodeId: string, method: M, params: NodeRpcParams<M>, opts: CallOpts = {}): Promise<NodeRpcResult<M>> {
    const transport = this.#transports.get(nodeId);
    if (!transport) {
      return Promise.reject(
        new NodeRpcCallError(nodeId, method, 'NODE_UNREACHABLE', `node ${nodeId} is not connected to this server`, {
          final: true,
          retryable: true,
        }),
      );
    }
    const { signal } = opts;
    if (signal?.aborted) return Promise.reject(new AbortedError(`${method} on node ${nodeId} aborted`, { cause: signal.reason }));
    const id = randomUUID();
    return new Promise<NodeRpcResult<M>>((resolve, reject) => {
      const cleanup = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#pending.delete(id);
      };
      const onAbort = (): void => {
        cleanup();
        reject(new AbortedError(`${method} on node ${nodeId} aborted`, { cause: signal?.reason }));
      };
      const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
      const timer = setTimeout(() => {
        cleanup();
        reject(
          new NodeRpcCallError(nodeId, method, 'NODE_TIMEOUT', `node ${nodeId} did not answer ${method} within ${timeoutMs} ms`, {
            final: false,
            retryable: true,
          }),
        );
      }, timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        nodeId,
        method,
        transport,
        resolve: (r) => {
          cleanup();
          resolve(r as NodeRpcResult<M>);
        },
        reject: (e) => {
          cleanup();
          reject(e);
        },
      });
      try {
        transport.send({ id, method, params });
      } catch (err) {
        this.#pending.get(id)?.reject(
          new NodeRpcCallError(nodeId, method, 'NODE_UNREACHABLE', `sending ${method} to node ${nodeId} failed`, {
            final: false,
            retryable: true,
            cause: err,
          }),
        );
      }
    });
  }

  /** Closes every connection and fails every call in flight. Safe to call twice. */
  closeAll(): void {
    for (const [nodeId, t] of [...this.#transports]) {
      this.detach(nodeId, t);
      t.close();
    }
  }

  #failCalls(transport: NodeTransport, why: string): void {
    for (const p of [...this.#pending.values()]) {
      if (p.transport !== transport) continue;
      p.reject(
        new NodeRpcCallError(p.nodeId, p.method, 'NODE_UNREACHABLE', `node ${p.nodeId} went away during ${p.method}: ${why}`, {
          final: false,
          retryable: true,
        }),
      );
    }
  }
}
