// The error an artifact that cannot be fetched raises.

import { BerthError } from '../../lib/index.js';

export type ArtifactErrorCode = 'TASK_ARTIFACT_UNSUPPORTED' | 'TASK_ARTIFACT_FAILED';

/** UNSUPPORTED: a source or option Berth never fetches (a retry cannot help); FAILED: this fetch failed. */
export class ArtifactError extends BerthError<ArtifactErrorCode> {}
