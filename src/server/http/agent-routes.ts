// The agent that answers, as Nomad's agent endpoints describe it:
// `GET /v1/agent/self` (its config, its member entry, its stats) and
// `GET /v1/agent/health` (whether its server knows a leader and its client
// runs). Answered by each server itself.

import { availableParallelism } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type { AgentHealth, AgentHealthResponse, AgentSelf } from '../../api/index.js';
import { ApiError } from './api-error.js';
import { knownMembers } from './cluster-routes.js';
import { agentFacts, memberShape, REGION, serverAddress, versionInfo } from './cluster-shapes.js';
import type { RouteContext } from './route-context.js';

/** Go's GOARCH for Node's process.arch, as Nomad's runtime stats name it. */
const GOARCH: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x' };

export function registerAgentRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps, signalOf } = ctx;

  app.get('/v1/agent/self', { config: { access: 'read' } }, async (req, reply): Promise<AgentSelf> => {
    const facts = agentFacts(deps.agent);
    const leadership = deps.leadership?.();
    const { members } = await knownMembers(leadership, signalOf(req, reply));
    const selfId = leadership?.self.id;
    const me = members.find((m) => m.id === selfId) ?? { id: selfId ?? facts.name, address: leadership?.self.address ?? '', leader: leadership?.isLeader ?? true, status: 'alive' as const, startedAt: 0 };
    const { port, addr } = serverAddress(me.address);
    const leader = leadership?.leader;
    const index = String(deps.store.latestIndex());
    const peers = members.filter((m) => m.status !== 'left').length;
    const client = deps.agent?.client?.();
    const stats: AgentSelf['stats'] = {
      runtime: {
        arch: GOARCH[process.arch] ?? process.arch,
        cpu_count: String(availableParallelism()),
        'kernel.name': process.platform,
        max_procs: String(availableParallelism()),
        version: process.version,
      },
      nomad: {
        server: 'true',
        leader: String(leadership?.isLeader ?? true),
        leader_addr: leader ? serverAddress(leader.address).hostPort : '',
        bootstrap: 'false',
        known_regions: '1',
      },
      raft: {
        state: leadership?.isLeader ?? true ? 'Leader' : 'Follower',
        num_peers: String(Math.max(0, peers - 1)),
        applied_index: index,
        commit_index: index,
        last_log_index: index,
      },
      berth: { connected_nodes: String(deps.connections.connectedNodes().length), stale: String(deps.store.stale) },
      ...(client ? { client: client.stats } : {}),
    };
    return {
      config: {
        Region: REGION,
        Datacenter: facts.datacenter,
        NodeName: facts.name,
        DataDir: deps.agent?.dataDir ?? '',
        BindAddr: addr,
        DevMode: deps.agent?.devMode ?? false,
        Ports: { HTTP: port, RPC: port, Serf: 0 },
        Addresses: { HTTP: addr, RPC: addr, Serf: '' },
        AdvertiseAddrs: { HTTP: me.address ? serverAddress(me.address).hostPort : '', RPC: me.address ? serverAddress(me.address).hostPort : '', Serf: '' },
        Server: { Enabled: true },
        Client: { Enabled: client !== undefined },
        ACL: { Enabled: true },
        UI: { Enabled: true, ShowCLIHints: false },
        Version: versionInfo(facts.version),
      },
      member: memberShape(me, facts),
      stats,
    };
  });

  // Nomad's load balancers' probe: any token. 500 (with the same body) when a part asked for is not ok.
  app.get<{ Querystring: { type?: string | string[] } }>('/v1/agent/health', { config: { access: 'node-read' } }, async (req, reply): Promise<AgentHealthResponse> => {
    const raw = req.query.type;
    const types = raw === undefined ? undefined : Array.isArray(raw) ? raw : [raw];
    const wants = (part: 'client' | 'server'): boolean => types === undefined || types.includes(part);
    const health: AgentHealthResponse = {};
    const client = deps.agent?.client?.();
    if (wants('client')) {
      if (client) health.client = { ok: client.ok, message: client.message };
      else if (types) health.client = { ok: false, message: 'client not enabled' };
    }
    if (wants('server')) {
      const leadership = deps.leadership?.();
      const known = leadership === undefined || leadership.leader !== undefined;
      health.server = known ? { ok: true, message: 'ok' } : { ok: false, message: 'no leader' };
    }
    const parts = [health.client, health.server].filter((h): h is AgentHealth => h !== undefined);
    if (parts.some((h) => !h.ok)) return reply.status(500).send(health);
    if (parts.length === 0) throw new ApiError('INVALID', 'type must be client or server', { field: 'type' });
    return health;
  });
}
