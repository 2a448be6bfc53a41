// @ts-check
// How this executor process's code was loaded, and its code cache: started
// from a build (dist/executor.cjs, src/warm-start/helper-main.ts), the
// launcher leaves what it did on globalThis under the registered symbol
// `berth.warm-start` (src/warm-start/helper-cache.ts); run from the sources
// it is absent. The executor tells the agent in its start report and writes
// its cache once its first task has started.

/**
 * What the launcher left, if it ran.
 * @returns {{ path: string, reason: string, saveCache(): string } | undefined}
 */
function launched() {
  return /** @type {any} */ (globalThis)[Symbol.for('berth.warm-start')];
}

/**
 * How this executor's code was loaded, as its start report tells the agent: started from a build
 * (dist/executor.cjs, src/warm-start/helper-main.ts) through a code cache or not, and why. Undefined when
 * it runs from the sources. Pure.
 * @returns {{ path: string, reason: string } | undefined}
 */
export function warmStart() {
  const w = launched();
  return w ? { path: w.path, reason: w.reason } : undefined;
}

let cacheSaved = false;
/**
 * Once a task has started, writes this build's executor code cache (unless V8 took one at load), after the
 * report has gone: it then holds what a start compiles. Once a process; does not throw.
 */
export function saveCodeCache() {
  if (cacheSaved) return;
  cacheSaved = true;
  const w = launched();
  if (w) setImmediate(() => w.saveCache());
}
