// The edge where Berth errors become HTTP answers: `{ code, message, details }`
// with the status the code calls for. Unknown errors become a 500 whose
// message says nothing of the cause (it is logged instead).

import { BerthError, type ApiOutcomeCode } from '../../lib/index.js';

/** An error raised by the API layer itself (bad query, missing token, wrong role). */
export class ApiError extends BerthError<ApiOutcomeCode | 'NODE_UNREACHABLE' | 'NODE_AGENT_UNREACHABLE'> {
  readonly details: Record<string, unknown>;

  constructor(code: ApiOutcomeCode | 'NODE_UNREACHABLE' | 'NODE_AGENT_UNREACHABLE', message: string, details: Record<string, unknown> = {}) {
    super(code, message);
    this.details = details;
  }
}

export interface ErrorBody {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

const STATUS_BY_CODE: Record<string, number> = {
  INVALID: 400,
  BAD_REQUEST: 400,
  CSI_BAD_REQUEST: 400,
  CSI_INVALID_ARGUMENT: 400,
  CSI_OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  CSI_PERMISSION_DENIED: 403,
  CSI_UNAUTHENTICATED: 403,
  NOT_FOUND: 404,
  CSI_NOT_FOUND: 404,
  CONFLICT: 409,
  EXHAUSTED: 503,
  IN_USE: 409,
  CSI_ALREADY_EXISTS: 409,
  CSI_FAILED_PRECONDITION: 409,
  CSI_UNIMPLEMENTED: 501,
  UNAVAILABLE: 503,
  ABORTED: 503,
  NODE_UNREACHABLE: 503,
  /** A /v1/client/ request forwarded to the allocation's node agent found no answer there (a bad gateway). */
  NODE_AGENT_UNREACHABLE: 502,
  NODE_TIMEOUT: 503,
  STORE_CLOSED: 503,
  STORE_UNAVAILABLE: 503,
  STORE_FENCED: 503,
  STORE_DISK_FULL: 507,
  CSI_UNAVAILABLE: 503,
  CSI_DEADLINE_EXCEEDED: 503,
  CSI_RESOURCE_EXHAUSTED: 503,
  CSI_ABORTED: 503,
  CSI_CANCELLED: 503,
};

/** The HTTP status for a Berth error code; codes follow a few naming rules for those not listed. */
export function statusForCode(code: string): number {
  const known = STATUS_BY_CODE[code];
  if (known) return known;
  if (code.endsWith('NOT_FOUND')) return 404;
  if (code.endsWith('CONFLICT') || code.endsWith('IN_USE') || code.endsWith('EXISTS')) return 409;
  if (code.endsWith('INVALID')) return 400;
  if (code.endsWith('UNAVAILABLE') || code.startsWith('NODE_')) return 503;
  return 500;
}

/**
 * The status and body for any thrown value. Fields of known error classes
 * that help a caller (validation problems, the node and method of a failed
 * node call, the CSI RPC) go into `details`; nothing else does.
 */
export function toErrorResponse(err: unknown): { status: number; body: ErrorBody } {
  const fastifyErr = err as { statusCode?: number; code?: string; validation?: unknown; message?: string };
  if (!(err instanceof BerthError)) {
    if (typeof fastifyErr?.statusCode === 'number' && fastifyErr.statusCode >= 400 && fastifyErr.statusCode < 500) {
      // fastify's own client errors (malformed JSON, body too large, bad content type).
      return {
        status: fastifyErr.statusCode,
        body: { code: fastifyErr.statusCode === 413 ? 'TOO_LARGE' : 'INVALID', message: fastifyErr.message ?? 'bad request', details: {} },
      };
    }
    return { status: 500, body: { code: 'INTERNAL', message: 'internal server error', details: {} } };
  }
  const details: Record<string, unknown> = {};
  const e = err as BerthError & Record<string, unknown>;
  if (err instanceof ApiError) Object.assign(details, err.details);
  if (Array.isArray(e['problems'])) details['problems'] = e['problems'];
  for (const key of ['nodeId', 'method', 'rpc', 'grpcCodeName', 'field', 'final', 'retryable', 'mayHaveApplied', 'volumeId', 'pluginId']) {
    const v = e[key];
    if (typeof v === 'string' || typeof v === 'boolean') details[key] = v;
  }
  // An error that carries its own status (the node agent's client routes, served here in dev mode) keeps it.
  const own = e['httpStatus'];
  const status = typeof own === 'number' && own >= 400 && own < 600 ? own : statusForCode(err.code);
  return { status, body: { code: err.code, message: err.message, details } };
}
