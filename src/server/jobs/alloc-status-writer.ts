// Allocation status as nodes report it, written in batches: the reports that
// arrive while a write is in flight are applied together by the next one
// (one store write, one etcd Txn, for hundreds of nodes), and each job a
// batch touched gets its status recomputed once, not once per report.

import { systemClock, type Clock } from '../../lib/index.js';
import { isClientTerminal, type AllocClientStatus, type Allocation, type AllocNetworkStatus, type CheckResult, type Job, type JobStatus, type ServiceReport, type TaskState } from '../../structs/index.js';
import { rowKey, rowWith, type StateStore, type WriteTxn } from '../state/index.js';
import { syncAllocServices } from '../services/index.js';
import { isLive } from '../scheduler/index.js';
import { jobAllocations, jobStatusOf } from './evaluate.js';
import { JobError } from './job-errors.js';

/** What a node may report about one of its allocations. */
export interface AllocationUpdate {
  id: string;
  clientStatus: AllocClientStatus;
  clientDescription?: string;
  taskStates?: Record<string, TaskState>;
  /** The allocation's network (mode, address) once its client made it. */
  network?: AllocNetworkStatus;
  /** The latest result of each service check (replaces the stored ones); absent: unchanged. */
  checks?: Record<string, CheckResult>;
  /** The allocation's services as the client resolved them; absent: unchanged (see syncAllocServices). */
  services?: ServiceReport[];
}

const CLIENT_STATUSES: readonly AllocClientStatus[] = ['pending', 'running', 'complete', 'failed', 'lost'];
/** A batch stops taking reports when the write has less room left than this (a report's rows with their task events). */
const REPORT_MARGIN = 64 * 1024;

/** Live allocations remembered per job (jobStatusAfterReports). */
const WITNESSES = 16;
/** Jobs whose live witnesses are remembered at most. */
const MAX_WITNESSED_JOBS = 10_000;

interface Report {
  nodeId: string;
  updates: readonly AllocationUpdate[];
  resolve: (v: { index: number }) => void;
  reject: (err: unknown) => void;
}

export interface AllocStatusWriterOptions {
  store: StateStore;
  clock?: Clock;
}

/**
 * Applies nodes' reports about their allocations, batching concurrent ones
 * into one store write. Stateless between writes: nothing to start or stop.
 */
export class AllocStatusWriter {
  readonly #store: StateStore;
  readonly #clock: Clock;
  #queue: Report[] = [];
  #writing = false;
  /** Per job (its row key), allocations that were live when its status was last computed: see jobStatusAfterReports. */
  readonly #liveWitness = new Map<string, readonly string[]>();
  /** Store writes made and reports they carried, for benchmarks and tests. */
  readonly counts = { writes: 0, reports: 0 };

  constructor(opts: AllocStatusWriterOptions) {
    this.#store = opts.store;
    this.#clock = opts.clock ?? systemClock;
  }

  /**
   * Applies one node's report. Resolves with the index of the write that
   * applied it once durable. Rejects with JobError INVALID (an unknown
   * status), NOT_FOUND (an unknown allocation) or FORBIDDEN (an allocation of
   * another node), and then applies nothing of this report (other nodes'
   * reports in the same write are not affected); with a StateStoreError when
   * the write failed. Safe to repeat.
   */
  report(nodeId: string, updates: readonly AllocationUpdate[]): Promise<{ index: number }> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ nodeId, updates, resolve, reject });
      this.#pump();
    });
  }

  #pump(): void {
    if (this.#writing || this.#queue.length === 0) return;
    this.#writing = true;
    const batch = this.#queue;
    this.#queue = [];
    const now = this.#clock.now();
    this.#store
      .write((txn) => applyReports(txn, batch, now, this.#liveWitness))
      .then(
        ({ index, result }) => {
          this.counts.writes++;
          this.counts.reports += result.outcomes.length;
          result.outcomes.forEach((err, i) => (err ? batch[i]!.reject(err) : batch[i]!.resolve({ index })));
          // What did not fit in this write goes first into the next.
          this.#queue.unshift(...batch.slice(result.outcomes.length));
        },
        (err: unknown) => {
          for (const r of batch) r.reject(err);
        },
      )
      .finally(() => {
        this.#writing = false;
        this.#pump();
      });
  }
}

/**
 * Applies reports in order inside `txn` until the write is full (at least
 * one). Returns, per report applied, undefined or the error that refused it.
 */
function applyReports(txn: WriteTxn, reports: readonly Report[], now: number, witnesses: Map<string, readonly string[]>): { outcomes: Array<Error | undefined> } {
  const outcomes: Array<Error | undefined> = [];
  /** Jobs where an allocation started or stopped being live: their status may change. */
  const jobs = new Set<string>();
  for (const r of reports) {
    if (outcomes.length > 0 && txn.bytesLeft !== undefined && txn.bytesLeft < REPORT_MARGIN) break;
    try {
      checkReport(txn, r.nodeId, r.updates);
    } catch (err) {
      outcomes.push(err as Error);
      continue;
    }
    for (const u of r.updates) {
      // Read again: the same report may name an allocation twice.
      const alloc = txn.get('allocations', rowKey(u.id)) as Allocation;
      // A report overtaken by a newer one (its request waited in a busy server past the client's timeout,
      // and the client sent the newer state meanwhile) must not put the older state back.
      if (u.taskStates && latestTaskEvent(u.taskStates) < latestTaskEvent(alloc.taskStates)) continue;
      // Copied with rowWith, not spread: the placement metrics the store keeps undecoded stay so.
      const next = rowWith(alloc, {
        clientStatus: u.clientStatus,
        clientDescription: u.clientDescription ?? alloc.clientDescription,
        taskStates: u.taskStates ?? alloc.taskStates,
        ...(u.network ? { network: u.network } : {}),
        ...(u.checks || alloc.checks ? { checks: u.checks ?? alloc.checks } : {}),
        modifyTime: u.clientStatus === alloc.clientStatus ? alloc.modifyTime : now,
      });
      if (reportChanged(alloc, next)) txn.put('allocations', next);
      syncAllocServices(txn, next, u.services);
      if (isLive(next) !== isLive(alloc) || isClientTerminal(next.clientStatus) !== isClientTerminal(alloc.clientStatus)) {
        jobs.add(rowKey(alloc.namespace, alloc.jobId));
      }
    }
    outcomes.push(undefined);
  }
  for (const key of jobs) {
    const job = txn.get('jobs', key);
    if (!job) continue;
    const status = jobStatusAfterReports(txn, job, key, witnesses);
    if (status !== job.status) txn.put('jobs', { ...job, status });
  }
  return { outcomes };
}

/**
 * jobStatusOf the job's allocations in `txn`. A job with a live allocation
 * runs, so a few allocations found live last time (`witnesses`, by the job's
 * key) are read first: while one of them is live the job is `running`, and no
 * list of the job's allocations (ten thousand of them, once per write of a
 * large job's complete reports) is needed. Otherwise the allocations are
 * listed and new witnesses taken, spread over the list (its order is the
 * table's hash order, unrelated to node or placement order, so one node's
 * report seldom ends them all). The same status either way.
 */
function jobStatusAfterReports(txn: WriteTxn, job: Job, key: string, witnesses: Map<string, readonly string[]>): JobStatus {
  for (const id of witnesses.get(key) ?? []) {
    const a = txn.get('allocations', rowKey(id));
    if (a && a.jobId === job.id && a.namespace === job.namespace && isLive(a)) return 'running';
  }
  const allocs = jobAllocations(txn, job.namespace, job.id);
  const live = allocs.filter(isLive);
  if (live.length > 0) {
    const step = Math.max(1, Math.floor(live.length / WITNESSES));
    const ids: string[] = [];
    for (let i = 0; i < live.length && ids.length < WITNESSES; i += step) ids.push((live[i] as Allocation).id);
    // A hint, not state: dropped wholesale rather than let purged jobs' entries pile up.
    if (witnesses.size >= MAX_WITNESSED_JOBS && !witnesses.has(key)) witnesses.clear();
    witnesses.set(key, ids);
  } else witnesses.delete(key);
  return jobStatusOf(job, allocs);
}

/** The fields a report may change (see applyReports). */
const REPORTED_FIELDS = ['clientStatus', 'clientDescription', 'taskStates', 'network', 'checks', 'modifyTime'] as const;

/**
 * Whether `next` (built from `alloc`, changing only REPORTED_FIELDS) differs
 * from it: those fields compared as JSON (key order included, as the row's
 * JSON would be), the rest are the same values. Pure.
 */
function reportChanged(alloc: Allocation, next: Allocation): boolean {
  for (const f of REPORTED_FIELDS) if (next[f] !== alloc[f] && !sameJsonText(next[f], alloc[f])) return true;
  return false;
}

/**
 * JSON.stringify(x) === JSON.stringify(y), without writing either when both
 * are plain JSON data (strings, finite numbers, booleans, null, arrays and
 * plain objects, as a report's task states are): walked in the order JSON
 * writes them, stopping at the first difference (a task's new state, near the
 * top). Anything JSON writes its own way (undefined, functions, symbols,
 * non-finite numbers, holes, toJSON, other prototypes, depth past 64) is
 * compared as JSON text. A report's task states were serialized twice here
 * for every report, besides the write's own serialization of the row.
 */
export function sameJsonText(x: unknown, y: unknown): boolean {
  return plainSame(x, y, 0) ?? JSON.stringify(x) === JSON.stringify(y);
}

/** True or false when `x` and `y` are plain JSON data (see sameJsonText); undefined when JSON would write one of them its own way. */
function plainSame(x: unknown, y: unknown, depth: number): boolean | undefined {
  const kx = plainKind(x);
  const ky = plainKind(y);
  if (kx === undefined || ky === undefined) return undefined;
  if (kx !== ky) return false;
  if (kx !== 'array' && kx !== 'object') return x === y;
  if (x === y) return true;
  if (depth >= 64) return undefined;
  if (kx === 'array') {
    const a = x as unknown[];
    const b = y as unknown[];
    if (a.length !== b.length) return plainArray(a, depth) && plainArray(b, depth) ? false : undefined;
    for (let i = 0; i < a.length; i++) {
      const same = plainSame(a[i], b[i], depth + 1);
      if (same !== true) return same;
    }
    return true;
  }
  const ka = Object.keys(x as object);
  const kb = Object.keys(y as object);
  const a = x as Record<string, unknown>;
  const b = y as Record<string, unknown>;
  const n = Math.min(ka.length, kb.length);
  for (let i = 0; i < n; i++) {
    if (ka[i] !== kb[i]) return plainObject(a, ka, depth) && plainObject(b, kb, depth) ? false : undefined;
    const same = plainSame(a[ka[i]!], b[kb[i]!], depth + 1);
    if (same !== true) return same;
  }
  if (ka.length === kb.length) return true;
  return plainObject(a, ka, depth) && plainObject(b, kb, depth) ? false : undefined;
}

/** The JSON kind of a plain JSON value; undefined for what JSON writes its own way. */
function plainKind(v: unknown): 'string' | 'number' | 'boolean' | 'null' | 'array' | 'object' | undefined {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'boolean';
    case 'number':
      return Number.isFinite(v) ? 'number' : undefined;
    case 'object': {
      if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return undefined;
      const proto: unknown = Object.getPrototypeOf(v);
      if (Array.isArray(v)) return proto === Array.prototype ? 'array' : undefined;
      return proto === Object.prototype || proto === null ? 'object' : undefined;
    }
    default:
      return undefined;
  }
}

/** Whether every element of `a` is plain JSON data (a difference of length then is a difference of JSON). */
function plainArray(a: readonly unknown[], depth: number): boolean {
  for (let i = 0; i < a.length; i++) if (!(i in a) || !plainDeep(a[i], depth + 1)) return false;
  return true;
}

/** Whether every value of `o` (its keys `keys`) is plain JSON data. */
function plainObject(o: Record<string, unknown>, keys: readonly string[], depth: number): boolean {
  for (const k of keys) if (!plainDeep(o[k], depth + 1)) return false;
  return true;
}

function plainDeep(v: unknown, depth: number): boolean {
  const kind = plainKind(v);
  if (kind === undefined || depth > 64) return false;
  if (kind === 'array') return plainArray(v as unknown[], depth);
  if (kind === 'object') return plainObject(v as Record<string, unknown>, Object.keys(v as object), depth);
  return true;
}

/** Throws JobError when any update of a report is refused. */
function checkReport(txn: WriteTxn, nodeId: string, updates: readonly AllocationUpdate[]): void {
  for (const u of updates) {
    if (!CLIENT_STATUSES.includes(u.clientStatus)) throw new JobError('INVALID', `unknown client status "${String(u.clientStatus)}"`);
    const alloc = txn.get('allocations', rowKey(u.id));
    if (!alloc) throw new JobError('NOT_FOUND', `allocation "${u.id}" not found`);
    if (alloc.nodeId !== nodeId) throw new JobError('FORBIDDEN', `allocation "${u.id}" does not run on node "${nodeId}"`);
  }
}

/** The time of the newest task event in `states` (0 when none). */
function latestTaskEvent(states: Allocation['taskStates'] | undefined): number {
  let latest = 0;
  for (const s of Object.values(states ?? {})) for (const e of s.events ?? []) if (e.at > latest) latest = e.at;
  return latest;
}
