// Placing one fetched artifact (a file or directory on the node: a local
// source, or what an http(s) download wrote) into the task directory,
// checking its checksum and unpacking archives and compressed files as
// go-getter does (decompress.ts), within the client's limits.

import { createReadStream } from 'node:fs';
import { createHash } from 'node:crypto';
import { copyFile, cp, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ArtifactError } from './artifact-error.js';
import { DEFAULT_ARTIFACT_LIMITS } from './artifact-limits.js';
import { archiveKind, type ArchiveKind, type Digest } from './artifact-source.js';
import type * as Unpackers from './decompress.js';
import type { Compression, UnpackLimits } from './decompress.js';

export interface PlaceOptions {
  mode: 'any' | 'file' | 'dir';
  /** The kind to unpack a file as; false: never; undefined: by its name. */
  archive: ArchiveKind | false | undefined;
  /** The digest the file must have (a checksum file is read before: checksum-file.ts). */
  checksum?: Digest | undefined;
  /** The source as the job wrote it, for messages. */
  label: string;
  /** The file's name in mode any (default: the source's own). */
  name?: string | undefined;
  /** The client's decompression limits (default Nomad's). */
  limits?: UnpackLimits | undefined;
}

const TAR_COMPRESSION: Partial<Record<ArchiveKind, Compression | null>> = { tar: null, tgz: 'gz', tbz2: 'bz2', txz: 'xz', tzst: 'zst' };
const SINGLE_FILE: Partial<Record<ArchiveKind, { c: Compression; words: string }>> = {
  gz: { c: 'gz', words: 'gzip' },
  bz2: { c: 'bz2', words: 'bzip2' },
  xz: { c: 'xz', words: 'xz' },
  zst: { c: 'zst', words: 'zstd' },
};

// The unpackers and their libraries (tar, zip, bzip2, xz, zstd) load with the first archive, not with the agent.
let loaded: Promise<typeof Unpackers> | undefined;
const unpackers = (): Promise<typeof Unpackers> => (loaded ??= import('./decompress.js'));

/**
 * Copies or unpacks `src` to `dest`. mode any: a directory's contents or an
 * archive's go into the directory `dest`, another file into it under its
 * own name (or `name`); file: `dest` is the file written (a compressed file
 * is written decompressed); dir: `src` must be a directory or an archive. A
 * single compressed file (.gz, .bz2, .xz, .zst) unpacks only in mode file,
 * as go-getter's decompressors allow. Overwrites what is there. Throws
 * ArtifactError TASK_ARTIFACT_FAILED (a wrong checksum too, before anything
 * is written; a limit passed, with what was written removed for a file).
 */
export async function fetchArtifact(src: string, dest: string, opts: PlaceOptions): Promise<void> {
  const fail = (what: string, cause?: unknown): never => {
    throw new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: ${what}`, { cause });
  };
  const limits: UnpackLimits = opts.limits ?? { sizeLimit: DEFAULT_ARTIFACT_LIMITS.decompressionSizeLimit, fileCountLimit: DEFAULT_ARTIFACT_LIMITS.decompressionFileCountLimit };
  const info = await stat(src).catch((err: unknown) => fail(`${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : String(err)} (${src})`, err));
  if (opts.checksum && info.isFile()) await verifyChecksum(src, opts.checksum, opts.label);
  const kind = opts.archive === false || !info.isFile() ? undefined : (opts.archive ?? archiveKind(opts.name ?? src));
  const single = kind ? SINGLE_FILE[kind] : undefined;
  if (opts.mode === 'file' && info.isDirectory()) fail('mode "file" but the source is a directory');
  if (opts.mode === 'dir' && info.isFile() && !kind) fail('mode "dir" but the source is a file and not an archive');
  if (single && opts.mode !== 'file') {
    // go-getter's words; the rest says how to get what was meant.
    fail(`${single.words}-compressed files can only unarchive to a single file (set mode = "file" with a destination naming the file, or options { archive = false } to keep it compressed)`);
  }
  try {
    if (info.isDirectory()) {
      await mkdir(dest, { recursive: true });
      await cp(src, dest, { recursive: true, force: true });
    } else if (single) {
      await (await unpackers()).decompressFile(src, dest, single.c, limits);
    } else if (opts.mode === 'file') {
      await mkdir(path.dirname(dest), { recursive: true });
      await copyFile(src, dest);
    } else if (kind === 'zip') {
      await (await unpackers()).unzip(src, dest, limits);
    } else if (kind) {
      await (await unpackers()).untar(src, dest, TAR_COMPRESSION[kind] ?? undefined, limits);
    } else {
      await mkdir(dest, { recursive: true });
      await copyFile(src, path.join(dest, opts.name ?? path.basename(src)));
    }
  } catch (err) {
    if (err instanceof ArtifactError) throw err;
    fail(`${kind ? 'cannot unpack' : 'cannot copy'}: ${(err as Error).message}`, err);
  }
}

/** Throws ArtifactError TASK_ARTIFACT_FAILED unless `file`'s digest is `want`'s (go-getter's words). */
export async function verifyChecksum(file: string, want: Digest, label: string): Promise<void> {
  const hash = createHash(want.algorithm);
  await pipeline(createReadStream(file), hash);
  const got = hash.digest('hex');
  if (got !== want.hex) {
    throw new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${label}: checksums did not match: expected ${want.algorithm}:${want.hex}, got ${want.algorithm}:${got}`);
  }
}
