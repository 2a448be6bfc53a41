import { BerthError } from '../lib/index.js';

/** gRPC status codes by name, as the wire carries them. */
export const GRPC_CODES = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcCodeName = keyof typeof GRPC_CODES;

/** The name of a numeric gRPC code; UNKNOWN for numbers outside the table. */
export function grpcCodeName(code: number): GrpcCodeName {
  const entry = Object.entries(GRPC_CODES).find(([, n]) => n === code);
  return (entry?.[0] as GrpcCodeName | undefined) ?? 'UNKNOWN';
}

/**
 * Codes after which the step may or may not have happened (docs/csi-rules.md,
 * "Uncertain steps"). Every other code is final: the step did not happen.
 */
const UNCERTAIN_CODES: ReadonlySet<GrpcCodeName> = new Set([
  'CANCELLED',
  'DEADLINE_EXCEEDED',
  'UNAVAILABLE',
  'ABORTED',
  'RESOURCE_EXHAUSTED',
]);

/** Codes that a retry with the same arguments, after a backoff, may cure. */
const RETRYABLE_CODES: ReadonlySet<GrpcCodeName> = new Set([
  'CANCELLED',
  'DEADLINE_EXCEEDED',
  'UNAVAILABLE',
  'ABORTED',
  'RESOURCE_EXHAUSTED',
]);

/** RPCs whose NOT_FOUND means "nothing left to undo": reported as success. */
const NOT_FOUND_MEANS_DONE: ReadonlySet<string> = new Set([
  'NodeUnpublishVolume',
  'NodeUnstageVolume',
  'ControllerUnpublishVolume',
  'DeleteVolume',
  'DeleteSnapshot',
]);

/** How Berth must react to a failed CSI call. */
export interface CsiErrorClass {
  /** True when the step certainly did not happen; false when it may have (uncertain). */
  final: boolean;
  /** True when retrying the same request after a backoff is reasonable. */
  retryable: boolean;
  /** True when the failure means the goal is already reached (NOT_FOUND on a teardown call). */
  alreadyDone: boolean;
}

/** Classifies a gRPC code returned by `rpc`, following docs/csi-rules.md (Errors). Pure. */
export function classifyGrpcCode(code: GrpcCodeName, rpc: string): CsiErrorClass {
  const uncertain = UNCERTAIN_CODES.has(code);
  return {
    final: !uncertain,
    retryable: RETRYABLE_CODES.has(code),
    alreadyDone: code === 'NOT_FOUND' && NOT_FOUND_MEANS_DONE.has(rpc),
  };
}

/**
 * A CSI call that the plugin (or the transport to it) failed. `code` is
 * `CSI_<GRPC CODE NAME>`; `grpcCode` the number; `rpc` the method name
 * (e.g. `NodeStageVolume`). `final`, `retryable` and `uncertain` say what the
 * caller must do next. The message holds the plugin's own details, which the
 * spec forbids from carrying secrets; Berth adds none.
 */
export class CsiError extends BerthError implements CsiErrorClass {
  readonly grpcCode: number;
  readonly grpcCodeName: GrpcCodeName;
  readonly rpc: string;
  readonly details: string;
  readonly final: boolean;
  readonly retryable: boolean;
  readonly alreadyDone: boolean;

  constructor(rpc: string, grpcCode: number, details: string, options?: { cause?: unknown }) {
    const name = grpcCodeName(grpcCode);
    super(`CSI_${name}`, `${rpc} failed: ${name}${details ? `: ${details}` : ''}`, options);
    const cls = classifyGrpcCode(name, rpc);
    this.grpcCode = grpcCode;
    this.grpcCodeName = name;
    this.rpc = rpc;
    this.details = details;
    this.final = cls.final;
    this.retryable = cls.retryable;
    this.alreadyDone = cls.alreadyDone;
  }

  /** True when the step may have happened and its negation call is owed on teardown. */
  get uncertain(): boolean {
    return !this.final;
  }
}

/**
 * A request Berth refused to send because the spec says it is invalid
 * (missing required field, size limit, unknown mode). Nothing reached the
 * plugin. `field` names the offending field in the spec's words.
 */
export class CsiRequestError extends BerthError {
  readonly field: string;

  constructor(message: string, field: string) {
    super('CSI_BAD_REQUEST', message);
    this.field = field;
  }
}

/**
 * A plugin answered, but with something the spec does not allow (a missing
 * required field, an oversized node ID). Final: asking again gets the same.
 */
export class CsiProtocolError extends BerthError {
  readonly rpc: string;

  constructor(rpc: string, message: string) {
    super('CSI_BAD_ANSWER', `${rpc}: plugin answered out of spec: ${message}`);
    this.rpc = rpc;
  }
}

/** The endpoint itself is unusable (not a unix:// address, path too long). */
export class CsiEndpointError extends BerthError {
  constructor(message: string) {
    super('CSI_BAD_ENDPOINT', message);
  }
}
