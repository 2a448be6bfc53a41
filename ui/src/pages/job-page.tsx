// A job: what it is (its `ui` block, facts), its latest deployment, its
// groups in full, where its evaluations placed it (and why not), its
// evaluations and allocations; Stop, Start (a stopped job), Edit and
// Versions. Live: reloads on changes of the job, its allocations,
// evaluations and deployments.

import { useRef } from 'preact/hooks';
import { useRoute } from 'preact-iso/router';
import { actions, fromNs } from '../api';
import { jobActions, jobHref, jobsApi, type AllocStub } from '../api-jobs';
import { ActionButton, Badge, Facts, Loading, Section, Table, ago, short, time } from '../components';
import { useLive, watchUntil } from '../live';
import { useCanWrite } from '../session';
import { allocHealth, DeploymentSection, updatedInPlace } from './job-deployment';
import { EvaluationList, Placement } from './job-evals';
import { Groups } from './job-groups';
import './jobs.css';

function JobAllocations({ allocs, inPlace }: { allocs: AllocStub[]; inPlace: Set<string> }) {
  return (
    <Table
      label="allocations of the job"
      head={['Allocation', 'Group', 'Node', 'Version', 'Desired', 'Status', 'Deployment health', 'Modified']}
      empty="No allocations."
      rows={[...allocs]
        .sort((a, b) => b.CreateTime - a.CreateTime)
        .map((a) => [
          <a href={`/ui/allocations/${a.ID}`}>{short(a.ID)}</a>,
          a.TaskGroup,
          <a href={`/ui/nodes/${a.NodeID}`}>{a.NodeName || short(a.NodeID)}</a>,
          `${a.JobVersion}${inPlace.has(a.ID) ? ' (in place)' : ''}`,
          a.DesiredStatus,
          <Badge value={a.ClientStatus} />,
          a.DeploymentStatus ? `${allocHealth(a)}${a.DeploymentStatus.Canary ? ' (canary)' : ''}` : '-',
          ago(fromNs(a.ModifyTime)),
        ])}
    />
  );
}

export function JobPage() {
  const { params } = useRoute();
  const ns = params['ns'] ?? 'default';
  const id = params['id'] ?? '';
  const canWrite = useCanWrite();
  const { data, error } = useLive(`job/${ns}/${id}`, ['Job', 'Allocation', 'Evaluation', 'Deployment'], async () => {
    const [job, allocs, evals, deployment] = await Promise.all([jobsApi.job(ns, id), jobsApi.allocations(ns, id), jobsApi.evaluations(ns, id), jobsApi.deployment(ns, id)]);
    return { job, allocs, evals, deployment };
  });
  // Start shows once the job was seen stopped, and stays (disabled) after it started, with its outcome.
  const startShown = useRef(false);
  if (data?.job.Stop) startShown.current = true;
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { job, allocs, evals, deployment } = data;
  const stop = async (progress: (m: string) => void): Promise<string> => {
    const { EvalID } = await actions.stopJob(ns, id);
    progress(`Stopping: evaluation ${short(EvalID)} placed…`);
    return watchUntil(['allocation'], async () => {
      const now = await jobsApi.allocations(ns, id);
      const left = now.filter((a) => a.ClientStatus === 'running' || a.ClientStatus === 'pending');
      if (left.length === 0) return `Stopped: ${now.length} allocation${now.length === 1 ? '' : 's'} finished.`;
      progress(`Stopping: ${now.length - left.length} of ${now.length} allocations stopped…`);
      return undefined;
    });
  };
  const start = async (progress: (m: string) => void): Promise<string> => {
    const { EvalID } = await jobActions.start(ns, id);
    progress(`Starting: evaluation ${short(EvalID)} created…`);
    return watchUntil(['job', 'allocation'], async () => {
      const [now, allocsNow] = await Promise.all([jobsApi.job(ns, id), jobsApi.allocations(ns, id)]);
      const running = allocsNow.filter((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running').length;
      if (!now.Stop && running > 0) return `Started: ${running} allocation${running === 1 ? '' : 's'} running.`;
      progress(`Starting: ${running} allocations running…`);
      return undefined;
    });
  };
  const inPlace = new Set(deployment ? updatedInPlace(deployment, allocs).map((a) => a.ID) : []);
  return (
    <main id="main">
      <p class="crumbs">
        <a href="/ui/jobs">Jobs</a> / {job.Namespace ?? 'default'}
      </p>
      <h1>
        Job {job.ID} <Badge value={job.Status ?? 'pending'} label={job.Status === 'dead' && job.Stop ? 'dead (stopped)' : (job.Status ?? 'pending')} />
      </h1>
      <div class="actions job-actions">
        <a href={jobHref(ns, id, '/versions')}>Versions</a>
        {canWrite ? (
          <>
            <a class="button" href={jobHref(ns, id, '/edit')}>
              Edit
            </a>
            <ActionButton
              label="Stop job"
              danger
              confirm={`Stop job ${job.ID}? Its allocations are stopped and their volume claims released.`}
              run={stop}
              {...(job.Stop ? { disabledReason: 'the job is stopped' } : {})}
            />
            {startShown.current ? (
              <ActionButton
                label="Start job"
                confirm={`Start job ${job.ID} again? It is registered as it is, no longer stopped.`}
                run={start}
                {...(job.Stop ? {} : { disabledReason: 'the job is not stopped' })}
              />
            ) : null}
          </>
        ) : null}
      </div>
      {job.UI?.Description || job.UI?.Links?.length ? (
        // The job's `ui` block. The description is shown as written (not rendered as Markdown); only http(s) links are links.
        <section class="job-ui" aria-label="about this job">
          {job.UI.Description ? <p class="job-description">{job.UI.Description}</p> : null}
          {job.UI.Links?.length ? (
            <ul class="job-links">
              {job.UI.Links.map((l) => (
                <li>{/^https?:\/\//i.test(l.URL) ? <a href={l.URL} rel="noopener noreferrer" target="_blank">{l.Label}</a> : `${l.Label}: ${l.URL}`}</li>
              ))}
            </ul>
          ) : null}
        </section>
      ) : null}
      <Facts
        items={[
          ['Namespace', job.Namespace ?? 'default'],
          ['Type', job.Type ?? 'service'],
          ['Priority', String(job.Priority ?? 50)],
          ['Version', String(job.Version ?? 0)],
          ['Stable', job.Stable ? 'yes' : 'no'],
          ['Datacenters', (job.Datacenters ?? []).join(', ')],
          ['Node pool', job.NodePool || 'default'],
          ['Submitted', time(fromNs(job.SubmitTime))],
        ]}
      />
      {deployment || job.Type === 'service' ? (
        <Section title="Deployment" id="deployment">
          <DeploymentSection deployment={deployment} allocs={allocs} canWrite={canWrite} ns={ns} id={id} />
        </Section>
      ) : null}
      <Section title="Groups" id="groups">
        <Groups job={job} allocs={allocs} />
      </Section>
      <Section title="Placement" id="placement">
        <Placement evals={evals} />
      </Section>
      <Section title="Evaluations" id="evaluations">
        <EvaluationList evals={evals} />
      </Section>
      <Section title="Allocations" id="allocations">
        <JobAllocations allocs={allocs} inPlace={inPlace} />
      </Section>
    </main>
  );
}
