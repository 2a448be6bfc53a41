// One post a turn each way between main and a front worker: messages are
// queued and sent together as one array. A MessagePort message costs its
// receiver a dispatch (Node's EventTarget, a structured clone's setup) of
// its own; a burst's registrations, their answers and their enter/leave
// accounting cost main one dispatch per batch instead of four a request.
// The order of the messages is kept: a batch is read in the order it was
// queued, and batches arrive in the order they were posted.

/** When a queued batch goes: after this turn's I/O (`immediate`) or once this tick's promise chains settled (`tick`). */
export type FlushAt = 'immediate' | 'tick';

export class Outbox<M> {
  readonly #send: (batch: M[]) => void;
  readonly #at: FlushAt;
  #batch: M[] = [];
  #scheduled = false;

  /**
   * `send`: posts one batch. `at`: `immediate` batches everything the
   * event loop's poll phase read (a worker: the requests of many sockets);
   * `tick` batches what one run of the microtask queue produced (main: the
   * answers of one store write), without waiting for the next poll.
   */
  constructor(send: (batch: M[]) => void, at: FlushAt) {
    this.#send = send;
    this.#at = at;
  }

  /** Queues `m` for this turn's batch. Never throws (a failed post is the caller's `send`'s to handle). */
  push(m: M): void {
    this.#batch.push(m);
    if (this.#scheduled) return;
    this.#scheduled = true;
    if (this.#at === 'tick') process.nextTick(this.#flush);
    else setImmediate(this.#flush);
  }

  /** Sends what is queued now (a message that must not wait: ready, closed). Safe to repeat. */
  flush(): void {
    this.#flush();
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    if (this.#batch.length === 0) return;
    const batch = this.#batch;
    this.#batch = [];
    this.#send(batch);
  };
}
