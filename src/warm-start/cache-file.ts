// Where a code cache lives and how it is sealed. A cache is V8's own bytes
// for one bundle, one Node binary and one V8 build: its file name carries
// all three (V8 rejects a cache of another version or other flags itself,
// but NOT one that is corrupt: a torn or flipped cache crashes the process
// in V8's deserializer), so each file is sealed with a SHA-256 of its bytes,
// checked before V8 sees them.

import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import path from 'node:path';

const MAGIC = Buffer.from('BERTHCC1');
const DIGEST = 32;

/**
 * The directory for Berth's code caches: $XDG_CACHE_HOME/berth, else
 * ~/.cache/berth (dist/ may be read-only once installed). Pure.
 */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env['XDG_CACHE_HOME'] || path.join(env['HOME'] || homedir(), '.cache');
  return path.join(base, 'berth');
}

/** The cache file for `bundle` (a file name that carries its content's hash) on this Node binary. Pure. */
export function cacheFileFor(bundle: string, dir = cacheDir()): string {
  const node = `${process.version}-${process.arch}-v8-${process.versions.v8}`;
  return path.join(dir, `${path.basename(bundle, '.cjs')}-${node}.v8cache`);
}

/** `data` sealed for writing: magic, SHA-256 of data, data. */
export function seal(data: Buffer): Buffer {
  return Buffer.concat([MAGIC, createHash('sha256').update(data).digest(), data]);
}

/** The cache inside a sealed file's bytes, or why it cannot be trusted. Never throws. */
export function unseal(file: Buffer): { data: Buffer } | { problem: string } {
  if (file.length <= MAGIC.length + DIGEST || !file.subarray(0, MAGIC.length).equals(MAGIC)) return { problem: 'not a Berth code cache (bad header)' };
  const data = file.subarray(MAGIC.length + DIGEST);
  const digest = createHash('sha256').update(data).digest();
  if (!digest.equals(file.subarray(MAGIC.length, MAGIC.length + DIGEST))) return { problem: 'checksum mismatch (torn or corrupt)' };
  return { data };
}
