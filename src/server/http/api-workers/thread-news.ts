// What a pool of the API's threads (pool.ts's front workers, readers.ts's
// readers) says as its threads come along (one ready, warmed, gave back
// memory), for those who wait on it: mostly tests, and a server's start.

export class ThreadNews {
  #waiters: Array<() => void> = [];

  /** Something changed: every wait looks at its condition again. */
  told(): void {
    for (const r of this.#waiters.splice(0)) r();
  }

  /** Resolves once `done()` holds, or `timeoutMs` passed, or `stop()` holds; both are looked at again at each news. */
  async until(done: () => boolean, timeoutMs: number, stop: () => boolean): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!done() && Date.now() < deadline && !stop()) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        this.#waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
  }
}
