// Placing one fetched artifact (a file or directory on the node: a local
// source, or what an http(s) download wrote) into the task directory,
// checking its checksum and unpacking .tar, .tar.gz/.tgz and .zip archives
// as go-getter does.

import { createReadStream, createWriteStream } from 'node:fs';
import { createHash } from 'node:crypto';
import { copyFile, cp, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';
import yauzl from 'yauzl';
import { ArtifactError } from './artifact-error.js';
import { archiveKind, type ArchiveKind, type Checksum } from './artifact-source.js';

export interface PlaceOptions {
  mode: 'any' | 'file' | 'dir';
  /** The kind to unpack a file as; false: never; undefined: by its name. */
  archive: ArchiveKind | false | undefined;
  checksum?: Checksum | undefined;
  /** The source as the job wrote it, for messages. */
  label: string;
  /** The file's name in mode any (default: the source's own). */
  name?: string | undefined;
}

/**
 * Copies or unpacks `src` to `dest`. mode any: a directory's contents or an
 * archive's go into the directory `dest`, another file into it under its
 * own name (or `name`); file: `dest` is the file written; dir: `src` must be
 * a directory or an archive. Overwrites what is there. Throws ArtifactError
 * TASK_ARTIFACT_FAILED (a wrong checksum too, before anything is written).
 */
export async function fetchArtifact(src: string, dest: string, opts: PlaceOptions): Promise<void> {
  const fail = (what: string, cause?: unknown): never => {
    throw new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: ${what}`, { cause });
  };
  const info = await stat(src).catch((err: unknown) => fail(`${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : String(err)} (${src})`, err));
  if (opts.checksum && info.isFile()) await verifyChecksum(src, opts.checksum, opts.label);
  const kind = opts.archive === false || !info.isFile() ? undefined : (opts.archive ?? archiveKind(opts.name ?? src));
  if (opts.mode === 'file' && info.isDirectory()) fail('mode "file" but the source is a directory');
  if (opts.mode === 'dir' && info.isFile() && !kind) fail('mode "dir" but the source is a file and not an archive');
  try {
    if (info.isDirectory()) {
      await mkdir(dest, { recursive: true });
      await cp(src, dest, { recursive: true, force: true });
    } else if (opts.mode === 'file') {
      await mkdir(path.dirname(dest), { recursive: true });
      await copyFile(src, dest);
    } else if (kind) {
      await mkdir(dest, { recursive: true });
      if (kind === 'zip') await unzip(src, dest);
      // node-tar refuses absolute paths and `..` entries, and never writes through a symlink.
      else await tar.x({ file: src, cwd: dest, gzip: kind === 'tgz' ? true : undefined, strict: true });
    } else {
      await mkdir(dest, { recursive: true });
      await copyFile(src, path.join(dest, opts.name ?? path.basename(src)));
    }
  } catch (err) {
    if (err instanceof ArtifactError) throw err;
    fail(`${kind ? 'cannot unpack' : 'cannot copy'}: ${(err as Error).message}`, err);
  }
}

/** Unpacks a zip file into `dest`; entries naming a path outside it are refused. */
async function unzip(file: string, dest: string): Promise<void> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.open(file, { lazyEntries: true, strictFileNames: true }, (err, z) => (err ? reject(err) : resolve(z))));
  await new Promise<void>((resolve, reject) => {
    zip.on('error', reject);
    zip.on('end', () => resolve());
    zip.on('entry', (entry: yauzl.Entry) => {
      const target = path.resolve(dest, entry.fileName);
      if (target !== dest && !target.startsWith(dest + path.sep)) {
        zip.close();
        reject(new Error(`entry ${entry.fileName} points outside the destination`));
        return;
      }
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

/** Throws ArtifactError TASK_ARTIFACT_FAILED unless `file`'s digest is `want`'s (go-getter's words). */
export async function verifyChecksum(file: string, want: Checksum, label: string): Promise<void> {
  const hash = createHash(want.algorithm);
  await pipeline(createReadStream(file), hash);
  const got = hash.digest('hex');
  if (got !== want.hex) {
    throw new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${label}: checksums did not match: expected ${want.algorithm}:${want.hex}, got ${want.algorithm}:${got}`);
  }
}
