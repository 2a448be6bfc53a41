// Unpacking a fetched file as go-getter's decompressors do: tar archives
// (plain, or compressed with gzip, bzip2, xz or zstd), zip archives, and
// single files compressed with one of them, within the client's limits on
// the unpacked size and the entry count (go-getter's FileSizeLimit and
// FilesLimit, Nomad's decompression_size_limit and
// decompression_file_count_limit). Node has gzip; bzip2 (unbzip2-stream),
// xz (xz-decompress) and zstd (fzstd) come from libraries, all streamed.

import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Duplex, PassThrough, Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createGunzip } from 'node:zlib';
import { Decompress as ZstdDecompress } from 'fzstd';
import * as tar from 'tar';
import bz2 from 'unbzip2-stream';
import xzDecompress from 'xz-decompress';
import yauzl from 'yauzl';

// A CommonJS bundle: its named export is on the default one.
const { XzReadableStream } = xzDecompress;

/** How a single file is compressed. */
export type Compression = 'gz' | 'bz2' | 'xz' | 'zst';

/** What an unpack may write: bytes in all and entries (0: no limit). */
export interface UnpackLimits {
  sizeLimit: number;
  fileCountLimit: number;
}

/** A limit was passed; the message says which, in go-getter's words where it has them. */
export class UnpackLimitError extends Error {}

/** A stream that decompresses `kind`. Each call makes a new one. */
export function decompressor(kind: Compression): Duplex {
  if (kind === 'gz') return createGunzip();
  if (kind === 'bz2') return fromThrough(bz2());
  if (kind === 'zst') return zstd();
  const input = new PassThrough();
  const output = Readable.fromWeb(new XzReadableStream(Readable.toWeb(input) as ReadableStream<Uint8Array>) as WebReadableStream<Uint8Array>);
  return Duplex.from({ writable: input, readable: output });
}

/** unbzip2-stream's classic `through` stream as a streams3 Transform, errors included. */
function fromThrough(t: ReturnType<typeof bz2>): Transform {
  const out = new Transform({
    transform(chunk: Buffer, _enc, done) {
      try {
        t.write(chunk);
        done();
      } catch (err) {
        done(err as Error);
      }
    },
    flush(done) {
      t.once('end', () => done());
      try {
        t.end();
      } catch (err) {
        done(err as Error);
      }
    },
  });
  t.on('data', (d: Buffer) => out.push(d));
  t.on('error', (err: Error) => out.destroy(err));
  return out;
}

function zstd(): Transform {
  const d = new ZstdDecompress((data) => out.push(Buffer.from(data)));
  const out = new Transform({
    transform(chunk: Buffer, _enc, done) {
      try {
        d.push(chunk);
        done();
      } catch (err) {
        done(err as Error);
      }
    },
    flush(done) {
      try {
        d.push(new Uint8Array(0), true);
        done();
      } catch (err) {
        done(err as Error);
      }
    },
  });
  return out;
}

/** Passes bytes through, failing once more than `limit` (0: none) went by. */
function sizeGuard(limit: number, what: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (limit > 0 && seen > limit) return done(new UnpackLimitError(`${what} larger than limit: ${limit}`));
      done(null, chunk);
    },
  });
}

/**
 * Writes the single file compressed in `src` to `dest` (go-getter's gzip,
 * bzip2, xz and zstd decompressors). Throws UnpackLimitError past the size
 * limit (leaving no partial file), or the decompressor's error.
 */
export async function decompressFile(src: string, dest: string, kind: Compression, limits: UnpackLimits): Promise<void> {
  await mkdir(path.dirname(dest), { recursive: true });
  try {
    await pipeline(createReadStream(src), decompressor(kind), sizeGuard(limits.sizeLimit, 'decompressed file'), createWriteStream(dest, { mode: 0o644 }));
  } catch (err) {
    await rm(dest, { force: true });
    throw err;
  }
}

/**
 * Unpacks the tar archive in `src` (compressed with `compression`, if any)
 * into the directory `dest`. node-tar refuses absolute paths and `..`
 * entries and never writes through a symlink. Throws UnpackLimitError when
 * the entries' sizes add up past the size limit or they are more than the
 * count limit (go-getter's untar counts so, before writing an entry).
 */
export async function untar(src: string, dest: string, compression: Compression | undefined, limits: UnpackLimits): Promise<void> {
  await mkdir(dest, { recursive: true });
  let files = 0;
  let size = 0;
  const unpack: tar.Unpack = new tar.Unpack({
    cwd: dest,
    strict: true,
    filter: (_p, entry) => {
      files += 1;
      size += entry.size ?? 0;
      if (limits.fileCountLimit > 0 && files > limits.fileCountLimit) unpack.abort(new UnpackLimitError(`tar archive contains too many files: ${files} > ${limits.fileCountLimit}`));
      else if (limits.sizeLimit > 0 && size > limits.sizeLimit) unpack.abort(new UnpackLimitError(`tar archive larger than limit: ${limits.sizeLimit}`));
      return true;
    },
  });
  if (compression) await pipeline(createReadStream(src), decompressor(compression), unpack);
  else await pipeline(createReadStream(src), unpack);
}

/** Unpacks a zip file into `dest`; entries naming a path outside it are refused; limits as untar's. */
export async function unzip(file: string, dest: string, limits: UnpackLimits): Promise<void> {
  await mkdir(dest, { recursive: true });
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.open(file, { lazyEntries: true, strictFileNames: true }, (err, z) => (err ? reject(err) : resolve(z))));
  if (limits.fileCountLimit > 0 && zip.entryCount > limits.fileCountLimit) {
    zip.close();
    throw new UnpackLimitError(`zip archive contains too many files: ${zip.entryCount} > ${limits.fileCountLimit}`);
  }
  let size = 0;
  await new Promise<void>((resolve, reject) => {
    const fail = (err: Error): void => {
      zip.close();
      reject(err);
    };
    zip.on('error', reject);
    zip.on('end', () => resolve());
    zip.on('entry', (entry: yauzl.Entry) => {
      const target = path.resolve(dest, entry.fileName);
      if (target !== dest && !target.startsWith(dest + path.sep)) return fail(new Error(`entry ${entry.fileName} points outside the destination`));
      size += entry.uncompressedSize;
      if (limits.sizeLimit > 0 && size > limits.sizeLimit) return fail(new UnpackLimitError(`zip archive larger than limit: ${limits.sizeLimit}`));
      if (entry.fileName.endsWith('/')) {
        mkdir(target, { recursive: true }).then(() => zip.readEntry(), reject);
        return;
      }
      zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        const mode = (entry.externalFileAttributes >>> 16) & 0o777;
        mkdir(path.dirname(target), { recursive: true })
          .then(() => pipeline(stream, createWriteStream(target, { mode: mode || 0o644 })))
          .then(() => zip.readEntry(), reject);
      });
    });
    zip.readEntry();
  });
}
