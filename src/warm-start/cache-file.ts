// Where a code cache lives and how it is sealed. A cache is V8's own bytes
// for one bundle, one Node binary and one V8 build: its file name carries
// all three (V8 rejects a cache of another version or other flags itself,
// but NOT one that is corrupt: a torn or flipped cache crashes the process
// in V8's deserializer), so each file is sealed with a checksum of its bytes
// and their length, checked before V8 sees them.
//
// The checksum is a CRC-32 (zlib's, several times cheaper than SHA-256 on a
// cache of a few megabytes, and it is read at every agent start): what it
// guards against is accident, not an adversary (whoever can write the cache
// directory can write a matching digest of any kind), and a CRC-32 catches
// every burst of up to 32 flipped bits and all but 1 in 2^32 other
// corruptions; the length catches a truncated file outright. A Node without
// zlib.crc32 (before 20.15) seals with SHA-256 as before; the file name holds
// the Node version, so a file is only ever read by the Node that wrote it,
// and unseal reads both kinds by their magic.

import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';

/** Magic, SHA-256 of the data, data. */
const SHA256_MAGIC = Buffer.from('BERTHCC1');
const SHA256_DIGEST = 32;
/** Magic, CRC-32 of the data (uint32 LE), the data's length (uint32 LE), data. */
const CRC32_MAGIC = Buffer.from('BERTHCC2');
const CRC32_HEADER = CRC32_MAGIC.length + 8;

const crc32 = (zlib as { crc32?: (data: Uint8Array) => number }).crc32;

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

/** `data` sealed for writing: magic, checksum (CRC-32 and length, or SHA-256 on a Node without zlib.crc32), data. */
export function seal(data: Buffer): Buffer {
  if (!crc32) return Buffer.concat([SHA256_MAGIC, createHash('sha256').update(data).digest(), data]);
  const header = Buffer.alloc(CRC32_HEADER);
  CRC32_MAGIC.copy(header);
  header.writeUInt32LE(crc32(data), CRC32_MAGIC.length);
  header.writeUInt32LE(data.length, CRC32_MAGIC.length + 4);
  return Buffer.concat([header, data]);
}

/** The cache inside a sealed file's bytes, or why it cannot be trusted. Never throws. */
export function unseal(file: Buffer): { data: Buffer } | { problem: string } {
  const magic = file.subarray(0, CRC32_MAGIC.length);
  if (magic.equals(CRC32_MAGIC) && file.length > CRC32_HEADER) {
    if (!crc32) return { problem: 'sealed with a CRC-32, which this Node cannot check' };
    const data = file.subarray(CRC32_HEADER);
    if (data.length !== file.readUInt32LE(CRC32_MAGIC.length + 4)) return { problem: 'length mismatch (torn or corrupt)' };
    if (crc32(data) !== file.readUInt32LE(CRC32_MAGIC.length)) return { problem: 'checksum mismatch (torn or corrupt)' };
    return { data };
  }
  if (magic.equals(SHA256_MAGIC) && file.length > SHA256_MAGIC.length + SHA256_DIGEST) {
    const data = file.subarray(SHA256_MAGIC.length + SHA256_DIGEST);
    const digest = createHash('sha256').update(data).digest();
    if (!digest.equals(file.subarray(SHA256_MAGIC.length, SHA256_MAGIC.length + SHA256_DIGEST))) return { problem: 'checksum mismatch (torn or corrupt)' };
    return { data };
  }
  return { problem: 'not a Berth code cache (bad header)' };
}
