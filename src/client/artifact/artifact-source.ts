// What an artifact's `source` names, read as go-getter reads it: a local path
// or file:// URL, an http(s):// URL, or a git repository (`git::URL`,
// `git@host:path`, `github.com/owner/repo`), with the block's `options` taken
// as go-getter's URL options (`archive`, `checksum`, `filename` for every
// source; `ref` and `depth` for git). Pure: nothing is fetched here.

import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArtifactError } from './artifact-error.js';

export type ArchiveKind = 'tar' | 'tgz' | 'zip';

const ARCHIVES: [RegExp, ArchiveKind][] = [
  [/\.(tar\.gz|tgz)$/i, 'tgz'],
  [/\.tar$/i, 'tar'],
  [/\.zip$/i, 'zip'],
];
/** go-getter's `archive=` names for the kinds Berth unpacks. */
const ARCHIVE_NAMES: Record<string, ArchiveKind> = { tar: 'tar', 'tar.gz': 'tgz', tgz: 'tgz', zip: 'zip' };

/** What kind of archive a path names, by its extension; undefined for none. */
export function archiveKind(file: string): ArchiveKind | undefined {
  return ARCHIVES.find(([re]) => re.test(file))?.[1];
}

/** A checksum the fetched file must have (go-getter's `checksum = "type:value"`). */
export interface Checksum {
  algorithm: 'md5' | 'sha1' | 'sha256' | 'sha512';
  hex: string;
}

/** How one artifact is fetched. `archive`: the kind to unpack as, false never, undefined by the file's name. */
export type ArtifactSource =
  | { kind: 'local'; path: string; archive: ArchiveKind | false | undefined; checksum: Checksum | undefined }
  | { kind: 'http'; url: URL; archive: ArchiveKind | false | undefined; checksum: Checksum | undefined; filename: string | undefined }
  | { kind: 'git'; url: string; ref: string | undefined; depth: number | undefined };

const HEX_LENGTHS: Record<number, Checksum['algorithm']> = { 32: 'md5', 40: 'sha1', 64: 'sha256', 128: 'sha512' };
const GETTERS_NOT_HERE = ['s3', 'gcs', 'hg'];

/**
 * Reads `source` (already interpolated) and `options` into how to fetch it;
 * relative paths are taken from `baseDir`. Throws ArtifactError
 * TASK_ARTIFACT_UNSUPPORTED for a source or option Berth cannot fetch (s3,
 * gcs, hg, an unknown scheme, an ssh key) or a malformed option.
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
    if (take('sshkey') !== undefined) refuse('option sshkey: Berth does not take ssh keys in a job; give the node an ssh key for this host');
    let depth: number | undefined;
    if (depthText !== undefined) {
      depth = Number(depthText);
      if (!Number.isInteger(depth) || depth < 0) refuse(`option depth: "${depthText}" is not a whole number`);
    }
    if (query.size > 0) refuse(`option ${[...query.keys()].sort().join(', ')}: not an option of a git source (ref, depth)`);
    return { kind: 'git', url: base, ref: ref || undefined, depth: depth || undefined };
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
  const hex = (colon >= 0 ? value.slice(colon + 1) : value).toLowerCase();
  if (!/^[0-9a-f]+$/.test(hex)) refuse(`option checksum: "${value}" is not a hexadecimal digest (a checksum file URL is not supported)`);
  const named = colon >= 0 ? value.slice(0, colon).toLowerCase() : HEX_LENGTHS[hex.length];
  if (named !== 'md5' && named !== 'sha1' && named !== 'sha256' && named !== 'sha512') {
    return refuse(`option checksum: unknown checksum type in "${value}" (md5, sha1, sha256 or sha512)`);
  }
  return { algorithm: named, hex };
}
