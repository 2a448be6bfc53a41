// What the registration fast paths share (PUT/POST /v1/jobs and
// /v1/job/:id served without fastify): on the main thread
// (main-fast-register.ts) and in the API's front workers
// (api-workers/fast-register.ts). Which requests are registrations, the
// body read as fastify's route would read it (or undefined: fastify must
// answer it, word for word), and the answer as the route gives it.

import { describeError, type Logger } from '../../lib/index.js';
import { JobValidationError, nestingProblem } from '../../structs/index.js';
import { toErrorResponse } from './api-error.js';
import { errorAnswer, JSON_TYPE, type Answer } from './answers.js';
import { readRegistration, type Registration } from './job-register-input.js';
import { registerResponse } from './job-params.js';
import { indexHeaders } from './nomad-read.js';
import type { ApiDeps } from './route-context.js';

/** Whether fastify's JSON parser (secure-json-parse) might read the body differently from JSON.parse: prototype keys, escapes that could spell them, a BOM. */
const MAYBE_PROTO = /__proto__|constructor|prototype|\\u00[5-7]|^\uFEFF/i;
/** A job ID that needs no decoding in a path (fastify decodes the others; those go to fastify). */
const PLAIN_ID = /^[A-Za-z0-9._~-]+$/;

/** The registration route of a request, or undefined when it is not one. Pure. */
export function registrationRoute(method: string | undefined, url: string | undefined): { route: string; id?: string } | undefined {
  if ((method !== 'PUT' && method !== 'POST') || !url) return undefined;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (path === '/v1/jobs') return { route: '/v1/jobs' };
  if (!path.startsWith('/v1/job/')) return undefined;
  const id = path.slice('/v1/job/'.length);
  return PLAIN_ID.test(id) ? { route: '/v1/job/:id', id } : undefined;
}

/**
 * A registration's body (the whole of it, as text) read as the route reads
 * it, or undefined when fastify must answer it: it refuses it (bad JSON, a
 * job that does not check, too deep), or might read it differently
 * (prototype keys, a repeated `namespace` query). Never throws.
 */
export function readFastRegistration(body: string, url: string, id: string | undefined): Registration | undefined {
  if (body.trim() === '' || MAYBE_PROTO.test(body) || nestingProblem(body)) return undefined;
  const q = url.indexOf('?');
  const params = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
  const ns = params.getAll('namespace');
  if (ns.length > 1) return undefined;
  try {
    return readRegistration(JSON.parse(body), ns.length ? { namespace: ns[0] } : {}, id);
  } catch {
    return undefined;
  }
}

/**
 * Writes a registration read by a fast path (JobService.register: it joins
 * the turn's shared store write) and resolves with the answer as
 * job-routes.ts's register and api.ts's error handler give it, or with
 * undefined when fastify must serve the request: on a follower (fastify
 * forwards it to the leader), or for a job the state refused (fastify reads
 * the job again to place the problem at its Nomad path). Never rejects for
 * a refusal; an error answer is logged as the error handler logs it.
 */
export async function registrationAnswer(deps: Pick<ApiDeps, 'jobs' | 'store' | 'leadership'>, log: Logger, reg: Pick<Registration, 'spec' | 'checkIndex'>, accept: string | undefined): Promise<Answer | undefined> {
  const leadership = deps.leadership?.();
  if (leadership && !leadership.isLeader) return undefined;
  const pre = deps.store.stale ? ['x-berth-stale', 'true'] : [];
  try {
    const out = await deps.jobs.register(reg.spec, reg.checkIndex === undefined ? {} : { checkIndex: reg.checkIndex });
    return { status: 200, headers: [...pre, ...indexHeaders(deps, out.index)], type: JSON_TYPE, payload: JSON.stringify(registerResponse(out)) };
  } catch (err) {
    if (err instanceof JobValidationError) return undefined;
    const { status, body } = toErrorResponse(err);
    if (status >= 500) log.error({ method: 'PUT', route: '/v1/jobs', code: body.code, err: describeError(err) }, 'request failed');
    return errorAnswer(accept, status, body, pre);
  }
}
