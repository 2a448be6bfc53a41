// Unpacking a fetched file as go-getter's decompressors do: tar archives
// (plain, or compressed with gzip, bzip2, xz or zstd), zip archives, and
// single files compressed with one of them, within the client's limits on
// the unpacked size and the entry count (go-getter's FileSizeLimit and
// FilesLimit, Nomad's decompression_size_limit and
// decompression_file_count_limit). Node has gzip; bzip2 (unbzip2-stream),
// xz (xz-decompress) and zstd (fzstd) come from libraries, all streamed.
//
// The libraries (node-tar and yauzl too) are imported when the first archive
// is unpacked (unpackingLibraries), not with this module: the agent bundle then
// leaves them to its side file (scripts/bundle-trims.mjs, packagesAside), ~200
// KB of text an agent's start no longer reads (issue 40).

import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { Duplex, PassThrough, Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createGunzip } from 'node:zlib';
import type * as Fzstd from 'fzstd';
import type * as Tar from 'tar';
import type Bz2 from 'unbzip2-stream';
import type XzDecompress from 'xz-decompress';
import type Yauzl from 'yauzl';

/** The unpacking libraries, each as its own exports. */
interface Libraries {
  tar: typeof Tar;
  yauzl: typeof Yauzl;
  bz2: typeof Bz2;
  XzReadableStream: (typeof XzDecompress)['XzReadableStream'];
  ZstdDecompress: typeof Fzstd.Decompress;
}

let libraries: Promise<Libraries> | undefined;

/**
 * The unpacking libraries, imported on the first call (safe to repeat: one import each). Rejects only if a
 * package cannot be loaded. An import's exports are on the namespace (an ES module), on its `default` (a
 * CommonJS module under Node's loader), or both (a bundle's copy): read where they are.
 */
function unpackingLibraries(): Promise<Libraries> {
  libraries ??= Promise.all([import('tar'), import('yauzl'), import('unbzip2-stream'), import('xz-decompress'), import('fzstd')]).then(([tar, yauzl, bz2, xz, zstd]) => {
    const exportsOf = <T>(m: T & { default?: unknown }, has: string): T => (has in m ? m : (m.default as T));
    return {
      tar: exportsOf(tar as typeof Tar & { default?: unknown }, 'Unpack'),
      yauzl: exportsOf(yauzl, 'open'),
      bz2: (bz2 as { default?: typeof Bz2 }).default ?? (bz2 as unknown as typeof Bz2),
      XzReadableStream: exportsOf(xz, 'XzReadableStream').XzReadableStream,
      ZstdDecompress: exportsOf(zstd as typeof Fzstd & { default?: unknown }, 'Decompress').Decompress,
    };
  });
  return libraries;
}

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
function decompressor(kind: Compression, libs: Libraries): Duplex {
  if (kind === 'gz') return createGunzip();
  if (kind === 'bz2') return fromThrough(libs.bz2());
  if (kind === 'zst') return zstd(libs.ZstdDecompress);
  const input = new PassThrough();
  const output = Readable.fromWeb(new libs.XzReadableStream(Readable.toWeb(input) as ReadableStream<Uint8Array>) as WebReadableStream<Uint8Array>);
  return Duplex.from({ writable: input, readable: output });
}

/** unbzip2-stream's classic `through` stream as a streams3 Transform, errors included. */
function fromThrough(t: ReturnType<typeof Bz2>): Transform {
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

function zstd(ZstdDecompress: Libraries['ZstdDecompress']): Transform {
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
  const libs = await unpackingLibraries();
  await mkdir(path.dirname(dest), { recursive: true });
  try {
    await pipeline(createReadStream(src), decompressor(kind, libs), sizeGuard(limits.sizeLimit, 'decompressed file'), createWriteStream(dest, { mode: 0o644 }));
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
  const libs = await unpackingLibraries();
  await mkdir(dest, { recursive: true });
  let files = 0;
  let size = 0;
  const unpack: Tar.Unpack = new libs.tar.Unpack({
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
  if (compression) await pipeline(createReadStream(src), decompressor(compression, libs), unpack);
  else await pipeline(createReadStream(src), unpack);
}

/** Unpacks a zip file into `dest`; entries naming a path outside it are refused; limits as untar's. */
export async function unzip(file: string, dest: string, limits: UnpackLimits): Promise<void> {
  const { yauzl } = await unpackingLibraries();
  await mkdir(dest, { recursive: true });
  const zip = await new Promise<Yauzl.ZipFile>((resolve, reject) => yauzl.open(file, { lazyEntries: true, strictFileNames: true }, (err, z) => (err ? reject(err) : resolve(z))));
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
    zip.on('entry', (entry: Yauzl.Entry) => {
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
