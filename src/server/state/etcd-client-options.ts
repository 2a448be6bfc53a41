// Options every etcd3 client of the server is made with: no retries or
// circuit breaker of the library's own (the caller keeps its deadlines, a
// retried Txn could apply twice, and a breaker's "circuit breaker is open"
// would reach users in place of etcd's own reason), and answers only from a
// member that has a leader, so that a lost quorum fails a call at once; a
// connection that broke is dialled again within a second (gRPC's own backoff
// grows to 120 s, so a server could stay cut off that long after etcd came
// back), and so is a watch stream.

import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';

/**
 * @grpc/grpc-js, loaded at the first etcd call: the state layer's door is loaded by every server, and a server
 * without etcd (every dev agent) then never loads gRPC (node:http2 and the rest) at its start. Berth's own
 * copy, as when this was a static import (etcd3 keeps a copy of its own; interceptors need only its shape).
 */
let grpc: typeof Grpc | undefined;
const grpcOfEtcd3 = (): typeof Grpc => (grpc ??= createRequire(import.meta.url)('@grpc/grpc-js') as typeof Grpc);

/** A pass-through cockatiel policy. */
const passThrough = {
  // Async so a failure reported by throwing (etcd3's markFailed does) becomes a rejection it catches.
  execute: async <T>(fn: (ctx: { signal: AbortSignal; attempt: number }) => T): Promise<Awaited<T>> => await fn({ signal: new AbortController().signal, attempt: 0 }),
  onSuccess: () => ({ dispose: () => undefined }),
  onFailure: () => ({ dispose: () => undefined }),
};

/**
 * Asks etcd to answer only from a member that has a leader (etcd's
 * "hasleader" metadata, clientv3.WithRequireLeader): without a quorum a
 * call fails at once instead of at its deadline, and a watch is cancelled
 * (so its owner knows its view may be stale) instead of idling.
 */
const requireLeader: Grpc.Interceptor = (options, nextCall) =>
  new (grpcOfEtcd3().InterceptingCall)(nextCall(options), {
    start: (metadata, listener, next) => {
      metadata.set('hasleader', 'true');
      next(metadata, listener);
    },
  });

/** The longest wait before a broken watch stream is opened again. */
export const WATCH_RETRY_MAX_MS = 1_000;

/**
 * The delays between a broken watch stream and the next try: 100 ms,
 * doubling to WATCH_RETRY_MAX_MS (a cockatiel IBackoff; the library's
 * WatchManager takes `next()` after each failure and starts over once a
 * watch is created). etcd3's default grows to 30 s, and the WatchManager
 * keeps every pending try in a timer that `close()` does not clear: after a
 * lost quorum (each cancelled stream is a failure) a server that had closed
 * its clients stayed up to 30 s more, and a watch came back up to 30 s after
 * etcd did. Now a closed client holds the process at most that long.
 */
class WatchRetry {
  constructor(readonly duration: number) {}

  next(): WatchRetry {
    return new WatchRetry(Math.min(WATCH_RETRY_MAX_MS, this.duration * 2));
  }
}

/** Spread into `new Etcd3({...})`. */
export const etcdFailFast = {
  grpcOptions: { interceptors: [requireLeader], 'grpc.initial_reconnect_backoff_ms': 250, 'grpc.max_reconnect_backoff_ms': 1_000 } as never,
  faultHandling: { host: () => passThrough as never, global: passThrough as never, watchBackoff: { next: () => new WatchRetry(100) } as never },
};
