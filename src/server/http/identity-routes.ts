// Workload identity over HTTP: Nomad's public `GET /.well-known/jwks.json`
// (the keys a service verifies a task's JWT with; blocking queries on the
// keys) and `GET /.well-known/openid-configuration` (404 unless the server
// has an `oidc_issuer`, as Nomad's), and the node's
// `POST /v1/node/:id/identities`, Berth's form of Nomad's
// Alloc.SignIdentities RPC, sent on to the leader (the first signing makes
// the key, a write).

import type { FastifyInstance } from 'fastify';
import type { IdentityRequest, IdentitySignAnswer } from '../../structs/index.js';
import type { WorkloadIdentities } from '../identity/index.js';
import { ApiError } from './api-error.js';
import { nomadRead } from './nomad-read.js';
import { objectBody, type RouteContext } from './route-context.js';

/** Nomad's jwksMinMaxAge: consumers cache the key set at least this long. */
const JWKS_MIN_MAX_AGE_S = 15 * 60;
/** Nomad's default root_key_rotation_threshold (Berth does not rotate keys yet; the cache time is Nomad's all the same). */
const ROTATION_THRESHOLD_MS = 30 * 24 * 3_600_000;
/** The most identities one request may name. */
const MAX_REQUESTS = 256;

export function registerIdentityRoutes(app: FastifyInstance, ctx: RouteContext, identities: WorkloadIdentities): void {
  const now = (): number => (ctx.deps.clock ?? { now: Date.now }).now();

  app.get('/.well-known/jwks.json', { config: { access: 'public' } }, async (req, reply) => {
    const doc = await nomadRead(ctx, req, reply, ['rootKeys'], (snap) => {
      const newest = Math.max(0, ...snap.list('rootKeys').map((k) => k.createTime));
      if (newest > 0) {
        // Renew halfway to the next rotation (Nomad's ExpiryToRenewTime), never sooner than 15 minutes.
        const half = Math.floor((newest + ROTATION_THRESHOLD_MS - now()) / 2 / 1000);
        void reply.header('Cache-Control', `max-age=${Math.max(JWKS_MIN_MAX_AGE_S, half)}`);
      }
      return identities.jwks(snap);
    });
    return doc;
  });

  app.get('/.well-known/openid-configuration', { config: { access: 'public' } }, async () => {
    const doc = identities.oidcDiscovery();
    if (!doc) throw new ApiError('NOT_FOUND', 'OIDC Discovery endpoint disabled (set the server\'s oidc_issuer)');
    return doc;
  });

  app.post<{ Params: { id: string } }>('/v1/node/:id/identities', { config: { access: 'node' } }, async (req): Promise<IdentitySignAnswer> => {
    const { allocId, requests } = signRequestOf(req.body);
    return identities.sign(req.params.id, allocId, requests);
  });
}

/** Reads and checks a signing request's body (`{ allocId, identities: [{ task, identity }] }`). Throws ApiError INVALID naming the field. */
function signRequestOf(body: unknown): { allocId: string; requests: IdentityRequest[] } {
  const b = objectBody(body);
  const allocId = b['allocId'];
  if (typeof allocId !== 'string' || allocId === '') throw new ApiError('INVALID', 'allocId must name an allocation', { field: 'allocId' });
  const list = b['identities'];
  if (!Array.isArray(list) || list.length > MAX_REQUESTS) throw new ApiError('INVALID', `identities must be a list of at most ${MAX_REQUESTS} { task, identity }`, { field: 'identities' });
  const requests = list.map((r: unknown, i): IdentityRequest => {
    const o = r && typeof r === 'object' ? (r as Record<string, unknown>) : {};
    if (typeof o['task'] !== 'string' || typeof o['identity'] !== 'string') {
      throw new ApiError('INVALID', `identities[${i}] must be { task, identity }, both strings`, { field: `identities[${i}]` });
    }
    return { task: o['task'], identity: o['identity'] };
  });
  return { allocId, requests };
}
