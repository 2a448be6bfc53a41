import { BerthError, type ApiOutcomeCode } from '../../lib/index.js';

/** A node operation refused. Codes: NOT_FOUND (unknown node), INVALID (a bad fingerprint). */
export class NodeError extends BerthError<Extract<ApiOutcomeCode, 'NOT_FOUND' | 'INVALID'>> {}
