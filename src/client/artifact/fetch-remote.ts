// Fetching an artifact from over a network, as go-getter's http and git
// getters do: an http(s) download (the job's `headers`, non-2xx refused with
// its code, then checked and placed or unpacked like a local file), or a git
// clone (`ref`, `depth`, submodules) copied into the destination. Downloads
// and clones are made in a scratch directory the caller names and removed
// after.

import { execFile } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { describeError } from '../../lib/index.js';
import { ArtifactError } from './artifact-error.js';
import type { ArtifactSource } from './artifact-source.js';
import { fetchArtifact } from './fetch-artifact.js';

/** Nomad's client default for `artifact { git_timeout }`. */
const GIT_TIMEOUT_MS = 10 * 60_000;

export interface RemoteFetchOptions {
  mode: 'any' | 'file' | 'dir';
  /** The source as the job wrote it, for messages. */
  label: string;
  /** HTTP headers (the artifact's `headers`, interpolated). */
  headers: Readonly<Record<string, string>>;
  /** Where scratch downloads and clones go (removed after). */
  scratchDir: string;
  /** Ends the fetch (the task was stopped). */
  signal?: AbortSignal | undefined;
}

/** Fetches an http(s) or git source into `dest`. Throws ArtifactError (TASK_ARTIFACT_FAILED: a retry may help). */
export async function fetchRemote(source: Extract<ArtifactSource, { kind: 'http' | 'git' }>, dest: string, opts: RemoteFetchOptions): Promise<void> {
  await mkdir(opts.scratchDir, { recursive: true });
  const scratch = await mkdtemp(path.join(opts.scratchDir, 'artifact-'));
  try {
    if (source.kind === 'http') await fetchHttp(source, dest, scratch, opts);
    else await fetchGit(source, dest, scratch, opts);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function fetchHttp(source: Extract<ArtifactSource, { kind: 'http' }>, dest: string, scratch: string, opts: RemoteFetchOptions): Promise<void> {
  const fail = (what: string, cause?: unknown): never => {
    throw new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: ${what}`, { cause });
  };
  const name = source.filename ?? decodeURIComponent(path.posix.basename(source.url.pathname));
  if (!name || source.url.pathname.endsWith('/')) fail('the URL names no file (it ends with "/"); name one, or set options { filename = "..." }');
  const file = path.join(scratch, 'download');
  try {
    const res = await fetch(source.url, { headers: { ...opts.headers }, redirect: 'follow', signal: opts.signal ?? null });
    if (!res.ok || !res.body) fail(`bad response code: ${res.status}`);
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), createWriteStream(file));
  } catch (err) {
    if (err instanceof ArtifactError) throw err;
    fail(`download failed: ${describeError((err as { cause?: unknown }).cause ?? err)}`, err);
  }
  await fetchArtifact(file, dest, { mode: opts.mode, archive: source.archive, checksum: source.checksum, label: opts.label, name });
}

async function fetchGit(source: Extract<ArtifactSource, { kind: 'git' }>, dest: string, scratch: string, opts: RemoteFetchOptions): Promise<void> {
  if (opts.mode === 'file') {
    throw new ArtifactError('TASK_ARTIFACT_UNSUPPORTED', `artifact source ${opts.label}: a git repository is a directory; mode "file" cannot hold it`);
  }
  const repo = path.join(scratch, 'repo');
  const clone = ['clone', '--quiet'];
  if (source.depth) clone.push('--depth', String(source.depth));
  // With a depth, the ref must be a branch or tag that the shallow clone starts from (as go-getter does).
  if (source.depth && source.ref) clone.push('--branch', source.ref);
  await git([...clone, '--', source.url, repo], scratch, opts);
  if (source.ref && !source.depth) await git(['checkout', '--quiet', source.ref], repo, opts);
  if (existsSync(path.join(repo, '.gitmodules'))) await git(['submodule', 'update', '--init', '--recursive', '--quiet'], repo, opts);
  await mkdir(dest, { recursive: true });
  await cp(repo, dest, { recursive: true, force: true });
}

/** Runs git without a terminal to prompt on; its own last words on a failure. */
function git(args: string[], cwd: string, opts: RemoteFetchOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { cwd, timeout: GIT_TIMEOUT_MS, signal: opts.signal, env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true' }, maxBuffer: 4 << 20 },
      (err, _stdout, stderr) => {
        if (!err) return resolve();
        const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
        // git's first fatal line says why; what follows is advice.
        const said = lines.find((l) => /^(fatal|error):/.test(l)) ?? lines.at(-1);
        const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'git is not installed on this node' : said || describeError(err);
        reject(new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: git ${args[0]} failed: ${why}`, { cause: err }));
      },
    );
  });
}
