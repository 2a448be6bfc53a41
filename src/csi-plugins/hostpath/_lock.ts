// At most one call per volume (or snapshot, or name) inside the plugin. A
// second overlapping call does not wait: it is told ABORTED, as the spec
// allows and as real plugins do, and the CO backs off and retries.

/** Thrown by `tryAcquire` when one of the keys is held; carries the key that was busy. */
export class LockBusyError extends Error {
  readonly key: string;

  constructor(key: string) {
    super(`an operation on ${key} is already in progress`);
    this.name = 'LockBusyError';
    this.key = key;
  }
}

export class KeyedLocks {
  readonly #held = new Set<string>();

  /**
   * Takes every key or none. Returns the release function (safe to call
   * twice). Throws LockBusyError without waiting when any key is held.
   */
  tryAcquire(...keys: string[]): () => void {
    const unique = [...new Set(keys)];
    const busy = unique.find((k) => this.#held.has(k));
    if (busy !== undefined) throw new LockBusyError(busy);
    for (const k of unique) this.#held.add(k);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      for (const k of unique) this.#held.delete(k);
    };
  }

  /** How many keys are held now. */
  get size(): number {
    return this.#held.size;
  }
}
