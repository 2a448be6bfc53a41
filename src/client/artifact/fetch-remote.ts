// Fetching an artifact from over a network, as go-getter's http and git
// getters do: an http(s) download (the job's `headers`, non-2xx refused with
// its code, then checked and placed or unpacked like a local file), or a git
// clone (`ref`, `depth`, submodules, an `sshkey` for ssh) copied into the
// destination, within the client's limits (http_read_timeout, http_max_size,
// git_timeout). Downloads and clones are made in a scratch directory the
// caller names and removed after.

import { execFile } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { describeError } from '../../lib/index.js';
import { ArtifactError } from './artifact-error.js';
import { DEFAULT_ARTIFACT_LIMITS, type ArtifactLimits } from './artifact-limits.js';
import type { ArtifactSource } from './artifact-source.js';
import { resolveChecksum } from './checksum-file.js';
import { fetchArtifact } from './fetch-artifact.js';

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
  /** The client's artifact limits (default Nomad's). */
  limits?: ArtifactLimits | undefined;
  /** May a checksum file on the node at this path be read (default: yes)? */
  mayReadHost?: ((file: string) => Promise<boolean>) | undefined;
  /** The environment git runs in (default this process's). */
  env?: NodeJS.ProcessEnv | undefined;
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
  const limits = opts.limits ?? DEFAULT_ARTIFACT_LIMITS;
  const checksum = await resolveChecksum(source.checksum, decodeURIComponent(source.url.pathname), {
    label: opts.label,
    headers: opts.headers,
    readTimeoutMs: limits.httpReadTimeoutMs,
    maxBytes: limits.httpMaxBytes,
    mayReadHost: opts.mayReadHost ?? (() => Promise.resolve(true)),
    signal: opts.signal,
  });
  const file = path.join(scratch, 'download');
  // go-getter's ReadTimeout bounds the request and the body's read together.
  const timeout = AbortSignal.timeout(limits.httpReadTimeoutMs);
  try {
    const res = await fetch(source.url, { headers: { ...opts.headers }, redirect: 'follow', signal: AbortSignal.any([timeout, ...(opts.signal ? [opts.signal] : [])]) });
    if (!res.ok || !res.body) fail(`bad response code: ${res.status}`);
    await pipeline(Readable.fromWeb(res.body as WebReadableStream<Uint8Array>), maxBytes(limits.httpMaxBytes, opts.label), createWriteStream(file));
  } catch (err) {
    if (err instanceof ArtifactError) throw err;
    if (timeout.aborted) fail(`download did not finish within the client's http_read_timeout (${limits.httpReadTimeoutMs / 1000} s)`, err);
    fail(`download failed: ${describeError((err as { cause?: unknown }).cause ?? err)}`, err);
  }
  await fetchArtifact(file, dest, {
    mode: opts.mode,
    archive: source.archive,
    checksum,
    label: opts.label,
    name,
    limits: { sizeLimit: limits.decompressionSizeLimit, fileCountLimit: limits.decompressionFileCountLimit },
  });
}

/** Fails the download once its body passes the client's http_max_size (0: no limit). */
function maxBytes(limit: number, label: string): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      if (limit > 0 && seen > limit) return done(new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${label}: the response body is larger than the client's http_max_size (${limit} bytes)`));
      done(null, chunk);
    },
  });
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
  // go-getter writes the sshkey to a private temporary file for ssh's -i, removed after.
  const keyDir = source.sshKey ? await mkdtemp(path.join(tmpdir(), 'berth-sshkey-')) : undefined;
  try {
    let keyFile: string | undefined;
    if (keyDir && source.sshKey) {
      keyFile = path.join(keyDir, 'key');
      await writeFile(keyFile, source.sshKey, { mode: 0o600 });
    }
    const env = gitEnv(opts.env ?? process.env, keyFile);
    const run = (args: string[], cwd: string): Promise<void> => git(args, cwd, env, opts);
    await run([...clone, '--', source.url, repo], scratch);
    if (source.ref && !source.depth) await run(['checkout', '--quiet', source.ref], repo);
    if (existsSync(path.join(repo, '.gitmodules'))) await run(['submodule', 'update', '--init', '--recursive', '--quiet'], repo);
  } finally {
    if (keyDir) await rm(keyDir, { recursive: true, force: true });
  }
  await mkdir(dest, { recursive: true });
  await cp(repo, dest, { recursive: true, force: true });
}

/**
 * The environment git runs in: no terminal prompt, and with an ssh key file
 * ssh told of it by GIT_SSH_COMMAND, after the command `base` already has
 * (go-getter's setupGitEnv: `ssh -i <key>` by default). Pure.
 */
export function gitEnv(base: NodeJS.ProcessEnv, keyFile: string | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, GIT_TERMINAL_PROMPT: '0', GIT_ASKPASS: 'true' };
  if (keyFile) env['GIT_SSH_COMMAND'] = `${base['GIT_SSH_COMMAND'] || 'ssh'} -i '${keyFile.replaceAll("'", "'\\''")}'`;
  return env;
}

/** Runs git within the client's git_timeout; its own last words on a failure. */
function git(args: string[], cwd: string, env: NodeJS.ProcessEnv, opts: RemoteFetchOptions): Promise<void> {
  const timeout = (opts.limits ?? DEFAULT_ARTIFACT_LIMITS).gitTimeoutMs;
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { cwd, timeout, killSignal: 'SIGKILL', signal: opts.signal, env, maxBuffer: 4 << 20 },
      (err, _stdout, stderr) => {
        if (!err) return resolve();
        if ((err as { killed?: boolean }).killed && !opts.signal?.aborted) {
          return reject(new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: git ${args[0]} did not finish within the client's git_timeout (${timeout / 1000} s)`, { cause: err }));
        }
        const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
        // git's first fatal line says why; what follows is advice.
        const said = lines.find((l) => /^(fatal|error):/.test(l)) ?? lines.at(-1);
        const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'git is not installed on this node' : said || describeError(err);
        reject(new ArtifactError('TASK_ARTIFACT_FAILED', `artifact source ${opts.label}: git ${args[0]} failed: ${why}`, { cause: err }));
      },
    );
  });
}
