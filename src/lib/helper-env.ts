// How Berth's own helper processes start (the executors, the mount helper,
// the log monitor): from which file, with which environment, and (read by
// one started from a build) how its code was loaded.
//
// The environment: PATH, and where the user's caches are (HOME,
// XDG_CACHE_HOME, when the agent has them: a helper started from a build
// keeps its V8 code cache beside the agent's, src/warm-start), and nothing
// else. They are Berth's code, not the user's, so nothing else of the
// agent's environment is theirs: a detached helper that outlives the agent
// must not keep its tokens, and Node reads some variables at every process
// start before any of our code runs. NODE_EXTRA_CA_CERTS (set on many hosts,
// this sandbox among them) has Node parse the named bundle and build its root
// store at start: 40-50 ms of CPU per process measured here, for helpers
// that make no TLS connection. A task's own environment is built apart
// (src/client/taskenv) and is not this.

import { fileURLToPath } from 'node:url';

const DEFAULT_PATH = '/usr/sbin:/usr/bin:/sbin:/bin';

/** `{ PATH, HOME?, XDG_CACHE_HOME? }`: the agent's PATH (or the usual system one when it has none) and its cache home. */
export function helperProcessEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env['PATH'] ?? DEFAULT_PATH };
  for (const k of ['HOME', 'XDG_CACHE_HOME']) {
    const v = process.env[k];
    if (v) env[k] = v;
  }
  return env;
}

/**
 * The file helper `name` starts from, found beside `metaUrl` (the calling module's import.meta.url): in a build,
 * `<name>.cjs`, the launcher that loads the helper's bundle through a code cache (src/warm-start/helper-main.ts);
 * beside the TypeScript sources (tests under tsx), the helper's own ES module, `<name>.mjs`. Pure.
 */
export function helperScript(name: string, metaUrl: string): string {
  return fileURLToPath(new URL(`./${name}${metaUrl.endsWith('.ts') ? '.mjs' : '.cjs'}`, metaUrl));
}

/**
 * How a helper started from a build loaded its code, and how it saves its code cache: what src/warm-start's
 * helper-main.ts (dist/<helper>.cjs) leaves on globalThis under `Symbol.for('berth.warm-start')` (its
 * helper-cache.ts; the executor's and the mount helper's plain ES modules read the same).
 */
export interface HelperWarmStart {
  /** `code-cache`: V8 took the cache; `compiled`: the bundle compiled from source; `modules`: the ES modules ran. */
  path: 'code-cache' | 'compiled' | 'modules';
  reason: string;
  /** Writes the cache of what is compiled by now unless V8 took one at load; once. Blocks; never throws; says what it did. */
  saveCache(): string;
}

/** This helper's warm start, or undefined when it did not start through a build's launcher (the sources under tsx). Pure. */
export function helperWarmStart(): HelperWarmStart | undefined {
  return (globalThis as Record<symbol, HelperWarmStart | undefined>)[Symbol.for('berth.warm-start')];
}
