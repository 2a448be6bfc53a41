// The cluster as Nomad's agent and status endpoints describe it:
// `GET /v1/status/leader`, `GET /v1/status/peers`, `GET /v1/agent/members`,
// `GET /v1/regions`, `GET /v1/acl/token/self` and the operator's view of the servers
// (`GET /v1/operator/raft/configuration`, `/v1/operator/autopilot/configuration`). Each server answers from its own view (followers
// too); none of these is forwarded to the leader.

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AutopilotConfiguration, RaftConfiguration, ServerMembers, StatusLeader, StatusPeers } from '../../api/index.js';
import { describeError } from '../../lib/index.js';
import type { Leadership, ServerMember } from '../leader/index.js';
import { ApiError } from './api-error.js';
import { agentFacts, memberShape, REGION, serverAddress, tokenShape } from './cluster-shapes.js';
import { setIndexHeaders } from './nomad-read.js';
import type { RouteContext } from './route-context.js';

/**
 * The servers as this one knows them, and a warning when the list could not
 * be read (etcd unreachable): then this server alone. A server without
 * leadership (not started) knows none.
 */
export async function knownMembers(leadership: Leadership | undefined, signal: AbortSignal): Promise<{ members: ServerMember[]; warning?: string }> {
  if (!leadership) return { members: [] };
  try {
    return { members: await leadership.members({ signal }) };
  } catch (err) {
    const self: ServerMember = { ...leadership.self, leader: leadership.isLeader, status: 'alive', startedAt: 0 };
    return { members: [self], warning: `the member list is unavailable: ${describeError(err)}` };
  }
}

export function registerClusterRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps, signalOf } = ctx;
  const facts = (): ReturnType<typeof agentFacts> => agentFacts(deps.agent);
  /** Sets Nomad's index headers at the store's latest index (these answers come from memory, not a table). */
  const headers = (reply: FastifyReply): void => setIndexHeaders(ctx, reply, deps.store.latestIndex());

  // Any token may ask who leads and who the peers are (Nomad asks none).
  app.get('/v1/status/leader', { config: { access: 'node-read' } }, async (_req, reply) => {
    headers(reply);
    const leader = deps.leadership?.()?.leader;
    const answer: StatusLeader = leader ? serverAddress(leader.address).hostPort : '';
    // A JSON string, as Nomad encodes it (fastify would send a bare string as text).
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(answer));
  });

  app.get('/v1/status/peers', { config: { access: 'node-read' } }, async (req, reply): Promise<StatusPeers> => {
    const { members, warning } = await knownMembers(deps.leadership?.(), signalOf(req, reply));
    if (warning) throw new ApiError('UNAVAILABLE', warning);
    headers(reply);
    return members.filter((m) => m.status !== 'left').map((m) => serverAddress(m.address).hostPort);
  });

  // Berth's servers agree through etcd: its members stand for Raft's peers, each live one a voter.
  app.get('/v1/operator/raft/configuration', { config: { access: 'read' } }, async (req, reply): Promise<RaftConfiguration> => {
    const { members, warning } = await knownMembers(deps.leadership?.(), signalOf(req, reply));
    if (warning) throw new ApiError('UNAVAILABLE', warning);
    headers(reply);
    return {
      Servers: members
        .filter((m) => m.status !== 'left')
        .map((m) => ({ ID: m.id, Node: m.id, Address: serverAddress(m.address).hostPort, Leader: m.leader, Voter: m.status === 'alive', RaftProtocol: '3' })),
      Index: deps.store.latestIndex(),
    };
  });

  // No autopilot runs (etcd keeps its own membership): Nomad's defaults, read-only.
  app.get('/v1/operator/autopilot/configuration', { config: { access: 'read' } }, async (_req, reply): Promise<AutopilotConfiguration> => {
    headers(reply);
    return {
      CleanupDeadServers: true,
      LastContactThreshold: '200ms',
      MaxTrailingLogs: 250,
      MinQuorum: 0,
      ServerStabilizationTime: '10s',
      EnableRedundancyZones: false,
      DisableUpgradeMigration: false,
      EnableCustomUpgrades: false,
      CreateIndex: 0,
      ModifyIndex: 0,
    };
  });
  for (const method of ['put', 'post'] as const) {
    app[method]('/v1/operator/autopilot/configuration', { config: { access: 'write' } }, async () => {
      throw new ApiError('INVALID', "Berth's servers run no autopilot: etcd keeps the cluster's membership (see `berth server members`)");
    });
  }

  app.get('/v1/regions', { config: { access: 'node-read' } }, async (_req, reply): Promise<string[]> => {
    headers(reply);
    return [REGION];
  });

  app.get('/v1/agent/members', { config: { access: 'read' } }, async (req, reply): Promise<ServerMembers> => {
    const leadership = deps.leadership?.();
    const { members, warning } = await knownMembers(leadership, signalOf(req, reply));
    const f = facts();
    headers(reply);
    return {
      ServerName: leadership?.self.id ?? f.name,
      ServerRegion: REGION,
      ServerDC: f.datacenter,
      Members: members.map((m) => memberShape(m, f)),
      ...(warning ? { Warning: warning } : {}),
    };
  });

  // Any token may read itself; the answer never carries its secret.
  app.get('/v1/acl/token/self', { config: { access: 'node-read' } }, async (req: FastifyRequest, reply) => {
    if (!req.caller) throw new ApiError('NOT_FOUND', 'ACL token not found');
    headers(reply);
    return tokenShape(req.caller);
  });
}
