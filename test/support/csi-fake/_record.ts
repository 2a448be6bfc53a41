// How a call the fake received is kept: the request as decoded, with every
// credential wrapped so that printing a recorded call never shows it.

import { SecretList, SecretMap } from '../../../src/lib/index.js';
import type { RecordedCall } from './_options.js';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function redactValue(key: string | undefined, value: unknown): unknown {
  if (key === 'secrets' && isPlainObject(value)) return new SecretMap(value as Record<string, string>);
  if (key === 'mountFlags' && Array.isArray(value)) return new SecretList(value as string[]);
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const redacted = redactValue(undefined, item);
      if (redacted !== item) {
        copy ??= value.slice();
        copy[i] = redacted;
      }
    }
    return copy ?? value;
  }
  if (isPlainObject(value)) {
    let copy: Record<string, unknown> | undefined;
    for (const k of Object.keys(value)) {
      const field = value[k];
      const redacted = redactValue(k, field);
      if (redacted !== field) {
        copy ??= { ...value };
        copy[k] = redacted;
      }
    }
    return copy ?? value;
  }
  return value;
}

/**
 * `request` with every `secrets` map replaced by a SecretMap and every
 * `mountFlags` list by a SecretList. Subtrees without either are shared with
 * the original rather than copied, which keeps recording cheap; the original
 * is never modified.
 */
export function redactRequest(request: object): Record<string, unknown> {
  return redactValue(undefined, request) as Record<string, unknown>;
}

/**
 * A JSON-safe view of a recorded value: bigints (int64 fields) become decimal
 * strings, which JSON.stringify cannot otherwise print. SecretMap and
 * SecretList are left alone so that their own toJSON redacts them.
 */
export function jsonSafe(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (Array.isArray(value)) return value.map(jsonSafe);
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(value)) out[k] = jsonSafe(value[k]);
    return out;
  }
  return value;
}

/** A recorded call's toJSON (installed on each call, not enumerable): the call through jsonSafe. */
export function recordedCallToJson(this: RecordedCall): unknown {
  return jsonSafe({ ...this });
}
