// The API's front workers: HTTP in worker threads in front of the one
// writer (see pool.ts). Door of src/server/http/api-workers.

import { availableParallelism } from 'node:os';

export { ApiWorkers, type ApiWorkersOptions } from './pool.js';
export { errorAnswer } from './answers.js';
export { relayedBy } from './relayed.js';

/** The default number of front workers: one per core, at most 4 (more add threads without adding cores to the one writer). */
export function defaultApiWorkers(): number {
  return Math.min(availableParallelism(), 4);
}
