// How much of an evaluation's plan fits in one store write: what is left of
// the write's size limit for allocation rows, with room kept for the rows
// written after them (see evaluate.ts, a plan larger than one write).

import type { Allocation, Job } from '../../structs/index.js';
import type { RowInput, WriteTxn } from '../state/index.js';

/**
 * What is left of a write's size limit for an evaluation's allocation rows,
 * keeping room for the rows written after them (the job, the evaluation, a
 * deployment). Unlimited when the store has no limit.
 */
export class PlanRoom {
  readonly #txn: WriteTxn;
  readonly #reserve: number;

  constructor(txn: WriteTxn, job: Job | undefined) {
    this.#txn = txn;
    this.#reserve = 16 * 1024 + (job ? 3 * JSON.stringify(job).length : 0);
  }

  /** No room for another allocation row. */
  full(): boolean {
    const left = this.#txn.bytesLeft;
    return left !== undefined && left < this.#reserve + ROW_MARGIN;
  }

  /** The bytes placements may take once `stopping` (the allocations to stop) are written; Infinity without a limit. */
  forPlacements(stopping: ReadonlyArray<Allocation | undefined>): number {
    const left = this.#txn.bytesLeft;
    if (left === undefined) return Infinity;
    let room = left - this.#reserve - ROW_MARGIN;
    for (const a of stopping) if (a) room -= this.rowBytes(a);
    return room;
  }

  /** What one allocation row adds to the write (measured once per row: placing, then fitting, ask twice). */
  rowBytes(row: RowInput<'allocations'>): number {
    let bytes = measuredRows.get(row);
    if (bytes === undefined) measuredRows.set(row, (bytes = JSON.stringify(row).length + ALLOC_ROW_SLACK));
    return bytes;
  }

  /** How many of `rows` (from the first) fit; at least one when `mustProgress` (nothing else is written). */
  fitting(rows: ReadonlyArray<RowInput<'allocations'>>, mustProgress: boolean): number {
    const left = this.#txn.bytesLeft;
    if (left === undefined) return rows.length;
    let room = left - this.#reserve;
    for (let i = 0; i < rows.length; i++) {
      room -= this.rowBytes(rows[i] as RowInput<'allocations'>);
      if (room < 0) return mustProgress ? Math.max(1, i) : i;
    }
    return rows.length;
  }
}

/** Rows' sizes as PlanRoom measured them (rows are not changed once built). */
const measuredRows = new WeakMap<object, number>();

/** What a stored allocation row has beyond its placement: key, indexes, deployment ID. */
const ALLOC_ROW_SLACK = 256;
/** Room kept for one more row of unknown size (a stopped allocation with its task events). */
const ROW_MARGIN = 32 * 1024;
