// Loads a one-file CommonJS bundle the way Node's require would, but through
// a vm.Script given a V8 code cache: V8 then skips parsing and compiling what
// the cache holds (Node 20 takes a cache only for a vm.Script, not for an ES
// module, and has no module compile cache). The cache is taken from the
// running process once it has compiled what it needs (saveCache), so it holds
// the functions a start and a first job ran, not only the top level.

import { isAscii } from 'node:buffer';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Script } from 'node:vm';
import { seal, unseal } from './cache-file.js';
// Node's CommonJS wrapper; scripts/build.mjs writes the agent's bundle inside the same text (one source for both).
import { CJS_WRAPPER, CJS_WRAPPER_END } from './cjs-wrapper.mjs';

/** What loading a bundle did, for the agent's log. */
export interface CodeCacheLoad {
  /** The bundle's module.exports. */
  exports: Record<string, unknown>;
  /** `code-cache`: V8 took the cache; `compiled`: compiled from source (no cache, or one it could not use). */
  path: 'code-cache' | 'compiled';
  reason: string;
  /**
   * Lets V8's young generation grow again (when the load held it: youngGeneration), then
   * writes the cache of what is compiled by now, unless V8 took one at load; once. Call it when the agent is
   * first idle. Never throws; says what it did.
   */
  saveCache(): string;
}

/** How a bundle is loaded. */
export interface CodeCacheOptions {
  /**
   * Held from the bundle's top level (once V8 has taken the cache) until saveCache: V8's young generation, as the
   * agent holds it (young-generation.ts). Passed in, not imported: node:v8 costs a helper's start 1.5-2.5 ms to load,
   * more than its whole compile, and V8's flags are the process's, so a worker thread must not touch them.
   */
  youngGeneration?: { hold(): void; release(): void };
}

/**
 * Compiles and runs the CommonJS file `bundle` (its `require` resolves from its
 * own directory), with the cache in `cacheFile` when that is sound. Blocks
 * (reads both files). Throws only what the bundle's own top level throws, or
 * when the bundle cannot be read; a missing, stale or corrupt cache only
 * means a compile from source, said in `reason`.
 */
export function loadWithCodeCache(bundle: string, cacheFile: string, opts: CodeCacheOptions = {}): CodeCacheLoad {
  const young = opts.youngGeneration;
  const bytes = readFileSync(bundle);
  // An ASCII file (the build makes sure of it) is its own Latin-1: a copy of the bytes into a one-byte string,
  // several times cheaper than decoding UTF-8, which is what the start spent most on reading the file.
  const source = isAscii(bytes) ? bytes.toString('latin1') : bytes.toString('utf8');
  let cached: Buffer | undefined;
  let problem: string;
  let found = true;
  try {
    // Into the bundle's bytes, copied out by now: memory this process has touched already. Fresh memory costs a
    // page fault a 4 KB page at first touch, on this kind of VM ~20-30 us each: ~780 for a 3 MB cache, some 20 ms.
    const sealed = unseal(readFileInto(cacheFile, bytes));
    if ('data' in sealed) cached = sealed.data;
    problem = 'problem' in sealed ? `cache ${cacheFile}: ${sealed.problem}` : '';
  } catch (err) {
    found = (err as NodeJS.ErrnoException).code !== 'ENOENT';
    problem = found ? `cache ${cacheFile} unreadable: ${(err as Error).message}` : `no cache yet (${cacheFile})`;
  }
  // The wrapper Node's own CommonJS loader puts around a module.
  // The build writes the bundle inside the wrapper already; adding it here would copy the whole text once more.
  const script = new Script(source.startsWith(CJS_WRAPPER) ? source : `${CJS_WRAPPER}${source}${CJS_WRAPPER_END}`, {
    filename: bundle,
    ...(cached ? { cachedData: cached } : {}),
  });
  const accepted = cached !== undefined && script.cachedDataRejected === false;
  if (cached && !accepted) problem = `cache ${cacheFile} rejected by V8 (made by another Node, V8 flags or bundle)`;
  // Only now that V8 has checked the cache against its flags (the flag is back at its default when saveCache writes one).
  young?.hold();
  const module = { exports: {} as Record<string, unknown> };
  try {
    (script.runInThisContext() as (...args: unknown[]) => void).call(module.exports, module.exports, createRequire(bundle), module, bundle, path.dirname(bundle));
  } catch (err) {
    // The agent falls back to its modules, and no saveCache comes.
    young?.release();
    throw err;
  }

  let saved = accepted;
  return {
    exports: module.exports,
    path: accepted ? 'code-cache' : 'compiled',
    reason: accepted ? `cache ${cacheFile}` : problem,
    saveCache(): string {
      young?.release();
      if (saved) return accepted ? 'kept the cache V8 took' : 'already written';
      saved = true;
      // Many helpers of one build start without a cache at once: the first to write it is enough.
      if (!found && existsSync(cacheFile)) return `another process wrote ${cacheFile} meanwhile`;
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      try {
        mkdirSync(path.dirname(cacheFile), { recursive: true, mode: 0o700 });
        // Written aside and renamed: another agent starting meanwhile reads the old file or the new, never half of one.
        writeFileSync(tmp, seal(script.createCachedData()), { mode: 0o600 });
        renameSync(tmp, cacheFile);
        return `wrote ${cacheFile}${dropOlderBuilds(cacheFile)}`;
      } catch (err) {
        rmSync(tmp, { force: true });
        return `could not write ${cacheFile}: ${(err as Error).message}`;
      }
    },
  };
}

/**
 * The bytes of `file`, read into `spare` when they fit (a view of it, which the caller's next use of `spare`
 * overwrites), else into a new buffer. Blocks; throws what reading throws.
 */
function readFileInto(file: string, spare: Buffer): Buffer {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size >= spare.length) return readFileSync(fd);
    let n = 0;
    for (let got = 1; got > 0 && n < spare.length; n += got) got = readSync(fd, spare, n, spare.length - n, n);
    // Filled `spare`: the file may be longer than fstat said; read it whole the ordinary way.
    return n < spare.length ? spare.subarray(0, n) : readFileSync(file);
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes the caches of other builds of the same bundle made by this same Node (same name before and after
 * the bundle's hash: `agent-bundle-`, `executor-bundle-`, ...): each build leaves one, and only the running
 * build's is of use. Other bundles' and other Nodes' caches stay. Never throws.
 */
function dropOlderBuilds(cacheFile: string): string {
  const dir = path.dirname(cacheFile);
  const name = path.basename(cacheFile);
  // `<kind>-bundle-<hash>-<node>.v8cache`: esbuild's hash holds no dash.
  const kind = /^(.*?-bundle-)[^-]+(-.*)$/.exec(name);
  if (!kind) return '';
  const [, prefix = '', sameNode = ''] = kind;
  let dropped = 0;
  try {
    for (const f of readdirSync(dir)) {
      if (f === name || !f.startsWith(prefix) || !f.endsWith(sameNode) || !/^[^-]+$/.test(f.slice(prefix.length, f.length - sameNode.length))) continue;
      rmSync(path.join(dir, f), { force: true });
      dropped += 1;
    }
  } catch {
    // a cache dir we cannot list: nothing to tidy
  }
  return dropped ? `; removed ${dropped} cache(s) of older builds` : '';
}
