// GET /v1/jobs answered again without recounting: the rows of one
// namespace, prefix and `meta` (each job's JobListStub with its summary,
// counted over every allocation) are kept while neither the jobs nor the
// allocations table has changed, and so is their JSON. A UI or a script
// polling the list, and the readers one change wakes, read the same rows.

import type * as api from '../../api/index.js';
import { jobListStub } from '../../structs/index.js';
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

interface Entry extends JobList {
  jobsIndex: number;
  allocsIndex: number;
}

export class JobListCache {
  readonly #entries = new Map<string, Entry>();

  /**
   * The list of jobs in `namespace` (`*`: all) whose ID starts with
   * `prefix`, sorted by namespace and ID, each with its summary; `meta`
   * adds the jobs' Meta. Counted from `snap` unless the same list was
   * counted at the same jobs and allocations indexes. Never blocks.
   */
  list(snap: StateReader, namespace: string, prefix: string, meta: boolean): JobList {
    const key = `${namespace}\0${prefix}\0${meta ? 1 : 0}`;
    const jobsIndex = snap.tableIndex('jobs');
    const allocsIndex = snap.tableIndex('allocations');
    const kept = this.#entries.get(key);
    if (kept && kept.jobsIndex === jobsIndex && kept.allocsIndex === allocsIndex) return kept;
    const jobs = snap.list('jobs', { filter: (j) => (namespace === '*' || j.namespace === namespace) && j.id.startsWith(prefix) });
    const summaries = jobSummariesIn(snap, jobs);
    const rows = jobs.map((j) => jobListStub(j, { summary: summaries.get(j.namespace)?.get(j.id) ?? null, meta }));
    let json: string | undefined;
    const entry: Entry = { rows, json: () => (json ??= JSON.stringify(rows)), jobsIndex, allocsIndex };
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    if (this.#entries.size > MAX_ENTRIES) this.#entries.delete(this.#entries.keys().next().value as string);
    return entry;
  }
}
