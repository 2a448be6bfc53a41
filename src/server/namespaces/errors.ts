import { BerthError, type ApiOutcomeCode } from '../../lib/index.js';

/**
 * A namespace request refused, in Nomad's words. Codes, for the HTTP edge
 * (the API's outcome codes, unprefixed: lib/errors.ts): INVALID (a name or
 * description Nomad refuses, a quota, the default namespace deleted, an
 * object registered into a namespace that does not exist), NOT_FOUND (no
 * such namespace to delete), IN_USE (it still holds jobs or volumes).
 */
export type NamespaceErrorCode = Extract<ApiOutcomeCode, 'INVALID' | 'NOT_FOUND' | 'IN_USE'>;

export class NamespaceError extends BerthError<NamespaceErrorCode> {}
