// Jobs, and a job: its groups, allocations and why anything is not placed.

import { useRoute } from 'preact-iso';
import { actions, api, type Allocation, type Evaluation, type PlacementFailure } from '../api';
import { ActionButton, Badge, Facts, Loading, Section, Table, ago, short, time } from '../components';
import { useLive, watchUntil } from '../live';
import { useCanWrite } from '../session';

function countStates(allocs: Allocation[]): string {
  const m = new Map<string, number>();
  for (const a of allocs) m.set(a.clientStatus, (m.get(a.clientStatus) ?? 0) + 1);
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
          <a href={`/ui/jobs/${encodeURIComponent(j.namespace)}/${encodeURIComponent(j.id)}`}>{j.id}</a>,
          j.namespace,
          j.type,
          <Badge value={j.status} />,
          countStates(data.allocs.filter((a) => a.jobId === j.id && a.namespace === j.namespace)),
          ago(j.submitTime),
        ])}
      />
    </main>
  );
}

/** Why a group was not placed, in words: "2 nodes missing CSI plugin hostpath; ...". */
export function explainPlacement(f: PlacementFailure): string {
  const parts = Object.entries(f.reasons)
    .sort((a, b) => b[1] - a[1])
    .map(([reason, n]) => `${n} node${n === 1 ? '' : 's'} ${reason}`);
  if (f.nodesEvaluated === 0) parts.unshift('no nodes were eligible');
  return parts.join('; ') || 'no reason recorded';
}

function Placement({ evals }: { evals: Evaluation[] }) {
  const latest = [...evals].sort((a, b) => b.createTime - a.createTime)[0];
  if (!latest) return <p class="empty">No evaluation yet.</p>;
  const failed = Object.entries(latest.failedPlacements ?? {});
  return (
    <>
      <Facts
        items={[
          ['Latest evaluation', `${short(latest.id)} (${latest.triggeredBy}, ${time(latest.createTime)})`],
          ['Status', <Badge value={latest.status} />],
          ['Placed / stopped', `${latest.placed} / ${latest.stopped}`],
          ...(latest.blockedReason ? ([['Blocked because', latest.blockedReason]] as Array<[string, string]>) : []),
        ]}
      />
      {latest.status === 'pending' ? (
        <p class="empty">Waiting for the scheduler to run this evaluation.</p>
      ) : failed.length === 0 ? (
        <p class="ok">Every allocation this evaluation wanted was placed.</p>
      ) : (
        <Table
          label="placement failures"
          head={['Group', 'Not placed', 'Nodes evaluated', 'Why']}
          empty=""
          rows={failed.map(([group, f]) => [group, String(f.unplaced), `${f.nodesEvaluated} (filtered ${f.nodesFiltered}, exhausted ${f.nodesExhausted})`, <span data-placement-reason>{explainPlacement(f)}</span>])}
        />
      )}
    </>
  );
}

export function AllocationTable({ allocs, label }: { allocs: Allocation[]; label: string }) {
  return (
    <Table
      label={label}
      head={['Allocation', 'Job', 'Group', 'Node', 'Desired', 'Status', 'Modified']}
      empty="No allocations."
      rows={[...allocs]
        .sort((a, b) => b.createTime - a.createTime)
        .map((a) => [
          <a href={`/ui/allocations/${a.id}`}>{short(a.id)}</a>,
          a.jobId,
          a.taskGroup,
          <a href={`/ui/nodes/${a.nodeId}`}>{short(a.nodeId)}</a>,
          a.desiredStatus,
          <Badge value={a.clientStatus} />,
          ago(a.modifyTime),
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
    const { evalId } = await actions.stopJob(ns, id);
    progress(`Stopping: evaluation ${short(evalId)} placed…`);
    return watchUntil(['Allocation'], async () => {
      const now = await api.jobAllocations(ns, id);
      const left = now.filter((a) => a.clientStatus === 'running' || a.clientStatus === 'pending');
      if (left.length === 0) return `Stopped: ${now.length} allocation${now.length === 1 ? '' : 's'} finished.`;
      progress(`Stopping: ${now.length - left.length} of ${now.length} allocations stopped…`);
      return undefined;
    });
  };
  return (
    <main id="main">
      <h1>
        Job {job.id} <Badge value={job.status} />
      </h1>
      {canWrite ? (
        <div class="actions">
          <ActionButton
            label="Stop job"
            danger
            confirm={`Stop job ${job.id}? Its allocations are stopped and their volume claims released.`}
            run={stop}
            {...(job.stop ? { disabledReason: 'the job is stopped' } : {})}
          />
        </div>
      ) : null}
      <Facts
        items={[
          ['Namespace', job.namespace],
          ['Type', job.type],
          ['Priority', String(job.priority)],
          ['Version', String(job.version)],
          ['Datacenters', job.datacenters.join(', ')],
          ['Submitted', time(job.submitTime)],
        ]}
      />
      <Section title="Groups" id="groups">
        <Table
          label="groups"
          head={['Group', 'Count', 'Tasks', 'Volumes', 'Allocations']}
          empty="No groups."
          rows={job.groups.map((g) => [
            g.name,
            String(g.count),
            g.tasks.map((t) => `${t.name} (${t.driver})`).join(', '),
            Object.entries(g.volumes ?? {}).map(([name, v]) =>
              v.type === 'csi' ? (
                <a href={`/ui/volumes/${encodeURIComponent(job.namespace)}/${encodeURIComponent(v.source)}`}>
                  {name}: {v.source}
                </a>
              ) : (
                `${name}: ${v.source}`
              ),
            ),
            countStates(allocs.filter((a) => a.taskGroup === g.name)),
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
