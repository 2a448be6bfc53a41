#!/usr/bin/env node
// The `berth` executable: runs the compiled build in dist/ (`npm ci`, `npm
// pack` and `npm test` make it: `npm run build`). For the TypeScript sources
// without a build, use `npm run berth -- <args>` (tsx).
import { existsSync } from 'node:fs';

const main = new URL('../dist/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write('berth: dist/main.js is missing; build it with `npm run build` (or run the sources: `npm run berth -- <args>`)\n');
  process.exit(1);
}
// `berth agent` starts through a V8 code cache of its code (dist/warm-start.js, src/warm-start/).
await import(process.argv[2] === 'agent' ? new URL('../dist/warm-start.js', import.meta.url).href : main.href);
