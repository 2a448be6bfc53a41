import { AbortedError, throwIfAborted } from '../../lib/index.js';

interface Waiter {
  grant: () => void;
}

/**
 * One FIFO lock per key: holders of one key run one at a time, holders of
 * different keys never wait for each other. The volume manager takes the
 * plugin's volume ID as the key, so the plugin never sees two calls for one
 * volume at once (docs/csi-rules.md scenario 11) while a hung volume blocks no
 * other.
 */
export class KeyedLock {
  readonly #held = new Map<string, Waiter[]>();

  /**
   * Waits for the key and returns its release function (safe to call
   * twice). Rejects with AbortedError when `signal` fires first; the key
   * is then not taken.
   */
  acquire(key: string, signal?: AbortSignal): Promise<() => void> {
    throwIfAborted(signal);
    const queue = this.#held.get(key);
    if (!queue) {
      this.#held.set(key, []);
      return Promise.resolve(this.#releaser(key));
    }
    return new Promise<() => void>((resolve, reject) => {
      const onAbort = (): void => {
        const i = queue.indexOf(waiter);
        if (i >= 0) queue.splice(i, 1);
        reject(new AbortedError('gave up waiting for the volume', { cause: signal?.reason }));
      };
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#releaser(key));
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      queue.push(waiter);
    });
  }

  /** Runs `fn` holding the key. */
  async with<T>(key: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire(key, signal);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  #releaser(key: string): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const queue = this.#held.get(key);
      const next = queue?.shift();
      if (next) next.grant();
      else this.#held.delete(key);
    };
  }
}
