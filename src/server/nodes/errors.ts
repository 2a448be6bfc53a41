import { BerthError } from '../../lib/index.js';

/** A node operation refused. Codes: NOT_FOUND (unknown node), INVALID (a bad fingerprint). */
export class NodeError extends BerthError {}
