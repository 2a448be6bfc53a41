// An unbounded, ordered queue read through an async iterator: the writer never
// waits and nothing is ever dropped; the reader waits when it is empty.

interface Waiting<T> {
  resolve: (r: IteratorResult<T, undefined>) => void;
}

/**
 * A single-reader queue. `push` appends (ignored once ended). `end` stops
 * the reader at once: it is called when the reader asked to stop (its
 * signal fired, it broke out of its loop), so what is still queued is
 * nobody's any more.
 */
export class EventQueue<T> implements AsyncIterableIterator<T, undefined> {
  #items: T[] = [];
  #head = 0;
  #waiting: Waiting<T> | undefined;
  #ended = false;
  readonly #onEnd: () => void;

  constructor(onEnd: () => void) {
    this.#onEnd = onEnd;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** Items queued and not yet read. */
  get size(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    if (this.#ended) return;
    const waiting = this.#waiting;
    if (waiting) {
      this.#waiting = undefined;
      waiting.resolve({ value: item, done: false });
      return;
    }
    this.#items.push(item);
  }

  /** Stops the queue: the reader's pending and later next() calls report done. Safe twice. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#items = [];
    this.#head = 0;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    waiting?.resolve({ value: undefined, done: true });
    this.#onEnd();
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.#ended) return Promise.resolve({ value: undefined, done: true });
    if (this.#head < this.#items.length) {
      const value = this.#items[this.#head] as T;
      this.#head += 1;
      // Compact now and then so a long-lived queue does not grow without bound.
      if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve({ value, done: false });
    }
    if (this.#waiting) return Promise.reject(new Error('EventQueue has a single reader; next() called while another next() is pending'));
    return new Promise((resolve) => {
      this.#waiting = { resolve };
    });
  }

  return(): Promise<IteratorResult<T, undefined>> {
    this.end();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
