// Waiting helpers of the fake CSI plugin: on an abort signal, on a promise
// for at most a while, and on a unix socket accepting connections. Private
// to the fake.

import { connect } from 'node:net';

/**
 * Resolves with false when `signal` fires, or with true after `ms` (real
 * time) if given and the signal has not fired by then.
 */
export function untilAborted(signal: AbortSignal, ms?: number): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (ms !== undefined) {
      timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, ms);
    }
  });
}

/** Waits for `promise`, but no longer than `ms`. */
export async function within(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  await Promise.race([promise, timeout]);
  clearTimeout(timer);
}

/** Resolves once a client can connect to the unix socket at `socketPath`. */
export function acceptsConnections(socketPath: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const socket = connect({ path: socketPath });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', (err) => {
      socket.destroy();
      reject(err);
    });
  });
}
