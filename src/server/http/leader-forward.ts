// Followers forward writes to the leader. A follower serves every read from
// its own replica, but each write (any method but GET) goes to the leader,
// which alone runs the services that decide (claims, placement, node TTLs).
// The node connection is refused on a follower with the leader's address,
// so that nodes hold their connection on the leader, which calls them.

import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { anySignal, describeError } from '../../lib/index.js';
import { LeaderError } from '../leader/index.js';
import { StateStoreError } from '../state/index.js';
import { ApiError } from './api-error.js';
import type { RouteContext } from './route-context.js';

/** Set on a forwarded request, so that a follower never forwards twice (no loops while leaders change). */
export const FORWARDED_HEADER = 'x-berth-forwarded';
/** The leader's address, on every answer of a cluster server and on a refused node connection. */
export const LEADER_HEADER = 'x-berth-leader';

/** Routes that each server answers itself, whoever leads (the allocation pull is a read sent as a POST). */
const LOCAL = new Set([
  '/v1/agent/members',
  '/v1/agent/self',
  '/v1/agent/health',
  '/v1/status/leader',
  '/v1/status/peers',
  '/v1/regions',
  '/v1/acl/token/self',
  '/v1/node/:id/allocations/pull',
]);

const FORWARD_TIMEOUT_MS = 60_000;
/** How often a forward in flight checks that its leader still leads. */
const LEADER_WATCH_MS = 250;

/**
 * Adds the forwarding hook. Without `deps.leadership` (a single server)
 * nothing changes. Forwarding failures answer 503 SERVER_LEADER_UNAVAILABLE
 * (retryable): no leader known, the leader unreachable, or a forwarded
 * request that reached a non-leader.
 */
export function registerLeaderForwarding(app: FastifyInstance, { deps }: RouteContext): void {
  const leadershipOf = deps.leadership;
  if (!leadershipOf) return;
  const log = deps.logger.child({ component: 'http-forward' });

  app.addHook('preHandler', async (req, reply) => {
    const leadership = leadershipOf();
    const url = req.routeOptions.url;
    if (!leadership || leadership.isLeader || url === undefined || LOCAL.has(url) || url.startsWith('/v1/client/')) return;
    const leader = leadership.leader;
    if (leader) reply.header(LEADER_HEADER, leader.address);
    if (url === '/v1/node/connect') {
      throw new ApiError('UNAVAILABLE', 'this server is not the leader: connect to the leader', leader ? { leader: leader.address } : {});
    }
    if (req.method === 'GET' || req.method === 'HEAD') return;
    if (!leader || req.headers[FORWARDED_HEADER]) {
      // Say why: etcd without quorum refuses every write until it is back; an election is over in seconds.
      await leadership.checkQuorum().catch((err: unknown) => {
        throw new StateStoreError('STORE_UNAVAILABLE', `the state store (etcd) is unavailable: it cannot commit writes now (no quorum?); the write was refused and nothing was applied: ${describeError(err)}`, {
          cause: err,
        });
      });
      throw leaderUnavailable('no leader is known right now (an election is under way); retry shortly');
    }
    // A leader that stops answering (a paused process keeps its sockets open) is replaced by an
    // election: the forward is abandoned as soon as this server names another leader, or none.
    const deposed = new AbortController();
    const watch = setInterval(() => {
      if (leadership.leader?.address !== leader.address) deposed.abort();
    }, LEADER_WATCH_MS);
    await forward(req, reply, leader.address, deposed.signal)
      .catch((err: unknown) => {
        if (err instanceof ApiError || err instanceof LeaderError) throw err;
        log.warn({ leader: leader.address, route: url, err: err instanceof Error ? err.message : String(err) }, 'forwarding to the leader failed');
        // The request may have reached the leader: a client must check before sending it again.
        if (deposed.signal.aborted) throw leaderUnavailable(`the leader at ${leader.address} stopped answering and is being replaced; retry shortly`, true);
        throw leaderUnavailable(`the leader at ${leader.address} did not answer; retry shortly`, true);
      })
      .finally(() => clearInterval(watch));
  });
}

/**
 * SERVER_LEADER_UNAVAILABLE (retryable). `mayHaveApplied` (in the answer's
 * details) when the request was sent to a leader that did not answer: it
 * may have been applied.
 */
function leaderUnavailable(message: string, mayHaveApplied = false): LeaderError {
  const err = new LeaderError('SERVER_LEADER_UNAVAILABLE', message);
  return mayHaveApplied ? Object.assign(err, { mayHaveApplied: true }) : err;
}

/**
 * Connections to the leader kept open between forwards, with node:http's
 * client: a follower forwards its nodes' status reports, several a second
 * during a large batch, and fetch's web streams and per-request objects were
 * a tenth of a follower's CPU in the 10,000-allocation scale bench.
 */
const AGENTS = { 'http:': new HttpAgent({ keepAlive: true }), 'https:': new HttpsAgent({ keepAlive: true }) };

/** The leader's answer: status, headers and body. */
interface LeaderAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
}

/** One request to the leader; rejects on a network error or when `signal` aborts. */
function askLeader(url: URL, method: string, headers: Record<string, string>, body: string | undefined, signal: AbortSignal): Promise<LeaderAnswer> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const agent = url.protocol === 'https:' ? AGENTS['https:'] : AGENTS['http:'];
    const out = send(url, { method, headers, agent, signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 502, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    out.on('error', reject);
    out.end(body);
  });
}

/** Sends the request on to the leader and answers with the leader's answer. */
async function forward(req: FastifyRequest, reply: FastifyReply, leader: string, deposed: AbortSignal): Promise<void> {
  const headers: Record<string, string> = { [FORWARDED_HEADER]: '1' };
  // The caller's token in either header, and whether it reads errors as JSON (Berth's clients) or text (Nomad's).
  for (const h of ['authorization', 'x-nomad-token', 'content-type', 'accept']) {
    const v = req.headers[h];
    if (typeof v === 'string') headers[h] = v;
  }
  const hasBody = req.body !== undefined && req.body !== null;
  const body = hasBody ? (typeof req.body === 'string' ? req.body : JSON.stringify(req.body)) : undefined;
  if (body !== undefined) {
    headers['content-length'] = String(Buffer.byteLength(body));
    headers['content-type'] ??= 'text/plain;charset=UTF-8';
  }
  const url = new URL(`${leader.replace(/\/+$/, '')}${req.url}`);
  const res = await askLeader(url, req.method, headers, body, anySignal([AbortSignal.timeout(FORWARD_TIMEOUT_MS), deposed]));
  reply.status(res.status);
  for (const h of ['content-type', 'x-berth-index', 'x-nomad-index', 'x-nomad-knownleader', 'x-nomad-lastcontact', 'x-nomad-nexttoken', 'x-berth-error-code']) {
    const v = res.headers[h];
    if (typeof v === 'string') reply.header(h, v);
  }
  await reply.send(res.text);
}
