// Group commit: operations that arrive together (in one turn of the event
// loop: a burst of POST /v1/jobs read off many sockets at once) are applied in
// one store write, so a burst of 200 registrations costs a few SQLite
// transactions, a few store events and a few wake-ups of every watcher of the
// store, instead of 200 of each. Each caller still gets its own answer once
// the write that holds its operation is durable. A burst's requests are read
// one per turn when they come from many clients, so the server may have a
// batch linger a few milliseconds for the next ones (`linger`).

import { setImmediate as nextTurn } from 'node:timers';
import { StateStoreError, type StateStore, type WriteTxn } from '../state/index.js';

/**
 * Operations in one write at most, unless told: a caller's answer waits for
 * its whole batch, so a bound keeps the first answers of a burst early.
 */
export const DEFAULT_MAX_BATCH = 16;

interface Pending<I, R> {
  item: I;
  resolve(out: { index: number; result: R }): void;
  reject(err: unknown): void;
}

/**
 * Applies queued operations in shared store writes. `apply(txn, item)` is
 * one operation inside a write transaction (synchronous, as every store
 * write function); `keyOf(item)` names what it changes: two operations with
 * the same key never share a write (the second goes in the next one), so
 * each answer's index is that of a write in which its operation was the last
 * to touch its row.
 */
export class GroupCommit<I, R> {
  readonly #store: StateStore;
  readonly #apply: (txn: WriteTxn, item: I) => R;
  readonly #keyOf: (item: I) => string;
  /** Batches waiting for their write, oldest first; the last one takes new items. */
  readonly #queue: Array<{ items: Array<Pending<I, R>>; keys: Set<string> }> = [];
  readonly #maxBatch: number;
  #scheduled = false;
  #draining = false;

  readonly #linger: (() => Promise<void> | undefined) | undefined;

  /**
   * `linger`: asked when a batch that is not full is to be written; a
   * promise it returns holds the write until it settles (more items join the
   * batch meanwhile), `undefined` writes at the end of this turn as usual.
   */
  constructor(opts: { store: StateStore; apply: (txn: WriteTxn, item: I) => R; keyOf: (item: I) => string; maxBatch?: number; linger?: () => Promise<void> | undefined }) {
    this.#store = opts.store;
    this.#apply = opts.apply;
    this.#keyOf = opts.keyOf;
    this.#maxBatch = Math.max(1, opts.maxBatch ?? DEFAULT_MAX_BATCH);
    this.#linger = opts.linger;
  }

  /**
   * Queues `item` for the next shared write (at the end of this turn of the
   * event loop, or at once when its batch is full) and resolves with that
   * write's index and the item's result once it is durable. Rejects with
   * what `apply` threw for this item (the others of its write are then
   * applied without it), or with the store's StateStoreError when the write
   * failed (nothing of it was applied).
   */
  submit(item: I): Promise<{ index: number; result: R }> {
    return new Promise((resolve, reject) => {
      const key = this.#keyOf(item);
      let batch = this.#queue.at(-1);
      if (!batch || batch.keys.has(key) || batch.items.length >= this.#maxBatch) {
        batch = { items: [], keys: new Set() };
        this.#queue.push(batch);
      }
      batch.items.push({ item, resolve, reject });
      batch.keys.add(key);
      // A full batch is written now: its callers are answered while the rest of the burst is read.
      if (batch.items.length >= this.#maxBatch) this.#drain();
      else if (!this.#scheduled) {
        this.#scheduled = true;
        const write = (): void => {
          this.#scheduled = false;
          this.#drain();
        };
        const lingering = this.#linger?.();
        if (lingering) void lingering.then(write, write);
        else nextTurn(write);
      }
    });
  }

  /** Writes the queued batches in order, one write at a time. */
  #drain(): void {
    if (this.#draining) return;
    this.#draining = true;
    void (async () => {
      try {
        for (let batch = this.#queue.shift(); batch; batch = this.#queue.shift()) await this.#write(batch.items);
      } finally {
        this.#draining = false;
      }
    })();
  }

  /**
   * One write for all of `items`. Should one of them throw (a conflict, an
   * invalid job: the whole transaction is then dropped), each is applied
   * again in a write of its own, so only the one at fault fails.
   */
  async #write(items: Array<Pending<I, R>>): Promise<void> {
    if (items.length > 1) {
      try {
        const { index, result } = await this.#store.write((txn) => items.map((p) => this.#apply(txn, p.item)));
        items.forEach((p, i) => p.resolve({ index, result: result[i] as R }));
        return;
      } catch (err) {
        if (err instanceof StateStoreError) {
          for (const p of items) p.reject(err);
          return;
        }
      }
    }
    for (const p of items) {
      await this.#store.write((txn) => this.#apply(txn, p.item)).then(p.resolve, p.reject);
    }
  }
}
