// Fetching one artifact from the node's filesystem (a path or a file:// URL)
// into the task directory, unpacking .tar, .tar.gz/.tgz and .zip archives
// as go-getter does. Berth's nodes fetch nothing over a network.

import { createWriteStream } from 'node:fs';
import { copyFile, cp, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import * as tar from 'tar';
import yauzl from 'yauzl';
import { BerthError } from '../../lib/index.js';

export type ArtifactErrorCode = 'TASK_ARTIFACT_UNSUPPORTED' | 'TASK_ARTIFACT_FAILED';

/** An artifact that cannot be fetched. UNSUPPORTED: a source Berth never fetches (remote). */
export class ArtifactError extends BerthError<ArtifactErrorCode> {}

const ARCHIVES: [RegExp, 'tar' | 'tgz' | 'zip'][] = [
  [/\.(tar\.gz|tgz)$/i, 'tgz'],
  [/\.tar$/i, 'tar'],
  [/\.zip$/i, 'zip'],
];

/**
 * The local path an artifact source names, relative paths taken from
 * `baseDir`. Throws ArtifactError TASK_ARTIFACT_UNSUPPORTED for a remote
 * source (http(s)://, git::, s3::, ...). Pure.
 */
export function localArtifactPath(source: string, baseDir: string): string {
  const forced = /^([a-z0-9]+)::/i.exec(source);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(source);
  if (forced || (scheme && scheme[1]?.toLowerCase() !== 'file') || /^[\w.-]+@[\w.-]+:/.test(source)) {
    throw new ArtifactError('TASK_ARTIFACT_UNSUPPORTED', `artifact source ${source}: Berth fetches artifacts only from local paths and file:// URLs`);
  }
  return scheme ? fileURLToPath(source) : path.resolve(baseDir, source);
}

/** What kind of archive a path names, by its extension; undefined for none. */
export function archiveKind(file: string): 'tar' | 'tgz' | 'zip' | undefined {
  return ARCHIVES.find(([re]) => re.test(file))?.[1];
}

/**
 * Copies or unpacks `src` to `dest`. mode any: a directory's contents or an
 * archive's go into the directory `dest`, another file into it under its
 * own name; file: `dest` is the file written; dir: `src` must be a directory
 * or an archive. Overwrites what is there. Throws ArtifactError.
 */
export async function fetchArtifact(src: string, dest: string, opts: { mode: 'any' | 'file' | 'dir'; unpack: boolean; label: string }): Promise<void> {
  const fail = (what: string, cause?: unknown): never => {
    throw new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: ${what}`, { cause });
  };
  const info = await stat(src).catch((err: unknown) => fail(`${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : String(err)} (${src})`, err));
  const kind = opts.unpack && info.isFile() ? archiveKind(src) : undefined;
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
      await copyFile(src, path.join(dest, path.basename(src)));
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
