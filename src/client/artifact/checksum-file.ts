// go-getter's `checksum = "file:URL"`: the checksum file (an http(s) URL, a
// file:// URL or a path on the node) is read before the artifact, and the
// digest is the one on the line naming the artifact's file, in GNU style
// (`<hex>  name`, `<hex> *name`) or BSD style (`SHA256 (name) = <hex>`); a
// line with no name (a bare digest) matches any file.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeError } from '../../lib/index.js';
import { ArtifactError } from './artifact-error.js';
import { parseDigest, type Checksum, type Digest } from './artifact-source.js';

export interface ChecksumFetchOptions {
  /** The source as the job wrote it, for messages. */
  label: string;
  /** HTTP headers for an http(s) checksum file (the artifact's own). */
  headers: Readonly<Record<string, string>>;
  /** The whole download must end within this. */
  readTimeoutMs: number;
  /** A checksum file larger than this is refused. */
  maxBytes: number;
  /** May a checksum file on the node at this path be read (the client's file_roots)? */
  mayReadHost: (file: string) => Promise<boolean>;
  signal?: AbortSignal | undefined;
}

/**
 * The digest `checksum` asks of the file at `sourcePath` (the artifact
 * URL's path, or its path on the node): itself, or the matching line of
 * its checksum file. Throws ArtifactError TASK_ARTIFACT_FAILED when the
 * file cannot be read or names no digest for the source (go-getter's "no
 * checksum found in"), TASK_ARTIFACT_UNSUPPORTED when file_roots forbid it.
 */
export async function resolveChecksum(checksum: Checksum | undefined, sourcePath: string, opts: ChecksumFetchOptions): Promise<Digest | undefined> {
  if (!checksum || !('file' in checksum)) return checksum;
  const fail = (what: string, cause?: unknown): never => {
    throw new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: ${what}`, { cause });
  };
  const remote = /^https?:\/\//i.test(checksum.file);
  let text: string;
  let filePath: string;
  if (remote) {
    const url = new URL(checksum.file);
    filePath = decodeURIComponent(url.pathname);
    text = await download(url, opts).catch((err: unknown) => (err instanceof ArtifactError ? Promise.reject(err) : fail(`Error downloading checksum file: ${describeError(err)}`, err)));
  } else {
    filePath = /^file:\/\//i.test(checksum.file) ? fileURLToPath(checksum.file) : checksum.file;
    if (!(await opts.mayReadHost(filePath))) {
      throw new ArtifactError('TASK_ARTIFACT_UNSUPPORTED', `artifact source ${opts.label}: checksum file ${checksum.file} is outside the client's file_roots`);
    }
    text = await readFile(filePath, 'utf8').catch((err: unknown) => fail(`Error downloading checksum file: ${describeError(err)}`, err));
  }
  return digestFor(text, sourcePath, filePath) ?? fail(`no checksum found in: ${checksum.file}`);
}

async function download(url: URL, opts: ChecksumFetchOptions): Promise<string> {
  const signal = AbortSignal.any([AbortSignal.timeout(opts.readTimeoutMs), ...(opts.signal ? [opts.signal] : [])]);
  const res = await fetch(url, { headers: { ...opts.headers }, redirect: 'follow', signal });
  if (!res.ok) throw new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: Error downloading checksum file: bad response code: ${res.status}`);
  const body = Buffer.from(await res.arrayBuffer());
  if (opts.maxBytes > 0 && body.length > opts.maxBytes) throw new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: checksum file larger than http_max_size (${opts.maxBytes} bytes)`);
  return body.toString('utf8');
}

/**
 * The digest for `sourcePath` in a checksum file's text (at `checksumPath`),
 * as go-getter's ChecksumFromFile matches a line: by the file's name, with
 * `*` or `?` before it, its path relative to the checksum file's directory
 * (with or without `./`), or its absolute path; the first line without a
 * name matches anything. Lines it cannot read are skipped. Pure.
 */
export function digestFor(text: string, sourcePath: string, checksumPath: string): Digest | undefined {
  const filename = path.posix.basename(sourcePath);
  const relpath = path.posix.relative(path.posix.dirname(checksumPath), sourcePath);
  const names = new Set([filename, `*${filename}`, `?${filename}`, relpath, `./${relpath}`, sourcePath]);
  for (const line of text.split('\n')) {
    const parts = line.trim().split(/\s+/).filter(Boolean);
    let name: string;
    let digest: Digest | string;
    if (parts.length === 4) {
      const paren = parts[1]!;
      if (paren.length <= 2 || !paren.startsWith('(') || !paren.endsWith(')')) continue;
      name = paren.slice(1, -1);
      digest = parseDigest(parts[0]!, parts[3]!);
    } else if (parts.length === 2) {
      name = parts[1]!;
      digest = parseDigest(undefined, parts[0]!);
    } else if (parts.length === 0) {
      continue;
    } else {
      name = '';
      digest = parseDigest(undefined, parts[0]!);
    }
    if (typeof digest === 'string') continue;
    if (name === '' || names.has(name)) return digest;
  }
  return undefined;
}
