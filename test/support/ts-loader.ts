// The loader a test's child process runs Berth's TypeScript with (`node --import
// <TS_LOADER> file.ts`): the one the test itself runs under when that is the suite's
// (scripts/test-loader.mjs, which `npm test` uses: it starts in about half of tsx's CPU
// time), else tsx, so a file run by hand with `node --import tsx --test` starts its
// children with tsx too.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

function suiteLoader(): string | undefined {
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const value = arg === '--import' ? args[i + 1] : arg.startsWith('--import=') ? arg.slice('--import='.length) : undefined;
    if (value?.endsWith('scripts/test-loader.mjs')) return value.startsWith('file:') ? value : pathToFileURL(path.resolve(value)).href;
  }
  return undefined;
}

/** The `--import` for a child that runs TypeScript: an absolute file URL, good from any directory or shell script. */
export const TS_LOADER: string = suiteLoader() ?? pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
