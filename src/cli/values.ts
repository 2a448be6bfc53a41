// Parsing and printing of the values people type on a command line: sizes,
// durations, counts and key=value pairs. Pure functions; parsers throw
// commander's InvalidArgumentError (shown with the flag's name, exit 2).

import { InvalidArgumentError } from 'commander';
import { SecretMap } from '../lib/index.js';
import { UsageError } from './usage-error.js';

// Decimal units are powers of 1000 and binary ones powers of 1024, as in
// Kubernetes quantities and Nomad's job files: 10G is 10^10, 10GiB is 10 * 2^30.
const SIZE_UNITS: ReadonlyMap<string, bigint> = new Map([
  ['', 1n],
  ['b', 1n],
  ['k', 1000n],
  ['kb', 1000n],
  ['ki', 1024n],
  ['kib', 1024n],
  ['m', 1000n ** 2n],
  ['mb', 1000n ** 2n],
  ['mi', 1024n ** 2n],
  ['mib', 1024n ** 2n],
  ['g', 1000n ** 3n],
  ['gb', 1000n ** 3n],
  ['gi', 1024n ** 3n],
  ['gib', 1024n ** 3n],
  ['t', 1000n ** 4n],
  ['tb', 1000n ** 4n],
  ['ti', 1024n ** 4n],
  ['tib', 1024n ** 4n],
  ['p', 1000n ** 5n],
  ['pb', 1000n ** 5n],
  ['pi', 1024n ** 5n],
  ['pib', 1024n ** 5n],
]);

/**
 * Parses a size such as `1GiB`, `500MiB`, `10G`, `1.5TiB` or plain bytes
 * (`1048576`) into a whole number of bytes, rounding a fraction of a byte up.
 * Throws InvalidArgumentError for anything else or a size past 2^53.
 */
export function parseSize(text: string): number {
  const match = /^\s*(\d+)(?:\.(\d+))?\s*([a-z]*)\s*$/i.exec(text);
  const unit = SIZE_UNITS.get((match?.[3] ?? '').toLowerCase());
  if (!match || unit === undefined) {
    throw new InvalidArgumentError('Expected a size such as 1GiB, 500MiB, 10G or a number of bytes.');
  }
  const fraction = match[2] ?? '';
  const scale = 10n ** BigInt(fraction.length);
  const scaled = BigInt(match[1] + fraction) * unit;
  const bytes = (scaled + scale - 1n) / scale;
  if (bytes > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidArgumentError('Size is too large.');
  return Number(bytes);
}

const DURATION_UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
// setTimeout's ceiling; a longer deadline would fire at once.
const MAX_DURATION_MS = 2 ** 31 - 1;

/**
 * Parses a duration such as `30s`, `2m`, `500ms` or `1m30s` into
 * milliseconds. A unit is required. Throws InvalidArgumentError.
 */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  const part = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let end = 0;
  for (let m = part.exec(trimmed); m; m = part.exec(trimmed)) {
    total += Number(m[1]) * (DURATION_UNITS[m[2] ?? ''] ?? Number.NaN);
    end = part.lastIndex;
  }
  if (trimmed === '' || end !== trimmed.length) {
    throw new InvalidArgumentError('Expected a duration such as 30s, 2m or 500ms.');
  }
  const ms = Math.round(total);
  if (!(ms > 0) || ms > MAX_DURATION_MS) throw new InvalidArgumentError('Duration must be above 0 and below 24 days.');
  return ms;
}

/** Parses a whole number from 0 to 2^31-1 (page sizes, volume limits). Throws InvalidArgumentError. */
export function parseCount(text: string): number {
  if (!/^\s*\d+\s*$/.test(text) || Number(text) > 2 ** 31 - 1) {
    throw new InvalidArgumentError('Expected a whole number from 0.');
  }
  return Number(text);
}

/** Commander accumulator for repeatable flags (`--mount-flag a --mount-flag b`). */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Turns repeated `key=value` flags into a map. The value may itself hold
 * `=`. Throws UsageError on a missing `=`, an empty key or a repeated key;
 * the message quotes keys, never values, so it is safe for secrets too.
 */
export function parsePairs(flag: string, entries: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const entry of entries ?? []) {
    const eq = entry.indexOf('=');
    if (eq <= 0) throw new UsageError(`${flag} takes key=value; one entry has ${eq === 0 ? 'an empty key' : 'no "="'}`);
    const key = entry.slice(0, eq);
    if (Object.hasOwn(out, key)) throw new UsageError(`${flag} names key "${key}" twice`);
    out[key] = entry.slice(eq + 1);
  }
  return out;
}

/** `--secret k=v` flags as a SecretMap (undefined when none were given). */
export function parseSecrets(entries: readonly string[] | undefined): SecretMap | undefined {
  if (!entries?.length) return undefined;
  return new SecretMap(parsePairs('--secret', entries));
}

const BINARY_UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** `1.0 GiB (1073741824 bytes)`; below 1 KiB just `512 bytes`. */
export function humanSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  let value = bytes;
  let unit = '';
  for (const name of BINARY_UNITS) {
    if (value < 1024) break;
    value /= 1024;
    unit = name;
  }
  return `${value.toFixed(1)} ${unit} (${bytes} bytes)`;
}

/** `30s`, `2m`, `1500ms`: the shortest exact form, for messages. */
export function humanDuration(ms: number): string {
  if (ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
