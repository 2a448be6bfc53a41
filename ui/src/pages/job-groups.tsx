// A job's groups: a summary row each (count, tasks, volumes, allocations),
// then each group in full: its network (mode and ports), services (linked to
// the services catalog), volumes, tasks (driver, resources, mounts) and the
// placement rules (constraints, affinities, spreads) of the job, the group
// and its tasks.

import type { Job } from '../api';
import type { AllocStub, Task, TaskGroup } from '../api-jobs';
import { Facts, Table } from '../components';

type Rule = { LTarget?: string; RTarget?: string; Operand?: string; Weight?: number | null };

export function countStates(allocs: AllocStub[]): string {
  const m = new Map<string, number>();
  for (const a of allocs) m.set(a.ClientStatus, (m.get(a.ClientStatus) ?? 0) + 1);
  return [...m.entries()].map(([k, n]) => `${n} ${k}`).join(', ') || 'none';
}

const enc = encodeURIComponent;

/** A constraint or affinity as written: `${attr.kernel.name} = linux`. */
function ruleText(r: Rule): string {
  const op = r.Operand || '=';
  return [r.LTarget, op, r.RTarget].filter(Boolean).join(' ');
}

function resourcesText(t: Task): string {
  const r = t.Resources;
  if (!r) return '-';
  const parts = [
    r.Cores ? `${r.Cores} cores` : r.BerthCores ? `${r.BerthCores} cores` : `${r.CPU ?? 100} MHz`,
    `${r.MemoryMB ?? 300} MiB${r.MemoryMaxMB ? ` (max ${r.MemoryMaxMB} MiB)` : ''}`,
    ...(r.DiskMB ? [`${r.DiskMB} MiB disk`] : []),
    ...(r.Devices ?? []).map((d) => `${d.Count ?? 1}× ${d.Name}`),
  ];
  return parts.join(', ');
}

function PlacementRules({ job, group }: { job: Job; group: TaskGroup }) {
  const rows: Array<[string, string, string]> = [];
  const add = (scope: string, kind: string, rules: Rule[] | null | undefined, weighted = false): void => {
    for (const r of rules ?? []) rows.push([scope, kind, `${ruleText(r)}${weighted ? ` (weight ${r.Weight ?? 50})` : ''}`]);
  };
  add('job', 'constraint', job.Constraints);
  add('job', 'affinity', job.Affinities, true);
  for (const s of job.Spreads ?? []) rows.push(['job', 'spread', `${s.Attribute} (weight ${s.Weight ?? 50})`]);
  add(`group ${group.Name}`, 'constraint', group.Constraints);
  add(`group ${group.Name}`, 'affinity', group.Affinities, true);
  for (const s of group.Spreads ?? []) rows.push([`group ${group.Name}`, 'spread', `${s.Attribute} (weight ${s.Weight ?? 50})`]);
  for (const t of group.Tasks ?? []) {
    add(`task ${t.Name}`, 'constraint', t.Constraints);
    add(`task ${t.Name}`, 'affinity', t.Affinities, true);
  }
  return <Table label={`placement rules of ${group.Name}`} head={['Where', 'Kind', 'Rule']} empty="No constraints or affinities." rows={rows} />;
}

function GroupDetail({ job, group }: { job: Job; group: TaskGroup }) {
  const ns = job.Namespace ?? 'default';
  const networks = group.Networks ?? [];
  const ports = networks.flatMap((n) => [
    ...(n.ReservedPorts ?? []).map((p) => [p.Label, `static ${p.Value}`, p.To ? String(p.To) : '-', p.HostNetwork || 'default']),
    ...(n.DynamicPorts ?? []).map((p) => [p.Label, 'dynamic', p.To ? String(p.To) : '-', p.HostNetwork || 'default']),
  ]);
  const services = [...(group.Services ?? []).map((s) => ({ s, task: '' })), ...(group.Tasks ?? []).flatMap((t) => (t.Services ?? []).map((s) => ({ s, task: t.Name })))];
  return (
    <article class="job-group" data-group={group.Name} aria-labelledby={`group-${group.Name}`}>
      <h3 id={`group-${group.Name}`}>Group {group.Name}</h3>
      <Facts
        items={[
          ['Count', String(group.Count ?? 1)],
          ['Network mode', networks.length ? networks.map((n) => n.Mode || 'host').join(', ') : 'host (no network block)'],
          ...(group.Update ? ([['Update', `canary ${group.Update.Canary ?? 0}, max parallel ${group.Update.MaxParallel ?? 1}, health check ${group.Update.HealthCheck ?? 'checks'}`]] as Array<[string, string]>) : []),
        ]}
      />
      <h4>Tasks</h4>
      <Table
        label={`tasks of ${group.Name}`}
        head={['Task', 'Driver', 'Resources', 'Lifecycle', 'Volume mounts']}
        empty="No tasks."
        rows={(group.Tasks ?? []).map((t) => [
          t.Name,
          t.Driver,
          resourcesText(t),
          t.Lifecycle ? `${t.Lifecycle.Hook}${t.Lifecycle.Sidecar ? ' (sidecar)' : ''}` : 'main',
          (t.VolumeMounts ?? []).map((m) => `${m.Volume} at ${m.Destination}${m.ReadOnly ? ' (read-only)' : ''}`).join(', ') || '-',
        ])}
      />
      <h4>Ports</h4>
      <Table label={`ports of ${group.Name}`} head={['Label', 'Port', 'To', 'Host network']} empty="No ports." rows={ports} />
      <h4>Services</h4>
      <Table
        label={`services of ${group.Name}`}
        head={['Service', 'Port', 'Provider', 'Task', 'Tags', 'Checks']}
        empty="No services."
        rows={services.map(({ s, task }) => [
          <a href={`/ui/services/${enc(ns)}/${enc(s.Name)}`}>{s.Name}</a>,
          s.PortLabel || '-',
          s.Provider || 'consul',
          task || '(group)',
          (s.Tags ?? []).join(', ') || '-',
          (s.Checks ?? []).map((c) => `${c.Name || c.Type} (${c.Type})`).join(', ') || 'none',
        ])}
      />
      <h4>Volumes</h4>
      <Table
        label={`volumes of ${group.Name}`}
        head={['Volume', 'Type', 'Source', 'Access', 'Read-only']}
        empty="No volumes."
        rows={Object.entries(group.Volumes ?? {}).map(([name, v]) => [
          name,
          v.Type,
          v.Type === 'csi' ? <a href={`/ui/volumes/${enc(ns)}/${enc(v.Source)}`}>{v.Source}</a> : v.Source,
          [v.AccessMode, v.AttachmentMode].filter(Boolean).join(', ') || '-',
          v.ReadOnly ? 'yes' : 'no',
        ])}
      />
      <h4>Placement rules</h4>
      <PlacementRules job={job} group={group} />
    </article>
  );
}

export function Groups({ job, allocs }: { job: Job; allocs: AllocStub[] }) {
  const ns = job.Namespace ?? 'default';
  return (
    <>
      <Table
        label="groups"
        head={['Group', 'Count', 'Tasks', 'Volumes', 'Allocations']}
        empty="No groups."
        rows={(job.TaskGroups ?? []).map((g) => [
          <a href={`#group-${g.Name}`}>{g.Name ?? ''}</a>,
          String(g.Count ?? 1),
          (g.Tasks ?? []).map((t) => `${t.Name} (${t.Driver})`).join(', '),
          Object.entries(g.Volumes ?? {}).map(([name, v]) =>
            v.Type === 'csi' ? (
              <a href={`/ui/volumes/${enc(ns)}/${enc(v.Source ?? '')}`}>
                {name}: {v.Source}
              </a>
            ) : (
              `${name}: ${v.Source}`
            ),
          ),
          countStates(allocs.filter((a) => a.TaskGroup === g.Name)),
        ])}
      />
      {(job.TaskGroups ?? []).map((g) => (
        <GroupDetail job={job} group={g} />
      ))}
    </>
  );
}
