// The warm-start layer: how `berth agent` loads its code faster than the ES
// modules every other command loads (a one-file bundle compiled through a V8
// code cache). Its user is src/agent-main.ts (dist/warm-start.js, which
// bin/berth.js runs for `berth agent`); tests and the bench use these.
export { cacheDir, cacheFileFor, seal, unseal } from './cache-file.js';
export { loadWithCodeCache, type CodeCacheLoad } from './code-cache.js';
