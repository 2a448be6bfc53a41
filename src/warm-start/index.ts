// The warm-start layer: how `berth agent` and the helpers it starts (the
// executors, the mount helper, the API's front workers) load their code
// faster than ES modules (one-file bundles compiled through a V8 code cache).
// Its users are src/agent-main.ts (dist/warm-start.js, which bin/berth.js
// runs for `berth agent`) and helper-main.ts (dist/<helper>.cjs); tests, the
// bench and the helpers' own code use these.
export { cacheDir, cacheFileFor, seal, unseal } from './cache-file.js';
export { loadWithCodeCache, type CodeCacheLoad, type CodeCacheOptions } from './code-cache.js';
export { HELPER_WARM_START, type HelperWarmStart } from './helper-cache.js';
export { holdYoungGeneration, releaseYoungGeneration } from './young-generation.js';
