// The API's front workers: HTTP in worker threads in front of the one
// writer (see pool.ts). Door of src/server/http/api-workers.

export { ApiWorkers, type ApiWorkersOptions } from './pool.js';
export { ApiReaders, MAX_PENDING_READS, type ApiReadersOptions, type ReadRegistration } from './readers.js';
export { relayedBy } from './relayed.js';
