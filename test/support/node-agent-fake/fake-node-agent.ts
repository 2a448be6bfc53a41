// A fake node agent for tests and benchmarks: the node side of a
// NodeConnections transport, in-process, answering every server-to-node
// method by calling a real CsiClient against a real plugin socket (usually a
// FakePlugin, for fault injection). Controller calls go through the node
// agent's own translation (controllerCallHandlers of src/client/serverconn);
// only the node calls differ: no volume manager here, the paths are derived.

import { createHash } from 'node:crypto';
import { capabilityFromWire, controllerCallHandlers, errorAnswer, type NodeRpcHandlers } from '../../../src/client/serverconn/index.js';
import { CsiClient } from '../../../src/csi/index.js';
import { SecretMap } from '../../../src/lib/index.js';
import type { NodeRpcMethod, NodeRpcMethods, NodeRpcRequest, NodeRpcResponse, CsiPluginReport, NodeFingerprint } from '../../../src/structs/index.js';
import type { NodeConnections, NodeTransport } from '../../../src/server/noderpc/index.js';

export interface FakeNodeAgentOptions {
  nodeId: string;
  connections: NodeConnections;
  /** Plugin ID -> the plugin's CSI endpoint on this node. */
  plugins: Record<string, string>;
  /** The allocation each plugin "runs in", for its reports. Default `alloc-<pluginId>-<nodeId>`. */
  pluginAllocs?: Record<string, string>;
  /** Which parts of a plugin this node runs. Default: whatever the plugin serves. */
  roles?: Record<string, ReadonlyArray<'controller' | 'node'>>;
  /** Root of the staging/target paths the agent would use. Default `/berth-fake-agent/<nodeId>`. */
  root?: string;
}

/** A call the agent received (params as sent; tests must not print them: they hold secrets). */
export interface AgentCall {
  method: NodeRpcMethod;
  params: Record<string, unknown>;
}

type Handlers = NodeRpcHandlers<NodeRpcMethod>;

/**
 * Lifecycle: `connect()` attaches a transport to `connections`,
 * `disconnect()` detaches it (calls in flight on the server side fail);
 * `pause()` makes the agent hold every answer until `resume()`.
 */
export class FakeNodeAgent {
  readonly nodeId: string;
  readonly calls: AgentCall[] = [];
  readonly #connections: NodeConnections;
  readonly #clients = new Map<string, CsiClient>();
  readonly #root: string;
  readonly #pluginAllocs: Record<string, string>;
  readonly #roles: Record<string, ReadonlyArray<'controller' | 'node'>>;
  #transport: NodeTransport | undefined;
  #held: Array<() => void> | undefined;
  readonly #handlers: Handlers;

  constructor(opts: FakeNodeAgentOptions) {
    this.nodeId = opts.nodeId;
    this.#connections = opts.connections;
    this.#root = opts.root ?? `/berth-fake-agent/${opts.nodeId}`;
    this.#pluginAllocs = { ...opts.pluginAllocs };
    this.#roles = { ...opts.roles };
    for (const [id, endpoint] of Object.entries(opts.plugins)) this.#clients.set(id, new CsiClient({ endpoint }));
    this.#handlers = this.#makeHandlers();
  }

  get connected(): boolean {
    return this.#transport !== undefined;
  }

  connect(): void {
    if (this.#transport) return;
    const transport: NodeTransport = {
      send: (msg) => void this.#handle(transport, msg),
      close: () => {
        if (this.#transport === transport) this.#transport = undefined;
      },
    };
    this.#transport = transport;
    this.#connections.attach(this.nodeId, transport);
  }

  disconnect(): void {
    const t = this.#transport;
    if (!t) return;
    this.#transport = undefined;
    this.#connections.detach(this.nodeId, t);
  }

  pause(): void {
    this.#held ??= [];
  }

  resume(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const release of held) release();
  }

  /**
   * The node's fingerprint as a real agent would send it: each plugin
   * fingerprinted through its CsiClient, reported as a controller when it
   * runs the controller service and as a node plugin when it answers
   * NodeGetInfo. `unhealthy` marks plugins as reported unhealthy.
   */
  async fingerprint(opts: { unhealthy?: readonly string[]; name?: string; now?: number } = {}): Promise<NodeFingerprint> {
    const controllers: Record<string, CsiPluginReport> = {};
    const nodes: Record<string, CsiPluginReport> = {};
    for (const [pluginId, client] of this.#clients) {
      const fp = await client.fingerprint({ node: true });
      const healthy = !opts.unhealthy?.includes(pluginId);
      const report = (type: 'csi-controller' | 'csi-node'): CsiPluginReport => ({
        pluginId,
        type,
        allocId: this.#pluginAllocs[pluginId] ?? `alloc-${pluginId}-${this.nodeId}`,
        healthy,
        healthReason: healthy ? 'healthy' : 'probe failed: not ready',
        provider: fp.info.name,
        version: fp.info.vendorVersion,
        fingerprint: fp,
        updatedAt: opts.now ?? 0,
      });
      const roles = this.#roles[pluginId] ?? ['controller', 'node'];
      if (roles.includes('controller') && fp.capabilities.services.includes('CONTROLLER_SERVICE')) controllers[pluginId] = report('csi-controller');
      if (roles.includes('node') && fp.node) nodes[pluginId] = report('csi-node');
    }
    return {
      name: opts.name ?? this.nodeId,
      datacenter: 'dc1',
      httpAddr: '',
      drivers: { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', 'none'] } },
      resources: { cpuMhz: 4000, memoryMb: 8192 },
      attributes: {},
      csiControllerPlugins: controllers,
      csiNodePlugins: nodes,
    };
  }

  /** The calls of one method so far. */
  callsOf<M extends NodeRpcMethod>(method: M): Array<NodeRpcMethods[M]['params']> {
    return this.calls.filter((c) => c.method === method).map((c) => c.params as unknown as NodeRpcMethods[M]['params']);
  }

  async close(): Promise<void> {
    this.disconnect();
    this.resume();
    await Promise.all([...this.#clients.values()].map((c) => c.close()));
  }

  async #handle(transport: NodeTransport, msg: NodeRpcRequest): Promise<void> {
    this.calls.push({ method: msg.method, params: msg.params as Record<string, unknown> });
    let answer: NodeRpcResponse;
    try {
      const handler = this.#handlers[msg.method] as ((p: unknown, s: AbortSignal) => Promise<unknown>) | undefined;
      if (!handler) throw Object.assign(new Error(`unknown method ${msg.method}`), { code: 'NODE_UNKNOWN_METHOD' });
      answer = { id: msg.id, result: await handler(msg.params, new AbortController().signal) };
    } catch (err) {
      answer = { id: msg.id, error: errorAnswer(err) };
    }
    if (this.#held) await new Promise<void>((r) => this.#held!.push(r));
    // A connection that closed meanwhile never delivers its answers.
    if (this.#transport !== transport) return;
    this.#connections.receive(this.nodeId, answer);
  }

  #client(pluginId: string): CsiClient {
    const c = this.#clients.get(pluginId);
    if (!c) throw Object.assign(new Error(`plugin ${pluginId} does not run on node ${this.nodeId}`), { code: 'PLUGIN_NOT_FOUND' });
    return c;
  }

  #paths(pluginId: string, namespace: string, volumeId: string, allocId: string): { staging: string; target: string } {
    const h = createHash('sha256').update(`${namespace}\u0000${volumeId}`).digest('hex').slice(0, 16);
    return {
      staging: `${this.#root}/${pluginId}/staging/${h}`,
      target: `${this.#root}/${pluginId}/per-alloc/${allocId}/${h}`,
    };
  }

  #makeHandlers(): Handlers {
    const once = { retry: false as const };
    return {
      ...controllerCallHandlers(async (pluginId) => this.#client(pluginId)),
      'csi.node.detach': async (p) => {
        const client = this.#client(p.pluginId);
        const { staging, target } = this.#paths(p.pluginId, p.namespace, p.berthVolumeId, p.allocId);
        const unpublished = await client.nodeUnpublishVolume(p.volumeId, target, once);
        const caps = await client.nodeGetCapabilities(once);
        if (!caps.includes('STAGE_UNSTAGE_VOLUME')) return unpublished;
        const unstaged = await client.nodeUnstageVolume(p.volumeId, staging, once);
        return { alreadyDone: unpublished.alreadyDone && unstaged.alreadyDone };
      },
      'csi.node.expand': async (p) => {
        const { target } = this.#paths(p.pluginId, p.namespace, p.berthVolumeId, 'expand');
        return this.#client(p.pluginId).nodeExpandVolume(
          {
            volumeId: p.volumeId,
            volumePath: target,
            capacityRange: p.capacityRange,
            secrets: new SecretMap(p.secrets),
            ...(p.capability ? { volumeCapability: capabilityFromWire(p.capability) } : {}),
          },
          once,
        );
      },
      // This agent mounts nothing and keeps no records: its books and its kernel always agree.
      'csi.node.inventory': async () => ({ records: [], strayMounts: [] }),
      'csi.node.unmountStray': async () => ({ alreadyDone: true }),
      // This agent has no host volume plugins.
      'hostvolume.create': async () => {
        throw Object.assign(new Error('this node does not serve dynamic host volumes'), { code: 'CLIENT_HOST_VOLUMES_UNAVAILABLE' });
      },
      'hostvolume.register': async () => {
        throw Object.assign(new Error('this node does not serve dynamic host volumes'), { code: 'CLIENT_HOST_VOLUMES_UNAVAILABLE' });
      },
      'hostvolume.delete': async () => {
        throw Object.assign(new Error('this node does not serve dynamic host volumes'), { code: 'CLIENT_HOST_VOLUMES_UNAVAILABLE' });
      },
    };
  }
}
