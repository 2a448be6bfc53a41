// The API's front workers: HTTP in worker threads in front of the one
// writer (see pool.ts). Door of src/server/http/api-workers.

export { ApiWorkers, type ApiWorkersOptions } from './pool.js';
export { ApiReaders, type ApiReadersOptions, type ReadRegistration } from './readers.js';
export { relayedBy } from './relayed.js';
