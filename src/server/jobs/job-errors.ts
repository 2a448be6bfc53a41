import { BerthError, type ApiOutcomeCode } from '../../lib/index.js';

/** A job-level failure with a stable code: NOT_FOUND, CONFLICT, INVALID, FORBIDDEN. */
export class JobError extends BerthError<Extract<ApiOutcomeCode, 'NOT_FOUND' | 'CONFLICT' | 'INVALID' | 'FORBIDDEN'>> {}
