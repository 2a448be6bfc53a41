// A job's versions (GET /v1/job/:id/versions?diffs=true), newest first: each
// one's number, stability, submit time and its changes against the version
// before it as Nomad's UI shows them; Revert registers an older version again
// (PUT /v1/job/:id/revert, refused if the job changed meanwhile).

import { useRoute } from 'preact-iso/router';
import { fromNs } from '../api';
import { jobActions, jobHref, jobsApi } from '../api-jobs';
import { ActionButton, Badge, Loading, time } from '../components';
import { useLive, watchUntil } from '../live';
import { useCanWrite } from '../session';
import { changeCount, JobDiffView } from './job-diff';
import './jobs.css';

export function JobVersionsPage() {
  const { params } = useRoute();
  const ns = params['ns'] ?? 'default';
  const id = params['id'] ?? '';
  const canWrite = useCanWrite();
  const { data, error } = useLive(`job-versions/${ns}/${id}`, ['Job'], () => jobsApi.versions(ns, id));
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const versions = data.Versions ?? [];
  const current = versions[0]?.Version ?? 0;
  const revert = (to: number) => async (progress: (m: string) => void): Promise<string> => {
    const out = await jobActions.revert(ns, id, to, current);
    progress(`Reverting: evaluation ${out.EvalID.slice(0, 8)} created…`);
    return watchUntil(['job'], async () => {
      const job = await jobsApi.job(ns, id);
      return (job.Version ?? 0) > current ? `Reverted: version ${to} registered again as version ${job.Version}.` : undefined;
    });
  };
  return (
    <main id="main">
      <p class="crumbs">
        <a href="/ui/jobs">Jobs</a> / <a href={jobHref(ns, id)}>{id}</a>
      </p>
      <h1>Versions of job {id}</h1>
      {versions.map((v, i) => {
        const n = v.Version ?? 0;
        const diff = data.Diffs?.[i];
        const count = changeCount(diff);
        return (
          <section key={n} class="card job-version" data-version={n} aria-labelledby={`version-${n}`}>
            <div class="version-head">
              <h2 id={`version-${n}`}>Version #{n}</h2>
              {n === current ? <Badge value="live" label="current" /> : null}
              <span class="muted">Stable: {v.Stable ? 'yes' : 'no'}</span>
              <span class="muted">Submitted {time(fromNs(v.SubmitTime))}</span>
              {canWrite && n !== current ? (
                <ActionButton label={`Revert to version ${n}`} confirm={`Revert job ${id} to version ${n}? It is registered again as a new version.`} run={revert(n)} />
              ) : null}
            </div>
            {diff && (count > 0 || diff.Type.toLowerCase() !== 'none') ? (
              <details>
                <summary>
                  {count} change{count === 1 ? '' : 's'}
                </summary>
                <JobDiffView diff={diff} />
              </details>
            ) : (
              <p class="empty">{diff ? 'No changes.' : 'The oldest version kept: nothing to compare it with.'}</p>
            )}
          </section>
        );
      })}
    </main>
  );
}
