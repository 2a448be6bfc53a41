// For scoped blocking reads (blocking.ts): was a row of a reader's scope
// written after the index it last saw? Readers woken only by their own rows'
// writes come back from as many different indexes as there are nodes, so the
// answer is kept per key (the last write that touched it), brought up to date
// once per write from the store's event history, instead of a pass over the
// events after each reader's index.

import type { DataTable, StateReader } from '../state/index.js';

/**
 * The index of the last write that put or deleted a row of `table` under
 * each scope key (`key(row)`, the event's row: a delete's carries the row it
 * removed), as of one index of the table. Exact for every index the store's
 * history still reaches back past (`oldestEventIndex <= index + 1`), which is
 * when a reader asks. One per store, table and key function. Never blocks;
 * never throws unless `key` does.
 */
export class TouchedKeys {
  /** The last write under each key, for the writes at indexes >= #from. */
  readonly #last = new Map<string, number>();
  /** Every touch at an index >= this is in #last (0: nothing read yet). */
  #from = 0;
  /** The table's index the map reflects (-1: none yet). */
  #index = -1;
  /** Events applied since the map was last cleared of keys older than the history. */
  #sincePrune = 0;
  /** How many times the whole history was read (the first included): for tests and benches. */
  rebuilds = 0;

  constructor(
    private readonly table: DataTable,
    private readonly key: (row: unknown) => string | undefined,
  ) {}

  /**
   * Whether a write in (`after`, the snapshot's index] put or deleted a row
   * of the table under `is`. The caller first checks that the snapshot's
   * history reaches back to `after` (`oldestEventIndex` in 1..after + 1):
   * beyond it no one can say, and the answer is true (the reader reads again).
   */
  touchedAfter(snap: StateReader, after: number, is: string): boolean {
    const oldest = snap.oldestEventIndex;
    if (oldest <= 0 || oldest > after + 1) return true;
    const index = snap.tableIndex(this.table);
    if (index < this.#index) {
      // A snapshot older than the map (not one a woken reader takes): read its events as they are.
      return this.#scan(snap, after, is);
    }
    if (index > this.#index) this.#catchUp(snap, index);
    if (this.#from > after + 1) return this.#scan(snap, after, is);
    return (this.#last.get(is) ?? 0) > after;
  }

  /** The answer read from the snapshot's events after `after`, without the map. */
  #scan(snap: StateReader, after: number, is: string): boolean {
    return snap.events(after, { topics: [this.table] }).some((e) => this.key(e.row) === is);
  }

  #catchUp(snap: StateReader, index: number): void {
    const oldest = snap.oldestEventIndex;
    // The history holds whole writes: when its oldest is at most the write after the one held, all the writes since are there.
    const extend = this.#index >= 0 && oldest > 0 && oldest <= this.#index + 1;
    if (!extend) {
      this.rebuilds++;
      this.#last.clear();
      this.#from = oldest;
      this.#sincePrune = 0;
    }
    const events = snap.events(extend ? this.#index : oldest - 1, { topics: [this.table] });
    for (const e of events) {
      const k = this.key(e.row);
      if (k !== undefined) this.#last.set(k, e.index);
    }
    this.#index = index;
    // Keys last touched before the history starts can go (no reader can ask about them): done once
    // as many events have passed as there are keys, so it costs a constant a write.
    this.#sincePrune += events.length;
    if (oldest > this.#from && this.#sincePrune >= this.#last.size) {
      for (const [k, at] of this.#last) if (at < oldest) this.#last.delete(k);
      this.#from = oldest;
      this.#sincePrune = 0;
    }
  }
}
