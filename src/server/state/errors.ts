import { BerthError } from '../../lib/index.js';

/**
 * A failure of the state store itself. Codes: STORE_CORRUPT (the file is not
 * a readable Berth state database), STORE_VERSION (written by a newer Berth),
 * STORE_CLOSED, STORE_NESTED_WRITE, STORE_ASYNC_WRITE (a write function
 * returned a promise), STORE_IO (SQLite failed to commit).
 */
export class StateStoreError extends BerthError {}
