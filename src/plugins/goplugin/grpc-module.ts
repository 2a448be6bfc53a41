// nice-grpc (and @grpc/grpc-js under it) is loaded by the first plugin this
// process launches or serves, not with the plugins layer: an agent without
// external plugins never needs it, and its start no longer evaluates it (the
// plugins layer's evaluation 14 -> 1 ms of CPU; node:http2 itself still loads,
// with fastify).

import type * as NiceGrpcNamespace from 'nice-grpc';

/** nice-grpc's exports (its CommonJS module.exports). */
type NiceGrpc = (typeof NiceGrpcNamespace)['default'];

let loaded: NiceGrpc | undefined;

/** nice-grpc, loaded on the first call. Safe to repeat; rejects only if the package cannot be loaded. */
export async function loadNiceGrpc(): Promise<NiceGrpc> {
  // CommonJS: its exports are on `default` where the import is the ES build's chunk (which has no others),
  // on `default` and the namespace alike in the CommonJS bundle and under Node's own loader.
  const m = await import('nice-grpc');
  loaded ??= m.default ?? m;
  return loaded;
}

/**
 * nice-grpc once loadNiceGrpc() has run. For code that runs only after a plugin
 * was launched or served (a channel or server exists, so it was loaded): throws
 * an Error naming the caller's mistake otherwise. Does not block.
 */
export function niceGrpc(): NiceGrpc {
  if (!loaded) throw new Error('nice-grpc used before loadNiceGrpc(): no plugin was launched or served');
  return loaded;
}

/** nice-grpc if it was loaded, else undefined: an error can be one of its classes only once it is. Pure. */
export function loadedNiceGrpc(): NiceGrpc | undefined {
  return loaded;
}
