import { BerthError, type ApiOutcomeCode } from '../../lib/index.js';

/**
 * A host volume request refused or failed, in Nomad's words. Codes, for the
 * HTTP edge (the API's outcome codes, unprefixed: lib/errors.ts): INVALID
 * (the spec is wrong, or no node can take it), NOT_FOUND (no such volume or
 * node), IN_USE (allocations use it), UNAVAILABLE (its node could not be
 * asked), CONFLICT (its plugin on the node refused or failed).
 */
export type HostVolumeErrorCode = Extract<ApiOutcomeCode, 'INVALID' | 'NOT_FOUND' | 'IN_USE' | 'UNAVAILABLE' | 'CONFLICT'>;

export class HostVolumeError extends BerthError<HostVolumeErrorCode> {}
