// The cluster's servers: GET /v1/operator/members answers from any server
// (followers too), with who leads and which servers are alive.

import type { FastifyInstance } from 'fastify';
import { describeError } from '../../lib/index.js';
import type { ServerMember } from '../leader/index.js';
import type { RouteContext } from './route-context.js';

/** What GET /v1/operator/members answers. */
export interface MembersAnswer {
  /** The answering server's view of the leader's address; null while none is known. */
  leader: string | null;
  servers: ServerMember[];
  /** Set when the member list could not be read (etcd unreachable): `servers` then holds this server only. */
  warning?: string;
}

export function registerClusterRoutes(app: FastifyInstance, { deps, signalOf }: RouteContext): void {
  app.get('/v1/operator/members', { config: { access: 'read' } }, async (req, reply): Promise<MembersAnswer> => {
    const leadership = deps.leadership?.();
    if (!leadership) return { leader: null, servers: [] };
    const leader = leadership.leader?.address ?? null;
    try {
      return { leader, servers: await leadership.members({ signal: signalOf(req, reply) }) };
    } catch (err) {
      const self: ServerMember = { ...leadership.self, leader: leadership.isLeader, status: 'alive', startedAt: 0 };
      return { leader, servers: [self], warning: `the member list is unavailable: ${describeError(err)}` };
    }
  });
}
