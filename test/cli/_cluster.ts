// A real Server on a temporary directory and an ephemeral port, for driving
// the real `berth` binary against it, plus a stand-in node agent that speaks
// the node endpoints over HTTP with a node token (registration, its
// allocations, status reports, volume claims).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Server, type ApiToken } from '../../src/server/index.js';
import type { Allocation, Node } from '../../src/structs/index.js';
import { berth, type BerthResult } from './_berth.js';

export const TOKENS = {
  management: 'cli-mgmt-token-0123456789',
  readOnly: 'cli-read-token-0123456789',
  node: 'cli-node-token-0123456789',
} as const;

const API_TOKENS: ApiToken[] = [
  { name: 'ops', secret: TOKENS.management, role: 'management' },
  { name: 'viewer', secret: TOKENS.readOnly, role: 'read-only' },
  { name: 'agents', secret: TOKENS.node, role: 'node' },
];

export interface Cluster {
  server: Server;
  url: string;
  /** Runs `berth ...args` against the server (BERTH_ADDR and the management token in the environment). */
  cli(args: readonly string[], opts?: { token?: string | null; env?: Record<string, string> }): Promise<BerthResult>;
  /** A request to the API as `token` (default management). Throws on a non-2xx answer unless `allowError`. */
  call<T = unknown>(method: string, path: string, opts?: { body?: unknown; token?: string; allowError?: boolean }): Promise<{ status: number; body: T; text: string }>;
  /** Registers a node with raw_exec and, optionally, a healthy node plugin (no controller). */
  registerNode(name: string, opts?: { nodePlugin?: string }): Promise<Node>;
  /** One heartbeat of the node, as its agent sends them. */
  heartbeat(nodeId: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the server. Its stand-in nodes never heartbeat unless a test sends
 * them (`heartbeat`): by default a TTL far longer than any test keeps them
 * ready however slowly a loaded machine runs the CLI; a test that takes a
 * node down passes a short one.
 */
export async function startCluster(opts: { heartbeatTtlMs?: number } = {}): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-cli-'));
  const server = new Server({ dataDir: dir, tokens: API_TOKENS, eventHeartbeatMs: 200, nodeCallTimeoutMs: 5_000, heartbeatTtlMs: opts.heartbeatTtlMs ?? 60 * 60_000, heartbeatGraceMs: 1_000 });
  const { url } = await server.start();
  const call: Cluster['call'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${o.token ?? TOKENS.management}`, accept: 'application/json' };
    if (o.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(url + path, { method, headers, ...(o.body !== undefined ? { body: JSON.stringify(o.body) } : {}) });
    const text = await res.text();
    if (!res.ok && !o.allowError) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: body as never, text };
  };
  return {
    server,
    url,
    call,
    cli(args, o = {}) {
      const env: Record<string, string> = { BERTH_ADDR: url, NO_COLOR: '1', ...(o.env ?? {}) };
      const token = o.token === undefined ? TOKENS.management : o.token;
      if (token !== null) env['BERTH_TOKEN'] = token;
      return berth(args, { env, timeoutMs: 30_000 });
    },
    async registerNode(name, o = {}) {
      const now = Date.now();
      const plugins = o.nodePlugin
        ? {
            [o.nodePlugin]: {
              pluginId: o.nodePlugin,
              type: 'csi-node',
              allocId: '',
              healthy: true,
              healthReason: 'probe ok',
              provider: 'hostpath.csi.berth.dev',
              version: '1.0.0',
              updatedAt: now,
              fingerprint: {
                info: { name: 'hostpath.csi.berth.dev', vendorVersion: '1.0.0', manifest: {} },
                capabilities: { services: [], volumeExpansion: [] },
                node: { capabilities: ['STAGE_UNSTAGE_VOLUME'], info: { nodeId: `${name}-csi`, maxVolumesPerNode: 0 } },
              },
            },
          }
        : {};
      const fingerprint = {
        name,
        datacenter: 'dc1',
        httpAddr: '',
        drivers: { raw_exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', 'none'] } },
        resources: { cpuMhz: 4000, memoryMb: 4096 },
        attributes: {},
        csiControllerPlugins: {},
        csiNodePlugins: plugins,
      };
      const { body } = await call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint } });
      return body.node;
    },
    async heartbeat(nodeId) {
      await call('POST', `/v1/node/${nodeId}/heartbeat`, { token: TOKENS.node, body: {} });
    },
    async close() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Reports every allocation of `nodeId` that wants to run as `status` (what a node agent does once tasks start). */
export async function reportAllocations(cluster: Cluster, nodeId: string, status: 'running' | 'complete' | 'failed', filter: (a: Allocation) => boolean = () => true): Promise<Allocation[]> {
  const { body } = await cluster.call<Allocation[]>('GET', `/v1/internal/node/${nodeId}/allocations`, { token: TOKENS.node });
  const mine = body.filter((a) => a.desiredStatus === 'run' && a.clientStatus !== status && filter(a));
  if (mine.length) {
    await cluster.call('POST', `/v1/internal/node/${nodeId}/allocations`, {
      token: TOKENS.node,
      body: { allocations: mine.map((a) => ({ id: a.id, clientStatus: status, clientDescription: status === 'failed' ? 'task exited 1' : '' })) },
    });
  }
  return mine;
}
