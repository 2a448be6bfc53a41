// Jobs, and a job: its groups, allocations and why anything is not placed.

import { useRoute } from 'preact-iso';
import { actions, api, fromNs, type AllocStub, type Evaluation, type PlacementFailure } from '../api';
import { ActionButton, Badge, Facts, Loading, Section, Table, ago, short, time } from '../components';
import { useLive, watchUntil } from '../live';
import { useCanWrite } from '../session';

function countStates(allocs: AllocStub[]): string {
  const m = new Map<string, number>();
  for (const a of allocs) m.set(a.ClientStatus, (m.get(a.ClientStatus) ?? 0) + 1);
  return [...m.entries()].map(([k, n]) => `${n} ${k}`).join(', ') || 'none';
}

export function JobsPage() {
  const { data, error } = useLive('jobs', ['Job', 'Allocation'], async () => {
    const [jobs, allocs] = await Promise.all([api.jobs(), api.allocations()]);
    return { jobs, allocs };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  return (
    <main id="main">
      <h1>Jobs</h1>
      <Table
        label="jobs"
        head={['Job', 'Namespace', 'Type', 'Status', 'Allocations', 'Submitted']}
        empty="No jobs. Run one with berth job run <file>."
        rows={data.jobs.map((j) => [
          <a href={`/ui/jobs/${encodeURIComponent(j.Namespace ?? 'default')}/${encodeURIComponent(j.ID)}`}>{j.ID}</a>,
          j.Namespace,
          j.Type,
          <Badge value={j.Status} />,
          countStates(data.allocs.filter((a) => a.JobID === j.ID && a.Namespace === j.Namespace)),
          ago(fromNs(j.SubmitTime)),
        ])}
      />
    </main>
  );
}

/** Why a group was not placed, in words: "2 nodes lacked the CSI plugin hostpath; 1 node exhausted memory". */
export function explainPlacement(f: PlacementFailure): string {
  const reasons: Array<[string, number]> = [
    ...Object.entries(f.ConstraintFiltered ?? {}).map(([why, n]): [string, number] => [/^(were|was|lacked|had|could|did|found|reached|exhausted) /.test(why) ? why : `filtered by ${why}`, n]),
    ...Object.entries(f.ClassFiltered ?? {}).map(([cls, n]): [string, number] => [`filtered by class ${cls}`, n]),
    ...Object.entries(f.DimensionExhausted ?? {}).map(([dim, n]): [string, number] => [`exhausted ${dim}`, n]),
  ];
  const parts = reasons.sort((a, b) => b[1] - a[1]).map(([reason, n]) => `${n} node${n === 1 ? '' : 's'} ${reason}`);
  if (f.NodesEvaluated === 0) parts.unshift('no nodes were eligible');
  return parts.join('; ') || 'no reason recorded';
}

function Placement({ evals }: { evals: Evaluation[] }) {
  const latest = [...evals].sort((a, b) => b.CreateTime - a.CreateTime)[0];
  if (!latest) return <p class="empty">No evaluation yet.</p>;
  const failed = Object.entries(latest.FailedTGAllocs ?? {});
  const queued = Object.entries(latest.QueuedAllocations ?? {}).filter(([, n]) => n > 0);
  return (
    <>
      <Facts
        items={[
          ['Latest evaluation', `${short(latest.ID)} (${latest.TriggeredBy}, ${time(fromNs(latest.CreateTime))})`],
          ['Status', <Badge value={latest.Status} />],
          ...(latest.StatusDescription ? ([['Description', latest.StatusDescription]] as Array<[string, string]>) : []),
          ...(queued.length ? ([['Queued', queued.map(([g, n]) => `${g}: ${n}`).join(', ')]] as Array<[string, string]>) : []),
          ...(latest.BlockedEval ? ([['Blocked evaluation', short(latest.BlockedEval)]] as Array<[string, string]>) : []),
        ]}
      />
      {latest.Status === 'pending' ? (
        <p class="empty">Waiting for the scheduler to run this evaluation.</p>
      ) : failed.length === 0 ? (
        <p class="ok">Every allocation this evaluation wanted was placed.</p>
      ) : (
        <Table
          label="placement failures"
          head={['Group', 'Not placed', 'Nodes evaluated', 'Why']}
          empty=""
          rows={failed.map(([group, f]) => [group, String(f.CoalescedFailures + 1), `${f.NodesEvaluated} (filtered ${f.NodesFiltered}, exhausted ${f.NodesExhausted})`, <span data-placement-reason>{explainPlacement(f)}</span>])}
        />
      )}
    </>
  );
}

export function AllocationTable({ allocs, label }: { allocs: Array<Pick<AllocStub, 'ID' | 'JobID' | 'TaskGroup' | 'NodeID' | 'DesiredStatus' | 'ClientStatus' | 'CreateTime' | 'ModifyTime'>>; label: string }) {
  return (
    <Table
      label={label}
      head={['Allocation', 'Job', 'Group', 'Node', 'Desired', 'Status', 'Modified']}
      empty="No allocations."
      rows={[...allocs]
        .sort((a, b) => b.CreateTime - a.CreateTime)
        .map((a) => [
          <a href={`/ui/allocations/${a.ID}`}>{short(a.ID)}</a>,
          a.JobID,
          a.TaskGroup,
          <a href={`/ui/nodes/${a.NodeID}`}>{short(a.NodeID)}</a>,
          a.DesiredStatus,
          <Badge value={a.ClientStatus} />,
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
  const { data, error } = useLive(`job/${ns}/${id}`, ['Job', 'Allocation', 'Evaluation'], async () => {
    const [job, allocs, evals] = await Promise.all([api.job(ns, id), api.jobAllocations(ns, id), api.jobEvaluations(ns, id)]);
    return { job, allocs, evals };
  });
  if (!data) return <main id="main"><Loading error={error} /></main>;
  const { job, allocs, evals } = data;
  const stop = async (progress: (m: string) => void): Promise<string> => {
    const { EvalID } = await actions.stopJob(ns, id);
    progress(`Stopping: evaluation ${short(EvalID)} placed…`);
    return watchUntil(['allocation'], async () => {
      const now = await api.jobAllocations(ns, id);
      const left = now.filter((a) => a.ClientStatus === 'running' || a.ClientStatus === 'pending');
      if (left.length === 0) return `Stopped: ${now.length} allocation${now.length === 1 ? '' : 's'} finished.`;
      progress(`Stopping: ${now.length - left.length} of ${now.length} allocations stopped…`);
      return undefined;
    });
  };
  return (
    <main id="main">
      <h1>
        Job {job.ID} <Badge value={job.Status ?? 'pending'} />
      </h1>
      {canWrite ? (
        <div class="actions">
          <ActionButton
            label="Stop job"
            danger
            confirm={`Stop job ${job.ID}? Its allocations are stopped and their volume claims released.`}
            run={stop}
            {...(job.Stop ? { disabledReason: 'the job is stopped' } : {})}
          />
        </div>
      ) : null}
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
          ['Datacenters', (job.Datacenters ?? []).join(', ')],
          ['Submitted', time(fromNs(job.SubmitTime))],
        ]}
      />
      <Section title="Groups" id="groups">
        <Table
          label="groups"
          head={['Group', 'Count', 'Tasks', 'Volumes', 'Allocations']}
          empty="No groups."
          rows={(job.TaskGroups ?? []).map((g) => [
            g.Name ?? '',
            String(g.Count ?? 1),
            (g.Tasks ?? []).map((t) => `${t.Name} (${t.Driver})`).join(', '),
            Object.entries(g.Volumes ?? {}).map(([name, v]) =>
              v.Type === 'csi' ? (
                <a href={`/ui/volumes/${encodeURIComponent(job.Namespace ?? 'default')}/${encodeURIComponent(v.Source ?? '')}`}>
                  {name}: {v.Source}
                </a>
              ) : (
                `${name}: ${v.Source}`
              ),
            ),
            countStates(allocs.filter((a) => a.TaskGroup === g.Name)),
          ])}
        />
      </Section>
      <Section title="Placement" id="placement">
        <Placement evals={evals} />
      </Section>
      <Section title="Allocations" id="allocations">
        <AllocationTable allocs={allocs} label="allocations of the job" />
      </Section>
    </main>
  );
}
