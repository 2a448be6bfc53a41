// Runs Berth's TypeScript under plain Node for the test suite:
// `node --import ./scripts/test-loader.mjs --test src/lib/retry.test.ts`.
// It does for src/ and test/ what tsx does (tsx stays the way to run one file by hand,
// `node --import tsx --test FILE`), at about half its start-up cost: a test process
// that imports the agent spent some 3 CPU-seconds in tsx before its first test. The code
// comes transpiled ahead (scripts/transpile-tests.mjs, which scripts/run-tests.mjs runs
// first); a file not transpiled yet, or edited since, is transpiled when it is loaded.
// Modules keep their .ts URLs, so import.meta.url and the file names in stack traces
// (through the inline source maps) are those of the sources. The hooks are in
// scripts/test-loader-hooks.mjs. The TypeScript child processes the tests start (a
// runtime client, a plugin fixture) run under the same loader (test/support/ts-loader.ts).
import { register } from 'node:module';

process.setSourceMapsEnabled(true);
register('./test-loader-hooks.mjs', import.meta.url);
