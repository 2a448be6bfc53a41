// Nodes and plugins over HTTP, including the node agent's own endpoints:
// register, heartbeat, its allocations and their status updates
// (node-alloc-routes.ts) and the node connection (a WebSocket carrying server-to-node calls).

import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import { describeError } from '../../lib/index.js';
import type { NodeFingerprint } from '../../structs/index.js';
import type { NodeTransport } from '../noderpc/index.js';
import { rowKey } from '../state/index.js';
import { ApiError } from './api-error.js';
import { objectBody, type RouteContext } from './route-context.js';
import { blockingRead, parseBlockingQuery } from './blocking.js';
import { registerNodeAllocRoutes } from './node-alloc-routes.js';

type Query = Record<string, string | undefined>;
type Params = { id: string };

export function registerNodeRoutes(app: FastifyInstance, { deps, signalOf }: RouteContext): void {
  // `deps.nodes` is read per request: each leader term has its own node service.
  const { store, connections } = deps;
  const log = deps.logger.child({ component: 'http-node' });

  /**
   * A node as answered: with `leaderConnected` (whether its node connection
   * is open to this server) when this server leads, the only one that knows;
   * a follower leaves it out. A node may heartbeat through any server and be
   * `ready` while the leader cannot call it (no controller call then).
   */
  const withLink = <T extends { id: string }>(node: T): T & { leaderConnected?: boolean } => {
    const leadership = deps.leadership?.();
    if (leadership && !leadership.isLeader) return node;
    return { ...node, leaderConnected: connections.connected(node.id) };
  };

  app.get<{ Querystring: Query }>('/v1/nodes', { config: { access: 'read' } }, async (req, reply) => {
    const prefix = req.query['prefix'] ?? '';
    const { index, result } = await blockingRead(store, ['nodes'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap.list('nodes', { filter: (n) => n.id.startsWith(prefix) }),
    );
    reply.header('X-Berth-Index', String(index));
    return result.map(withLink);
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/node/:id', { config: { access: 'node-read' } }, async (req, reply) => {
    const { index, result } = await blockingRead(store, ['nodes'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap.get('nodes', rowKey(req.params.id)),
    );
    if (!result) throw new ApiError('NOT_FOUND', `node "${req.params.id}" not found`);
    reply.header('X-Berth-Index', String(index));
    return withLink(result);
  });

  app.post('/v1/node/register', { config: { access: 'node' } }, async (req, reply) => {
    const body = objectBody(req.body);
    const fingerprint = objectBody(body['fingerprint'] ?? body, 'fingerprint') as unknown as NodeFingerprint;
    const id = typeof body['id'] === 'string' ? body['id'] : undefined;
    const nodes = deps.nodes;
    const node = await nodes.register(fingerprint, id ? { id } : {});
    reply.header('X-Berth-Index', String(node.modifyIndex));
    return { node, heartbeatTtlMs: nodes.heartbeatTtlMs };
  });

  app.post<{ Params: Params }>('/v1/node/:id/heartbeat', { config: { access: 'node' } }, async (req) => {
    const body = req.body === undefined || req.body === null ? {} : objectBody(req.body);
    const fp = body['fingerprint'];
    const nodes = deps.nodes;
    const node = await nodes.heartbeat(req.params.id, fp ? (objectBody(fp, 'fingerprint') as unknown as NodeFingerprint) : undefined);
    return { node, heartbeatTtlMs: nodes.heartbeatTtlMs };
  });

  registerNodeAllocRoutes(app, { deps, signalOf });

  // The node connection: server-to-node calls travel over a socket the agent opened.
  app.get<{ Querystring: Query }>('/v1/node/connect', { config: { access: 'node' }, websocket: true }, (socket: WebSocket, req) => {
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

  app.get<{ Querystring: Query }>('/v1/plugins', { config: { access: 'read' } }, async (req, reply) => {
    const { index, result } = await blockingRead(store, ['plugins'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap.list('plugins'),
    );
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  app.get<{ Params: Params; Querystring: Query }>('/v1/plugin/csi/:id', { config: { access: 'read' } }, async (req, reply) => {
    const { index, result } = await blockingRead(store, ['plugins'], parseBlockingQuery(req.query), signalOf(req, reply), (snap) =>
      snap.get('plugins', rowKey(req.params.id)),
    );
    if (!result) throw new ApiError('NOT_FOUND', `plugin "${req.params.id}" not found`);
    reply.header('X-Berth-Index', String(index));
    return result;
  });
}
