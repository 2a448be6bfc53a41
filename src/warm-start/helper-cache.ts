// How a helper started from a build (helper-main.ts: an executor, the mount
// helper, an API worker) learns how its code was loaded and saves its code
// cache: one object on globalThis under a registered symbol, so that the
// executor's and the mount helper's plain ES modules reach it too
// (`globalThis[Symbol.for('berth.warm-start')]`) without importing this file.
// Absent when the helper runs from the TypeScript sources (tests under tsx).
// Its readers in TypeScript (an API worker) go through lib's helperWarmStart
// (src/lib/helper-env.ts), which knows the same symbol and shape: lib and this
// layer import nothing of each other.

/** The key of the helper's warm start on globalThis. */
export const HELPER_WARM_START = Symbol.for('berth.warm-start');

/** How a helper's code was loaded (as the agent's `warm start` log line says it), and how to save its cache. */
export interface HelperWarmStart {
  /** `code-cache`: V8 took the cache; `compiled`: the bundle compiled from source; `modules`: the ES modules ran. */
  path: 'code-cache' | 'compiled' | 'modules';
  reason: string;
  /** Writes the cache of what is compiled by now unless V8 took one at load; once. Blocks; never throws; says what it did. */
  saveCache(): string;
}
