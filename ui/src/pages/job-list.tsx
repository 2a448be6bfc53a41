// The jobs list: one read of /v1/jobs (each row carries its JobSummary, so
// no allocation is read), searched and filtered in the browser, the search
// and filters kept in the URL's query so a link or a reload keeps them.

import { useState } from 'preact/hooks';
import { useLocation } from 'preact-iso/router';
import { fromNs } from '../api';
import { jobHref, jobsApi } from '../api-jobs';
import { Badge, Loading, Table, ago } from '../components';
import { useLive } from '../live';
import { useCanWrite } from '../session';
import { applyFilter, countsText, filterOf, JOB_STATES, jobState, queryOf, stateBadge, summaryCounts, type JobFilter } from './job-status';
import './jobs.css';

const TYPES = ['service', 'batch', 'system', 'sysbatch'];
/** Rows drawn at first and added per "Show more": a thousand table rows cost the browser far more layout than a hundred. */
export const PAGE_ROWS = 100;

function Select({ name, label, value, options, onChange }: { name: string; label: string; value: string; options: Array<[string, string]>; onChange: (v: string) => void }) {
  return (
    <label class="job-filter">
      <span>{label}</span>
      <select name={name} value={value} onChange={(e) => onChange((e.currentTarget as HTMLSelectElement).value)}>
        <option value="">all</option>
        {options.map(([v, l]) => (
          <option value={v}>{l}</option>
        ))}
      </select>
    </label>
  );
}

export function JobsPage() {
  const { query, route } = useLocation();
  const canWrite = useCanWrite();
  const filter = filterOf(query);
  const [shown, setShown] = useState({ key: '', rows: PAGE_ROWS });
  const { data, error } = useLive('jobs', ['Job', 'Allocation'], () => jobsApi.list());
  const set = (change: Partial<JobFilter>): void => route(`/ui/jobs${queryOf({ ...filter, ...change })}`, true);
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const namespaces = [...new Set(data.map((j) => j.Namespace ?? 'default'))].sort();
  const rows = applyFilter(data, filter, jobState);
  const filtered = rows.length !== data.length;
  // A new search or filter starts again from the first rows.
  const key = queryOf(filter);
  const limit = shown.key === key ? shown.rows : PAGE_ROWS;
  const drawn = rows.slice(0, limit);
  return (
    <main id="main">
      <div class="page-head">
        <h1>Jobs</h1>
        {canWrite ? (
          <a class="button" href="/ui/jobs/new">
            Run a job
          </a>
        ) : null}
      </div>
      <form class="job-filters" role="search" aria-label="jobs" onSubmit={(e) => e.preventDefault()}>
        <label class="job-filter job-search">
          <span>Search</span>
          <input type="search" name="q" placeholder="job ID or name" value={filter.q} onInput={(e) => set({ q: (e.currentTarget as HTMLInputElement).value })} />
        </label>
        <Select name="status" label="Status" value={filter.status} options={JOB_STATES.map(([v, l]) => [v, l])} onChange={(status) => set({ status })} />
        <Select name="type" label="Type" value={filter.type} options={TYPES.map((t) => [t, t])} onChange={(type) => set({ type })} />
        <Select name="namespace" label="Namespace" value={filter.namespace} options={namespaces.map((n) => [n, n])} onChange={(namespace) => set({ namespace })} />
      </form>
      <p class="hint" data-job-count={rows.length} role="status">
        {filtered ? `${rows.length} of ${data.length} jobs` : `${data.length} job${data.length === 1 ? '' : 's'}`}
        {drawn.length < rows.length ? `; the first ${drawn.length} shown` : ''}
      </p>
      <Table
        label="jobs"
        head={['Job', 'Namespace', 'Type', 'Status', 'Allocations', 'Submitted', 'Priority']}
        empty={filtered ? 'No job matches.' : 'No jobs. Run one with berth job run <file>.'}
        rows={drawn.map((j) => {
          const badge = stateBadge(jobState(j));
          return [
            <a href={jobHref(j.Namespace, j.ID)}>{j.ID}</a>,
            j.Namespace ?? 'default',
            j.Type,
            <Badge value={badge.value} label={badge.label} />,
            countsText(summaryCounts(j)),
            ago(fromNs(j.SubmitTime)),
            String(j.Priority),
          ];
        })}
      />
      {drawn.length < rows.length ? (
        <p class="more">
          <button type="button" onClick={() => setShown({ key, rows: limit + PAGE_ROWS })}>
            Show {Math.min(PAGE_ROWS, rows.length - drawn.length)} more
          </button>{' '}
          <button type="button" class="link" onClick={() => setShown({ key, rows: rows.length })}>
            Show all {rows.length}
          </button>
        </p>
      ) : null}
    </main>
  );
}
