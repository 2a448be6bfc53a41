// The entry of Berth's own helpers started from a build: the executor
// (dist/executor.cjs, also the log monitor), the mount helper
// (dist/mount-helper.cjs), each a process of its own, and the API's front
// workers (dist/api-worker.cjs, worker threads). The build copies this one
// file under each name; the name says which helper it is. Each loads its
// one-file CommonJS bundle (named in dist/warm-start.json `helpers`) through
// a V8 code cache beside the agent's, as agent-main.ts loads the agent's:
// V8 then skips compiling what the cache holds. The helper writes its cache
// itself once it has done its first work (saveHelperCache, helper-cache.ts).
// Without a bundle, with BERTH_WARM_START=0 (seen by the API workers: the
// processes start with PATH, HOME and XDG_CACHE_HOME alone), or if the bundle
// fails to load, the helper runs from its ES module as before.
//
// V8's young generation is not held here: V8's flags are the process's, and a
// worker thread shares them with the agent; a helper is small.

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { cacheDir, cacheFileFor } from './cache-file.js';
import { loadWithCodeCache } from './code-cache.js';
import { HELPER_WARM_START, type HelperWarmStart } from './helper-cache.js';

/** Each helper's ES module in dist/, run when its bundle cannot be. */
const MODULES: Record<string, string> = { executor: 'executor.mjs', 'mount-helper': 'mount-helper.mjs', 'api-worker': 'api-worker.js' };

const here = __dirname;
const name = path.basename(__filename, '.cjs');

function bundleName(): string | { problem: string } {
  if (process.env['BERTH_WARM_START'] === '0') return { problem: 'BERTH_WARM_START=0' };
  if (process.sourceMapsEnabled) return { problem: 'source maps enabled (--enable-source-maps)' };
  try {
    const { helpers } = JSON.parse(readFileSync(path.join(here, 'warm-start.json'), 'utf8')) as { helpers?: Record<string, unknown> };
    const bundle = helpers?.[name];
    return typeof bundle === 'string' && /^[\w-]+-bundle-\w+\.cjs$/.test(bundle) ? bundle : { problem: `warm-start.json names no bundle for ${name}` };
  } catch (err) {
    return { problem: `no helper bundles in this build (${(err as Error).message})` };
  }
}

function fromModules(reason: string): void {
  const said: HelperWarmStart = { path: 'modules', reason, saveCache: () => 'no bundle: nothing to cache' };
  (globalThis as Record<symbol, unknown>)[HELPER_WARM_START] = said;
  const file = MODULES[name];
  if (!file) throw new Error(`${__filename}: no helper named ${name}`);
  void import(pathToFileURL(path.join(here, file)).href);
}

const bundle = bundleName();
if (typeof bundle !== 'string') fromModules(bundle.problem);
else {
  // Said before the bundle runs: its top level may look (it reads it when it first reports, in practice).
  const said: HelperWarmStart = { path: 'compiled', reason: 'loading', saveCache: () => 'not loaded yet' };
  (globalThis as Record<symbol, unknown>)[HELPER_WARM_START] = said;
  let problem = '';
  try {
    const loaded = loadWithCodeCache(path.join(here, bundle), cacheFileFor(bundle, cacheDir()));
    Object.assign(said, { path: loaded.path, reason: loaded.reason, saveCache: loaded.saveCache });
  } catch (err) {
    problem = `the bundle ${bundle} failed to load: ${(err as Error).message}`;
  }
  if (problem) fromModules(problem);
}
