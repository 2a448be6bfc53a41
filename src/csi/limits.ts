import { CsiRequestError } from './errors.js';
import type { SecretMap } from '../lib/index.js';

// Size limits the spec sets on what a CO sends ("Size Limits" in spec.md).
export const MAX_STRING_BYTES = 128;
export const MAX_MAP_BYTES = 4096;
export const MAX_REPEATED_STRING_BYTES = 4096;
export const MAX_NODE_ID_BYTES = 256;
/** Paths are not bounded by the spec's string limit; PATH_MAX bounds them. */
export const MAX_PATH_BYTES = 4096;

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/**
 * Checks a string field. `required` rejects the empty string (proto3 cannot
 * tell empty from unset, so neither can the plugin). Throws CsiRequestError.
 */
export function checkString(field: string, value: string | undefined, opts: { required?: boolean; max?: number } = {}): void {
  const max = opts.max ?? MAX_STRING_BYTES;
  if (value === undefined || value === '') {
    if (opts.required) throw new CsiRequestError(`${field} is required`, field);
    return;
  }
  if (bytes(value) > max) throw new CsiRequestError(`${field} is ${bytes(value)} bytes; the CSI limit is ${max}`, field);
}

/** Checks an absolute path field (staging or target path). */
export function checkPath(field: string, value: string | undefined, opts: { required?: boolean } = {}): void {
  checkString(field, value, { required: opts.required, max: MAX_PATH_BYTES });
  if (value && !value.startsWith('/')) throw new CsiRequestError(`${field} must be an absolute path, got "${value}"`, field);
  if (value?.includes('\0')) throw new CsiRequestError(`${field} must not contain NUL`, field);
}

/** Checks a map<string,string> field against the 4 KiB total. Secret values never appear in the error. */
export function checkMap(field: string, map: Record<string, string> | SecretMap | undefined): void {
  if (!map) return;
  const entries = Object.entries('reveal' in map && typeof map.reveal === 'function' ? map.reveal() : (map as Record<string, string>));
  let total = 0;
  for (const [k, v] of entries) {
    if (k === '') throw new CsiRequestError(`${field} has an empty key`, field);
    total += bytes(k) + bytes(v);
  }
  if (total > MAX_MAP_BYTES) throw new CsiRequestError(`${field} holds ${total} bytes; the CSI limit is ${MAX_MAP_BYTES}`, field);
}

/** Checks a repeated string field (mount flags) against its total limit. Values never appear in the error. */
export function checkRepeated(field: string, values: readonly string[] | undefined): void {
  const total = (values ?? []).reduce((n, v) => n + bytes(v), 0);
  if (total > MAX_REPEATED_STRING_BYTES) {
    throw new CsiRequestError(`${field} holds ${total} bytes; the CSI limit is ${MAX_REPEATED_STRING_BYTES}`, field);
  }
}

/** Checks a byte count (capacity): a non-negative safe integer. */
export function checkBytes(field: string, value: number | undefined): void {
  if (value === undefined) return;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new CsiRequestError(`${field} must be a non-negative whole number of bytes, got ${value}`, field);
  }
}
