// Nodes over HTTP (the CSI plugins they run: plugin-routes.ts): Nomad's node reads (`GET /v1/nodes`,
// `GET /v1/node/:id`, in Nomad's shapes: node-shapes.ts), and the node
// agent's own endpoints, Berth's internal protocol as Nomad's RPC is
// Nomad's: register, heartbeat, its allocations (blocking), allocation
// status updates and the node connection (a WebSocket carrying
// server-to-node calls).

import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import { describeError } from '../../lib/index.js';
import type { NodeFingerprint } from '../../structs/index.js';
import type { NodeTransport } from '../noderpc/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { objectBody, type RouteContext } from './route-context.js';
import { registerNodeAllocRoutes } from './node-alloc-routes.js';
import { nodeOf, nodeStubOf, type NodeLink } from './node-shapes.js';
import { listPage, nomadRead } from './nomad-read.js';
import { replayReadBody } from './main-fast-register.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

export function registerNodeRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps, signalOf } = ctx;
  // `deps.nodes` is read per request: each leader term has its own node service.
  const { store, connections } = deps;
  const log = deps.logger.child({ component: 'http-node' });

  /**
   * What this server knows of the node beyond its row: when it last heard
   * from it, and whether the node's connection is open to it when it leads
   * (only the leader knows: a follower leaves it out). A node may heartbeat
   * through any server and be `ready` while the leader cannot call it (no
   * controller call then).
   */
  const linkOf = (nodeId: string): NodeLink => {
    const heard = deps.nodes.lastHeartbeat(nodeId);
    const link: NodeLink = heard === undefined ? {} : { lastHeartbeat: heard };
    const leadership = deps.leadership?.();
    if (leadership && !leadership.isLeader) return link;
    return { ...link, leaderConnected: connections.connected(nodeId) };
  };

  // Nomad's node list: `prefix` on the ID, `resources=true` and `os=true` for more of each row,
  // filter and paging over the rows as answered, sorted by ID.
  app.get<{ Querystring: Query }>('/v1/nodes', { config: { access: 'read' } }, async (req, reply) => {
    const fields = { resources: req.query['resources'] === 'true', os: req.query['os'] === 'true' };
    const rows = await nomadRead(ctx, req, reply, ['nodes'], (snap, opts) =>
      snap.list('nodes', { filter: (n) => n.id.startsWith(opts.prefix) }).map((n) => nodeStubOf(n, fields, linkOf(n.id))),
    );
    return listPage(rows, req, reply);
  });

  // One node by its full ID (Nomad's CLI resolves a prefix through the list first).
  app.get<{ Params: Params; Querystring: Query }>('/v1/node/:id', { config: { access: 'node-read' } }, async (req, reply) => {
    const node = await nomadRead(ctx, req, reply, ['nodes'], (snap) => snap.get('nodes', rowKey(req.params.id)));
    if (!node) throw new ApiError('NOT_FOUND', 'node not found', { nodeId: req.params.id });
    return nodeOf(node, linkOf(node.id));
  });

  app.post('/v1/node/register', { config: { access: 'node' } }, async (req, reply) => {
    const body = objectBody(req.body);
    const fingerprint = objectBody(body['fingerprint'] ?? body, 'fingerprint') as unknown as NodeFingerprint;
    const id = typeof body['id'] === 'string' ? body['id'] : undefined;
    const nodes = deps.nodes;
    const node = await nodes.register(fingerprint, id ? { id } : {});
    reply.header('X-Nomad-Index', String(node.modifyIndex));
    return { node, heartbeatTtlMs: nodes.heartbeatTtlMs };
  });

  const heartbeatSeconds = deps.metrics?.heartbeatSeconds;
  // A node's heartbeat, with its fingerprint when given; answered with the TTL. On the leader it is served
  // ahead of the router (main-fast-node.ts), which hands on what it does not take with the body it read.
  app.post<{ Params: Params }>('/v1/node/:id/heartbeat', {
    config: { access: 'node' },
    preParsing: replayReadBody,
    ...(heartbeatSeconds ? { onResponse: async (_req: unknown, reply: { elapsedTime: number }) => heartbeatSeconds.observe(reply.elapsedTime / 1000) } : {}),
  }, async (req) => {
    const body = req.body === undefined || req.body === null ? {} : objectBody(req.body);
    const fp = body['fingerprint'];
    const nodes = deps.nodes;
    await nodes.heartbeat(req.params.id, fp ? (objectBody(fp, 'fingerprint') as unknown as NodeFingerprint) : undefined);
    // As Nomad's Node.UpdateStatus answers: the TTL, not the node (the whole cluster's heartbeats reach the
    // leader; serializing every node row into them was most of a heartbeat's answer, and the agent reads only the TTL).
    return { heartbeatTtlMs: nodes.heartbeatTtlMs };
  });

  registerNodeAllocRoutes(app, { deps, signalOf });

  // The node connection: server-to-node calls travel over a socket the agent opened.
  app.get<{ Querystring: Query }>('/v1/node/connect', { config: { access: 'node' }, websocket: true, exposeHeadRoute: true }, (socket: WebSocket, req) => {
    const nodeId = req.query['nodeId'];
    if (!nodeId || !store.snapshot().get('nodes', rowKey(nodeId))) {
      socket.close(4404, 'unknown node: register first');
      return;
    }
    const transport: NodeTransport = {
      send: (msg) => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(msg));
      },
      close: () => socket.close(1000, 'replaced'),
    };
    connections.attach(nodeId, transport);
    log.info({ nodeId }, 'node connected');
    socket.on('message', (data) => {
      let msg: unknown;
      try {
        msg = JSON.parse(String(data));
      } catch (err) {
        log.warn({ nodeId, err: describeError(err) }, 'unreadable message from node');
        return;
      }
      connections.receive(nodeId, msg);
    });
    socket.on('close', () => {
      connections.detach(nodeId, transport);
      log.info({ nodeId }, 'node disconnected');
    });
  });
}
