// The cli layer: the `berth` command line. main.ts is its only user.
export { buildProgram, runCli, type RunOptions } from './program.js';
export { EXIT } from './exit-codes.js';
export type { CliIo } from './output.js';
