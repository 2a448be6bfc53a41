// GET /v1/jobs answered without recounting what did not change: the rows
// of one namespace, prefix and `meta` (each job's JobListStub with its
// summary, counted over the allocations) are kept with each row's JSON. While
// neither the jobs nor the allocations table changed, the list and its JSON
// are answered as kept (a UI or a script polling the list, the readers one
// change wakes). After a change, the store's event history says which jobs
// it touched (a job written, an allocation of it, a child of it): only
// those are counted and written again, the others' JSON is reused. When the
// history no longer reaches back, or a change touched most jobs, the list is
// counted whole.

import type * as api from '../../api/index.js';
import { jobListStub, type Allocation, type Job } from '../../structs/index.js';
import { jobSummariesIn } from '../jobs/index.js';
import type { StateReader } from '../state/index.js';

/** How many namespace/prefix/meta combinations are kept; the oldest goes first. */
const MAX_ENTRIES = 16;

/** One list's rows at the table indexes they were counted at. */
export interface JobList {
  rows: readonly api.JobListStub[];
  /** The rows as JSON, made once on first use. */
  json(): string;
}

interface Row {
  job: Job;
  stub: api.JobListStub;
  json: string;
}

interface Entry extends JobList {
  jobsIndex: number;
  allocsIndex: number;
  /** The store index of the view the rows were counted from: events after it are what changed since. */
  viewIndex: number;
  /** `namespace\0id` -> its row, in list order. */
  byJob: Map<string, Row>;
}

const keyOf = (namespace: string, id: string): string => `${namespace}\0${id}`;

/** The jobs a store event touched: the job written, the job of an allocation written, the parent of a child job. */
function touchedBy(topic: string, row: unknown, into: Set<string>): void {
  if (topic === 'jobs') {
    const j = row as Pick<Job, 'namespace' | 'id' | 'parentId'>;
    into.add(keyOf(j.namespace, j.id));
    if (j.parentId !== undefined) into.add(keyOf(j.namespace, j.parentId));
  } else {
    const a = row as Pick<Allocation, 'namespace' | 'jobId'>;
    into.add(keyOf(a.namespace, a.jobId));
  }
}

export class JobListCache {
  readonly #entries = new Map<string, Entry>();

  /**
   * The list of jobs in `namespace` (`*`: all) whose ID starts with
   * `prefix`, sorted by namespace and ID, each with its summary; `meta`
   * adds the jobs' Meta. Counted from `snap`, but for what the same list
   * counted earlier and no change has touched since. Never blocks.
   */
  list(snap: StateReader, namespace: string, prefix: string, meta: boolean): JobList {
    const key = `${namespace}\0${prefix}\0${meta ? 1 : 0}`;
    const jobsIndex = snap.tableIndex('jobs');
    const allocsIndex = snap.tableIndex('allocations');
    const kept = this.#entries.get(key);
    if (kept && kept.jobsIndex === jobsIndex && kept.allocsIndex === allocsIndex) return kept;
    const jobs = snap.list('jobs', { filter: (j) => (namespace === '*' || j.namespace === namespace) && j.id.startsWith(prefix) });
    const touched = kept ? this.#touchedSince(snap, kept, jobs.length) : undefined;
    // Count again the jobs changed (all of them without a kept list or a history to tell).
    const recount = touched ? jobs.filter((j) => touched.has(keyOf(j.namespace, j.id)) || kept?.byJob.get(keyOf(j.namespace, j.id))?.job !== j) : jobs;
    const summaries = jobSummariesIn(snap, recount);
    const byJob = new Map<string, Row>();
    for (const j of jobs) {
      const k = keyOf(j.namespace, j.id);
      const fresh = summaries.get(j.namespace)?.get(j.id);
      const old = kept?.byJob.get(k);
      if (!fresh && old) {
        byJob.set(k, old);
        continue;
      }
      const stub = jobListStub(j, { summary: fresh ?? null, meta });
      byJob.set(k, { job: j, stub, json: JSON.stringify(stub) });
    }
    const rows = [...byJob.values()];
    let json: string | undefined;
    const entry: Entry = {
      rows: rows.map((r) => r.stub),
      json: () => (json ??= `[${rows.map((r) => r.json).join(',')}]`),
      jobsIndex,
      allocsIndex,
      viewIndex: snap.index,
      byJob,
    };
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    if (this.#entries.size > MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value as string);
    return entry;
  }

  /**
   * The jobs the changes since `kept` was counted touched, from the store's
   * event history; undefined (count everything) when the history no longer
   * reaches back that far or the changes touched most of the `listed` jobs.
   */
  #touchedSince(snap: StateReader, kept: Entry, listed: number): Set<string> | undefined {
    const oldest = snap.oldestEventIndex;
    if (oldest === 0 || oldest > kept.viewIndex + 1) return undefined;
    const limit = Math.max(64, listed / 2);
    const events = snap.events(kept.viewIndex, { topics: ['jobs', 'allocations'], limit: limit + 1 });
    if (events.length > limit) return undefined;
    const touched = new Set<string>();
    for (const e of events) touchedBy(e.topic, e.row, touched);
    return touched;
  }
}
