// The entry of dist/warm-start.js: how bin/berth.js starts `berth agent`. The build puts
// the whole CLI in one CommonJS bundle too (dist/agent-bundle-<hash>.cjs,
// named in dist/warm-start.json); this loads it through a V8 code cache
// (src/warm-start/), so a start skips compiling what the cache holds. Without
// a bundle (a build without one), with BERTH_WARM_START=0 or node
// --enable-source-maps, or if the bundle fails to load, the agent starts from
// the ES modules as every other command does; the agent's debug log says
// which way it went and why (`warm start`).

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { runMain as RunMainFn } from './main-run.js';
import { cacheFileFor, holdYoungGeneration, loadWithCodeCache, releaseYoungGeneration, type CodeCacheLoad } from './warm-start/index.js';

type RunMain = typeof RunMainFn;

const here = (name: string): string => fileURLToPath(new URL(`./${name}`, import.meta.url));

async function fromModules(reason: string): Promise<void> {
  const { runMain } = await import('./main-run.js');
  await runMain(undefined, { warmStart: { path: 'modules', reason, saveCache: () => 'no bundle: nothing to cache' } });
}

function bundleName(): string | { problem: string } {
  if (process.env['BERTH_WARM_START'] === '0') return { problem: 'BERTH_WARM_START=0' };
  // Node maps stack traces through the source maps of the files its own loaders read, never a vm.Script's:
  // whoever asked for traces that name src/ gets the ES modules.
  if (process.sourceMapsEnabled) return { problem: 'source maps enabled (--enable-source-maps): stack traces map to src/ only from the ES modules' };
  try {
    const { bundle } = JSON.parse(readFileSync(here('warm-start.json'), 'utf8')) as { bundle?: unknown };
    return typeof bundle === 'string' && /^agent-bundle-\w+\.cjs$/.test(bundle) ? bundle : { problem: 'warm-start.json names no bundle' };
  } catch (err) {
    return { problem: `no agent bundle in this build (${(err as Error).message})` };
  }
}

const name = bundleName();
if (typeof name !== 'string') await fromModules(name.problem);
else {
  let loaded: CodeCacheLoad | undefined;
  let problem = '';
  try {
    // V8's young generation held through the start (warm-start/young-generation.ts), let go when saveCache comes.
    loaded = loadWithCodeCache(here(name), cacheFileFor(name), { youngGeneration: { hold: holdYoungGeneration, release: releaseYoungGeneration } });
  } catch (err) {
    problem = `the agent bundle ${name} failed to load: ${(err as Error).message}`;
  }
  const runMain = loaded?.exports['runMain'] as RunMain | undefined;
  if (!loaded || typeof runMain !== 'function') await fromModules(problem || `the agent bundle ${name} exports no runMain`);
  else await runMain(undefined, { warmStart: { path: loaded.path, reason: loaded.reason, saveCache: loaded.saveCache } });
}
