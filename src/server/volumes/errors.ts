import { BerthError, type ApiOutcomeCode } from '../../lib/index.js';

/**
 * A volume or claim operation refused or failed. Codes, for the HTTP edge:
 * NOT_FOUND (no such volume, allocation or plugin), INVALID (the request is
 * wrong: bad field, unsupported mode, failed validation), CONFLICT (the
 * volume's state forbids it now: claims exist, attached elsewhere, another
 * writer), EXHAUSTED (the node can take no more volumes of this plugin),
 * UNAVAILABLE (no healthy controller reachable, or the plugin failed with a
 * retryable code). `retryable` says whether the same request may succeed
 * later without changes; `field` names the offending request field for INVALID.
 * The codes are the HTTP API's outcome codes, unprefixed (lib/errors.ts);
 * not to be confused with the client's ClientVolumeError.
 */
export type VolumeErrorCode = Extract<ApiOutcomeCode, 'NOT_FOUND' | 'INVALID' | 'CONFLICT' | 'EXHAUSTED' | 'UNAVAILABLE'>;

export class VolumeError extends BerthError<VolumeErrorCode> {
  readonly retryable: boolean;
  readonly field: string | undefined;

  constructor(code: VolumeErrorCode, message: string, opts: { retryable?: boolean; field?: string; cause?: unknown } = {}) {
    super(code, message, { cause: opts.cause });
    this.retryable = opts.retryable ?? false;
    this.field = opts.field;
  }
}
