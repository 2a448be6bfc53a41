// Where a worker thread of the API (a front worker, pool.ts; a reader,
// readers.ts) loads from: worker-main.ts under tsx, the build's
// api-worker.cjs once built.

/**
 * The worker's entry: the TypeScript file under tsx (tests); once built, api-worker.cjs, which loads the worker's
 * one-file bundle through a code cache (src/warm-start/helper-main.ts; api-worker.js, its ES module, if it cannot).
 */
export function workerEntry(): [string | URL, { eval?: boolean }] {
  if (!import.meta.url.endsWith('.ts')) return [new URL('./api-worker.cjs', import.meta.url), {}];
  // A worker thread does not inherit tsx's loader: it registers it, then loads the entry.
  const tsx = import.meta.resolve('tsx/esm/api');
  const entry = new URL('./worker-main.ts', import.meta.url).href;
  return [`const { register } = await import(${JSON.stringify(tsx)}); register(); await import(${JSON.stringify(entry)});`, { eval: true }];
}
