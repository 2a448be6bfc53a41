// Transpiles Berth's TypeScript (src/, test/) to JavaScript ahead of a test run, for
// scripts/test-loader.mjs. Each .ts file becomes one .js file (esbuild, one file at a time,
// no bundling: the same transform tsx applies, with an inline source map whose source is
// the .ts file beside the module, so stack traces name .ts lines) in .tmp/test-js/, at
// the same path under that folder (src/lib/retry.ts -> .tmp/test-js/src/lib/retry.js).
// A cached file carries its source's modification time as its own: it is current while
// the two are equal, so an edited source is transpiled again when it is loaded. The
// folder's stamp names what else the output depends on (esbuild's version, Node's, the
// tsconfig.json, this file): when one of them changes, the whole cache is dropped.
//
// Usage: node scripts/transpile-tests.mjs   (about two seconds for the whole tree)
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { mkdir, readFile, rename, stat, utimes, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** Where the transpiled files go (ignored by git and eslint). */
export const CACHE_DIR = join(root, '.tmp', 'test-js');

const STAMP = join(CACHE_DIR, 'stamp');

/** What the transpiled code depends on besides its source, as a hash. */
function cacheKey() {
  const esbuild = join(dirname(createRequire(import.meta.url).resolve('esbuild')), '..', 'package.json');
  const hash = createHash('sha256');
  for (const f of [esbuild, join(root, 'tsconfig.json'), fileURLToPath(import.meta.url)]) hash.update(readFileSync(f));
  return hash.update(process.versions.node).digest('hex');
}

/** Whether the cache was made by the same esbuild, Node, tsconfig.json and transpiler as this process would use (`key`). */
export function cacheUsable(key = cacheKey()) {
  try {
    return readFileSync(STAMP, 'utf8') === key;
  } catch {
    return false;
  }
}

/**
 * Whether the cache can be used, as cacheUsable(); a cache not made yet (no stamp) is
 * started with this process's stamp, so files run by hand fill it as they load.
 */
export function claimCache() {
  if (cacheUsable()) return true;
  try {
    mkdirSync(CACHE_DIR, { recursive: true });
    writeFileSync(STAMP, cacheKey(), { flag: 'wx' });
    return true;
  } catch {
    return cacheUsable();
  }
}

/** The cached JavaScript of `file` (an absolute .ts path inside the repository), or undefined for any other file. */
export function cachedPath(file) {
  const rel = relative(root, file);
  if (!rel.endsWith('.ts') || rel.startsWith('..') || rel.split('/').includes('node_modules')) return undefined;
  return join(CACHE_DIR, rel.replace(/\.ts$/, '.js'));
}

/** Whether `cached` was written from `source` as it is now (their modification times match). */
export function isCurrent(cached, source) {
  try {
    return Math.abs(statSync(cached).mtimeMs - statSync(source).mtimeMs) < 1;
  } catch {
    return false;
  }
}

let tsconfigRaw;
/** The JavaScript of one TypeScript file, with an inline source map naming it. */
export async function transpile(file, source) {
  const { transform } = await import('esbuild');
  tsconfigRaw ??= JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8'));
  const { code } = await transform(source, {
    loader: 'ts',
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node}`,
    // Class names are user-visible (BerthError sets `name` from them), as under tsx.
    keepNames: true,
    sourcemap: 'inline',
    sourcefile: basename(file),
    tsconfigRaw,
  });
  return code;
}

/**
 * Transpiles `file` into the cache (written under a temporary name, then renamed over the
 * old one, so a test process loading it meanwhile never reads half a file) and returns the
 * JavaScript. A file outside the repository is only transpiled.
 */
export async function transpileToCache(file) {
  const { mtime } = await stat(file);
  const code = await transpile(file, await readFile(file, 'utf8'));
  const cached = cachedPath(file);
  if (cached === undefined) return code;
  await mkdir(dirname(cached), { recursive: true });
  const tmp = `${cached}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  await writeFile(tmp, code);
  await utimes(tmp, mtime, mtime);
  await rename(tmp, cached);
  return code;
}

/** The files below `dir` (node_modules left out) whose names `keep` takes, as absolute paths. */
export function findFiles(dir, keep) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : findFiles(p, keep);
    return keep(e.name) ? [p] : [];
  });
}

/**
 * Transpiles every .ts file of src/ and test/ that is not cached yet (or changed since),
 * after dropping a cache made with other tools or settings; returns how many.
 */
export async function transpileAll() {
  const key = cacheKey();
  if (!cacheUsable(key)) rmSync(CACHE_DIR, { recursive: true, force: true });
  const typescript = (name) => name.endsWith('.ts') && !name.endsWith('.d.ts');
  const stale = [...findFiles(join(root, 'src'), typescript), ...findFiles(join(root, 'test'), typescript)].filter((f) => !isCurrent(cachedPath(f), f));
  await Promise.all(stale.map((f) => transpileToCache(f)));
  mkdirSync(CACHE_DIR, { recursive: true });
  writeFileSync(STAMP, key);
  return stale.length;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = performance.now();
  const count = await transpileAll();
  console.log(`transpiled ${count} TypeScript files to ${relative(root, CACHE_DIR)}/ in ${Math.round(performance.now() - started)} ms`);
}
