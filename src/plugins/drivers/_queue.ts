/**
 * A push-driven async iterable: producers `push`, then `end` (or `fail`);
 * one consumer iterates. Used to bridge callbacks and gRPC streams in exec
 * streaming, where a blocked async generator could not be stopped.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  readonly #items: T[] = [];
  #waiter: ((r: IteratorResult<T>) => void) | undefined;
  #failWaiter: ((err: unknown) => void) | undefined;
  #ended = false;
  #error: unknown;

  push(item: T): void {
    if (this.#ended) return;
    if (this.#waiter) {
      const w = this.#waiter;
      this.#waiter = this.#failWaiter = undefined;
      w({ value: item, done: false });
    } else this.#items.push(item);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    const w = this.#waiter;
    this.#waiter = this.#failWaiter = undefined;
    w?.({ value: undefined, done: true });
  }

  fail(err: unknown): void {
    if (this.#ended) return;
    this.#error = err;
    this.#ended = true;
    const f = this.#failWaiter;
    this.#waiter = this.#failWaiter = undefined;
    f?.(err);
  }

  get ended(): boolean {
    return this.#ended;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.#items.shift();
        if (item !== undefined) return Promise.resolve({ value: item, done: false });
        if (this.#ended) return this.#error !== undefined ? Promise.reject(this.#error) : Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => {
          this.#waiter = resolve;
          this.#failWaiter = reject;
        });
      },
      return: () => {
        this.end();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
