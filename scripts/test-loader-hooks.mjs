// The module hooks of scripts/test-loader.mjs (they run on Node's loader thread):
// an import of `./x.js` from a TypeScript file finds `./x.ts` (TypeScript's NodeNext
// convention), and a .ts file loads as an ES module from its transpiled copy in
// .tmp/test-js/ when that copy is current, else transpiled on the spot (and cached,
// when it is in the repository); a .mts file (a test's fixture script) too, uncached.
// Nothing else is touched: packages in node_modules, .js and .mjs files load as Node
// loads them.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cachedPath, claimCache, isCurrent, transpile, transpileToCache } from './transpile-tests.mjs';

// A cache made by other tools or settings is left alone (the next test run remakes it).
const useCache = claimCache();

/** A TypeScript file of ours (not a package's), by URL. */
const ours = (url) => url.startsWith('file:') && !url.includes('/node_modules/');

export async function resolve(specifier, context, next) {
  const parent = context.parentURL;
  if (parent && ours(parent) && specifier.endsWith('.js') && (specifier.startsWith('./') || specifier.startsWith('../'))) {
    const ts = new URL(`${specifier.slice(0, -3)}.ts`, parent);
    if (existsSync(ts)) return { url: ts.href, format: 'module', shortCircuit: true };
  }
  return next(specifier, context);
}

export async function load(url, context, next) {
  if (!/\.m?ts$/.test(url) || !ours(url)) return next(url, context);
  const file = fileURLToPath(url);
  const cached = cachedPath(file);
  let source;
  if (!useCache) source = await transpile(file, readFileSync(file, 'utf8'));
  else if (cached !== undefined && isCurrent(cached, file)) source = readFileSync(cached, 'utf8');
  else source = await transpileToCache(file);
  return { format: 'module', source, shortCircuit: true };
}
