// What an artifact's `source` names, read as go-getter reads it: a local path
// or file:// URL, an http(s):// URL, or a git repository (`git::URL`,
// `git@host:path`, `github.com/owner/repo`), with the block's `options` taken
// as go-getter's URL options (`archive`, `checksum`, `filename` for every
// source; `ref` and `depth` for git). Pure: nothing is fetched here.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArtifactError } from './artifact-error.js';

/** An archive (tar, possibly compressed, or zip) or a single compressed file (gz, bz2, xz, zst). */
export type ArchiveKind = 'tar' | 'tgz' | 'tbz2' | 'txz' | 'tzst' | 'zip' | 'gz' | 'bz2' | 'xz' | 'zst';

/** go-getter's decompressors by the name `archive=` and the file's extension use. */
const ARCHIVE_NAMES: Record<string, ArchiveKind> = {
  tar: 'tar',
  'tar.gz': 'tgz',
  tgz: 'tgz',
  'tar.bz2': 'tbz2',
  tbz2: 'tbz2',
  'tar.xz': 'txz',
  txz: 'txz',
  'tar.zst': 'tzst',
  tzst: 'tzst',
  zip: 'zip',
  gz: 'gz',
  bz2: 'bz2',
  xz: 'xz',
  zst: 'zst',
};

/** What kind of archive a path names by its extension, the longest that matches (as go-getter picks); undefined for none. */
export function archiveKind(file: string): ArchiveKind | undefined {
  const lower = file.toLowerCase();
  let best: string | undefined;
  for (const ext of Object.keys(ARCHIVE_NAMES)) if (lower.endsWith(`.${ext}`) && ext.length > (best?.length ?? 0)) best = ext;
  return best === undefined ? undefined : ARCHIVE_NAMES[best];
}

export type ChecksumAlgorithm = 'md5' | 'sha1' | 'sha256' | 'sha512';

/**
 * A checksum the fetched file must have: go-getter's `checksum =
 * "type:value"` (or a bare value, its type by its length), or `file:URL`,
 * a checksum file (GNU or BSD style) read before the download for the line
 * of the source's file name.
 */
export type Checksum = Digest | { file: string };
/** A digest the file must have. */
export interface Digest {
  algorithm: ChecksumAlgorithm;
  hex: string;
}

/** How one artifact is fetched. `archive`: the kind to unpack as, false never, undefined by the file's name. */
export type ArtifactSource =
  | { kind: 'local'; path: string; archive: ArchiveKind | false | undefined; checksum: Checksum | undefined }
  | { kind: 'http'; url: URL; archive: ArchiveKind | false | undefined; checksum: Checksum | undefined; filename: string | undefined }
  | { kind: 'git'; url: string; ref: string | undefined; depth: number | undefined; sshKey: Buffer | undefined };

const HEX_LENGTHS: Record<number, ChecksumAlgorithm> = { 32: 'md5', 40: 'sha1', 64: 'sha256', 128: 'sha512' };
const GETTERS_NOT_HERE = ['s3', 'gcs', 'hg'];

/**
 * Reads `source` (already interpolated) and `options` into how to fetch it;
 * relative paths are taken from `baseDir`. Throws ArtifactError
 * TASK_ARTIFACT_UNSUPPORTED for a source or option Berth cannot fetch (s3,
 * gcs, hg, an unknown scheme) or a malformed option (an `sshkey` that is not
 * a base64-encoded private key).
 */
export function readArtifactSource(source: string, options: Readonly<Record<string, string>>, baseDir: string): ArtifactSource {
  const refuse = (what: string): never => {
    throw new ArtifactError('TASK_ARTIFACT_UNSUPPORTED', `artifact source ${source}: ${what}`);
  };
  let rest = source;
  let forced: string | undefined;
  const forcedMatch = /^([a-z0-9]+)::(.*)$/is.exec(source);
  if (forcedMatch) {
    forced = forcedMatch[1]!.toLowerCase();
    rest = forcedMatch[2]!;
  }
  if (/^[\w.-]+@[\w.-]+:/.test(rest)) {
    // scp-like ssh (git@github.com:owner/repo.git): git, over the node's own ssh set-up.
    forced ??= 'git';
  } else if (!forced && /^github\.com\/[^/]+\/[^/]+/i.test(rest)) {
    forced = 'git';
    rest = `https://${rest.replace(/\.git$/i, '')}.git`;
  }
  if (forced && GETTERS_NOT_HERE.includes(forced)) refuse(`Berth does not fetch from ${forced}; fetch it with an http(s) URL, git or a local path`);
  if (forced && forced !== 'git' && forced !== 'http' && forced !== 'https' && forced !== 'file') refuse(`unknown getter "${forced}::"`);

  // The block's options join the URL's own query, as Nomad passes them to go-getter.
  const query = new Map<string, string>();
  let base = rest;
  const q = rest.indexOf('?');
  if (q >= 0) {
    base = rest.slice(0, q);
    for (const [k, v] of new URLSearchParams(rest.slice(q + 1))) query.set(k, v);
  }
  for (const [k, v] of Object.entries(options)) query.set(k, v);
  const take = (key: string): string | undefined => {
    const v = query.get(key);
    query.delete(key);
    return v;
  };

  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(base)?.[1]?.toLowerCase();
  if (forced === 'git' || scheme === 'ssh') {
    const ref = take('ref');
    const depthText = take('depth');
    const sshKey = readSshKey(take('sshkey'), refuse);
    let depth: number | undefined;
    if (depthText !== undefined) {
      depth = Number(depthText);
      if (!Number.isInteger(depth) || depth < 0) refuse(`option depth: "${depthText}" is not a whole number`);
    }
    if (query.size > 0) refuse(`option ${[...query.keys()].sort().join(', ')}: not an option of a git source (ref, depth, sshkey)`);
    return { kind: 'git', url: base, ref: ref || undefined, depth: depth || undefined, sshKey };
  }

  const archive = readArchive(take('archive'), refuse);
  const checksum = readChecksum(take('checksum'), refuse);
  if (scheme === 'http' || scheme === 'https') {
    const filename = take('filename') || undefined;
    let url: URL;
    try {
      url = new URL(base);
    } catch {
      return refuse('not a valid URL');
    }
    for (const [k, v] of query) url.searchParams.append(k, v);
    return { kind: 'http', url, archive, checksum, filename };
  }
  if (scheme && scheme !== 'file') refuse(`Berth does not fetch ${scheme}:// URLs; use http(s), git or a local path`);
  if (forced === 'http' || forced === 'https') refuse(`${forced}:: needs an ${forced}:// URL`);
  const local = scheme ? fileURLToPath(base) : path.resolve(baseDir, base);
  return { kind: 'local', path: local, archive, checksum };
}

function readArchive(value: string | undefined, refuse: (what: string) => never): ArchiveKind | false | undefined {
  if (value === undefined || value === '' || value === 'true') return undefined;
  if (value === 'false' || value === '0') return false;
  const kind = ARCHIVE_NAMES[value.toLowerCase()];
  return kind ?? refuse(`option archive: Berth unpacks ${Object.keys(ARCHIVE_NAMES).join(', ')}, not "${value}"`);
}

function readChecksum(value: string | undefined, refuse: (what: string) => never): Checksum | undefined {
  if (value === undefined || value === '') return undefined;
  const colon = value.indexOf(':');
  if (colon >= 0 && value.slice(0, colon).toLowerCase() === 'file') {
    const file = value.slice(colon + 1);
    if (!/^(https?:\/\/|file:\/\/|\/)/i.test(file)) refuse(`option checksum: "${value}": a checksum file is an http(s):// or file:// URL or an absolute path`);
    return { file };
  }
  const parsed = parseDigest(colon >= 0 ? value.slice(0, colon) : undefined, colon >= 0 ? value.slice(colon + 1) : value);
  return typeof parsed === 'string' ? refuse(`option checksum: ${parsed} in "${value}"`) : parsed;
}

/**
 * A digest in hex with its type, named or (undefined) guessed from its
 * length, as go-getter reads one; a string saying what is wrong otherwise.
 * Pure.
 */
export function parseDigest(type: string | undefined, value: string): Digest | string {
  const hex = value.toLowerCase();
  if (!/^[0-9a-f]+$/.test(hex) || hex.length % 2 !== 0) return 'not a hexadecimal digest';
  const named = type !== undefined ? type.toLowerCase() : HEX_LENGTHS[hex.length];
  if (named !== 'md5' && named !== 'sha1' && named !== 'sha256' && named !== 'sha512') return 'unknown checksum type (md5, sha1, sha256 or sha512)';
  return { algorithm: named, hex };
}

/** go-getter's `sshkey`: a private key, base64-encoded (`base64 -w0 < id_ed25519`). */
function readSshKey(value: string | undefined, refuse: (what: string) => never): Buffer | undefined {
  if (value === undefined || value === '') return undefined;
  const compact = value.replace(/\s+/g, '');
  const key = /^[A-Za-z0-9+/]+={0,2}$/.test(compact) && compact.length % 4 === 0 ? Buffer.from(compact, 'base64') : undefined;
  if (!key) return refuse('option sshkey: not base64 (give the private key base64-encoded, e.g. the output of `base64 -w0 ~/.ssh/id_ed25519`)');
  if (!/^-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(key.toString('latin1').trimStart())) {
    return refuse('option sshkey: the decoded text is not a private key (it should start with "-----BEGIN ... PRIVATE KEY-----")');
  }
  return key;
}
