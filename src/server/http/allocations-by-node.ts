// Which allocations each node holds, for the nodes' allocation reads: kept
// current from the store's event history, a write's changed rows at a time,
// instead of grouping every allocation again after each write (a thousand
// nodes' reads after each of the some sixty writes that place and report
// 10,000 allocations: each regrouping visited all of them).

import type { Allocation } from '../../structs/index.js';
import { keyOf, type StateReader } from '../state/index.js';

/**
 * Each node's allocation keys as of one index of the allocations table.
 * `of` answers from a snapshot: it first applies the allocation events
 * between the index it holds and the snapshot's (or, when the history no
 * longer reaches back that far, groups the whole table again), then reads
 * the node's rows from that snapshot, so the rows are always the
 * snapshot's own. One per store. Never blocks; never throws.
 */
export class AllocationsByNode {
  /** The allocations table's index the grouping reflects (-1: none yet). */
  #index = -1;
  readonly #byNode = new Map<string, Set<string>>();
  readonly #nodeOf = new Map<string, string>();
  /** How many full groupings were made (the first included): for tests. */
  regroupings = 0;

  /** The allocations on `nodeId` in `snap`, sorted by ID (as a list of them is). */
  of(snap: StateReader, nodeId: string): Allocation[] {
    const index = snap.tableIndex('allocations');
    // A snapshot older than the grouping (taken before a write, read after it): read it as it is.
    if (index < this.#index) return byId(snap.list('allocations', { filter: (a) => a.nodeId === nodeId }));
    if (index > this.#index) this.#catchUp(snap, index);
    const out: Allocation[] = [];
    for (const key of this.#byNode.get(nodeId) ?? []) {
      const row = snap.get('allocations', key);
      if (row) out.push(row);
    }
    return byId(out);
  }

  #catchUp(snap: StateReader, index: number): void {
    // The history reaches back when its oldest write is at most the one after the index held (a store
    // trims whole writes, so that write's events are all there).
    const oldest = snap.oldestEventIndex;
    if (this.#index >= 0 && oldest > 0 && oldest <= this.#index + 1) {
      for (const e of snap.events(this.#index, { topics: ['allocations'] })) {
        if (e.index > index) break;
        const nodeId = e.op === 'put' ? (e.row as Allocation | null)?.nodeId : undefined;
        this.#move(e.key, nodeId);
      }
    } else {
      this.regroupings++;
      this.#byNode.clear();
      this.#nodeOf.clear();
      snap.list('allocations', {
        filter: (a) => {
          this.#move(keyOf('allocations', a), a.nodeId);
          return false;
        },
      });
    }
    this.#index = index;
  }

  /** Puts `key` under `nodeId` (undefined: nowhere, the row is gone). */
  #move(key: string, nodeId: string | undefined): void {
    const was = this.#nodeOf.get(key);
    if (was === nodeId) return;
    if (was !== undefined) {
      const set = this.#byNode.get(was);
      set?.delete(key);
      if (set?.size === 0) this.#byNode.delete(was);
    }
    if (nodeId === undefined) {
      this.#nodeOf.delete(key);
      return;
    }
    this.#nodeOf.set(key, nodeId);
    let set = this.#byNode.get(nodeId);
    if (!set) this.#byNode.set(nodeId, (set = new Set()));
    set.add(key);
  }
}

function byId(allocs: Allocation[]): Allocation[] {
  return allocs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
