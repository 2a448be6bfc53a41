import { BerthError } from '../../lib/index.js';

/**
 * Codes of decoding a config block against an hclspec schema and of the
 * msgpack codec:
 * - `HCLSPEC_INVALID_CONFIG`: the user's block does not match the schema (the message names the path and position);
 * - `HCLSPEC_INVALID_SPEC`: the schema itself is unusable (bad type expression, literal);
 * - `HCLSPEC_MSGPACK`: bytes that are not the msgpack the decoder expects.
 */
export type HclSpecErrorCode = 'HCLSPEC_INVALID_CONFIG' | 'HCLSPEC_INVALID_SPEC' | 'HCLSPEC_MSGPACK';

/** A config error; `path` is the attribute path (`config.volumes[0].name`) when there is one. */
export class HclSpecError extends BerthError<HclSpecErrorCode> {
  readonly path?: string;

  constructor(code: HclSpecErrorCode, message: string, options?: { cause?: unknown; path?: string }) {
    super(code, message, options);
    this.path = options?.path;
  }
}
