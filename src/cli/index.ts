// The cli layer: the `berth` command line. main.ts is its only user.
export { buildProgram, runCli, type RunOptions } from './program.js';
export { EXIT } from './exit-codes.js';
export type { CliIo } from './output.js';
export type { WarmStart } from './command-context.js';
/** A checked volume spec in Nomad's CSIVolume fields, as `volume register|create` send it (tests and benchmarks build their requests with it too). */
export { volumeSubmission } from './volume-submission.js';
