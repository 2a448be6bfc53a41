import { BerthError } from '../../lib/index.js';

/**
 * A failure of the state store itself. Codes: STORE_CORRUPT (the file is not
 * a readable Berth state database), STORE_VERSION (written by a newer Berth),
 * STORE_CLOSED, STORE_NESTED_WRITE, STORE_DISK_FULL (the disk has no room for
 * the write, nor reserved headroom for it), STORE_ASYNC_WRITE (a write function
 * returned a promise), STORE_IO (SQLite failed to commit), STORE_UNAVAILABLE
 * (etcd unreachable or without quorum: nothing was applied as far as the
 * server knows; retry later), STORE_FENCED (a server that lost its
 * leadership tried to write; nothing was applied), STORE_CONFLICT (a write
 * kept losing to other writers), STORE_TOO_LARGE (one write's changes
 * are more than etcd takes in one request: --max-request-bytes), STORE_SNAPSHOT (a snapshot file is not
 * valid, or a restore target is not empty).
 */
export class StateStoreError extends BerthError {}
