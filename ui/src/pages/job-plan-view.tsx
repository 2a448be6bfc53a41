// A job plan as `berth job plan` shows it (Nomad's job plan): the job's diff
// with + (added), - (deleted) and ~ (edited) fields and blocks, each group
// with what the scheduler would do to it ("2 create, 1 in-place update"),
// then the scheduler's dry run: where each new allocation would go, what it
// would stop, and why placements failed, in Nomad's words.

import type { JobPlanResponse } from '../api-editor';

type Plan = JobPlanResponse;
type Diff = NonNullable<Plan['Diff']>;
type GroupDiff = NonNullable<Diff['TaskGroups']>[number];
type TaskDiff = NonNullable<GroupDiff['Tasks']>[number];
type ObjectDiff = NonNullable<Diff['Objects']>[number];
type FieldDiff = NonNullable<Diff['Fields']>[number];
type Metric = NonNullable<Plan['FailedTGAllocs']>[string];

const MARK: Record<string, string> = { Added: '+', Deleted: '-', Edited: '~', None: ' ' };
const quote = (s: string): string => JSON.stringify(s);

function Line({ type, depth, children }: { type: string; depth: number; children: preact.ComponentChildren }) {
  return (
    <div class={`diff-line diff-${type.toLowerCase()}`} data-diff={type} style={{ paddingLeft: `${depth * 2}ch` }}>
      <span class="diff-mark" title={type === 'None' ? undefined : type}>
        {MARK[type] ?? ' '}
      </span>{' '}
      {children}
    </div>
  );
}

function fieldValue(f: FieldDiff): string {
  const v = f.Type === 'Deleted' ? quote(f.Old) : f.Type === 'Edited' ? `${quote(f.Old)} => ${quote(f.New)}` : quote(f.New);
  return f.Annotations?.length ? `${v} (${f.Annotations.join(', ')})` : v;
}

function Fields({ fields, objects, depth }: { fields: FieldDiff[] | null; objects: ObjectDiff[] | null; depth: number }) {
  return (
    <>
      {(fields ?? []).map((f) => (
        <Line type={f.Type} depth={depth}>
          <span data-field={f.Name}>
            {f.Name}: {fieldValue(f)}
          </span>
        </Line>
      ))}
      {(objects ?? []).map((o) => (
        <>
          <Line type={o.Type} depth={depth}>
            {o.Name} {'{'}
          </Line>
          <Fields fields={o.Fields} objects={o.Objects} depth={depth + 1} />
          <Line type="None" depth={depth}>
            {'}'}
          </Line>
        </>
      ))}
    </>
  );
}

function Task({ t, depth, verbose }: { t: TaskDiff; depth: number; verbose: boolean }) {
  const open = t.Type === 'Edited' || (verbose && t.Type !== 'None');
  return (
    <>
      <Line type={t.Type} depth={depth}>
        Task: {quote(t.Name)}
        {t.Annotations?.length ? ` (${t.Annotations.join(', ')})` : ''}
      </Line>
      {open ? <Fields fields={t.Fields} objects={t.Objects} depth={depth + 1} /> : null}
    </>
  );
}

/** A group's scheduler decisions as Nomad writes them: "1 create, 2 in-place update", sorted by kind. */
export function updatesText(updates: Record<string, number> | null | undefined): string {
  return Object.entries(updates ?? {})
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([kind, n]) => `${n} ${kind}`)
    .join(', ');
}

/** The job's diff; `verbose` also shows the fields of added and removed groups and tasks (`job plan -verbose`). */
export function JobDiffView({ diff, verbose }: { diff: Diff; verbose: boolean }) {
  const showOwn = diff.Type === 'Edited' || verbose;
  return (
    <div class="diff" role="group" aria-label="Job diff" data-job-diff={diff.Type}>
      <Line type={diff.Type} depth={0}>
        Job: {quote(diff.ID)}
      </Line>
      {showOwn ? <Fields fields={diff.Fields} objects={diff.Objects} depth={1} /> : null}
      {(diff.TaskGroups ?? []).map((g) => {
        const updates = updatesText(g.Updates);
        return (
          <div data-group={g.Name} data-group-diff={g.Type} data-updates={updates}>
            <Line type={g.Type} depth={1}>
              Task Group: {quote(g.Name)}
              {updates ? ` (${updates})` : ''}
            </Line>
            {g.Type === 'Edited' || verbose ? <Fields fields={g.Fields} objects={g.Objects} depth={2} /> : null}
            {(g.Tasks ?? []).map((t) => (
              <Task t={t} depth={2} verbose={verbose} />
            ))}
          </div>
        );
      })}
    </div>
  );
}

/** Why placements failed, one line each, as Nomad's formatAllocMetrics. */
export function metricLines(m: Metric): string[] {
  const out: string[] = [];
  if (m.NodesEvaluated === 0) out.push('No nodes were eligible for evaluation');
  for (const [dc, n] of Object.entries(m.NodesAvailable ?? {})) if (n === 0) out.push(`No nodes are available in datacenter ${quote(dc)}`);
  for (const [cls, n] of Object.entries(m.ClassFiltered ?? {})) out.push(`Class ${quote(cls)}: ${n} nodes excluded by filter`);
  for (const [c, n] of Object.entries(m.ConstraintFiltered ?? {})) out.push(`Constraint ${quote(c)}: ${n} nodes excluded by filter`);
  if (m.NodesExhausted > 0) out.push(`Resources exhausted on ${m.NodesExhausted} nodes`);
  for (const [cls, n] of Object.entries(m.ClassExhausted ?? {})) out.push(`Class ${quote(cls)} exhausted on ${n} nodes`);
  for (const [dim, n] of Object.entries(m.DimensionExhausted ?? {})) out.push(`Dimension ${quote(dim)} exhausted on ${n} nodes`);
  for (const q of m.QuotaExhausted ?? []) out.push(`Quota limit hit ${quote(q)}`);
  return out;
}

/** The scheduler's dry run: failures per group, then where each allocation would be placed and what would stop. */
export function DryRun({ plan, jobType }: { plan: Plan; jobType: string }) {
  const failed = Object.entries(plan.FailedTGAllocs ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  const next = plan.NextPeriodicLaunch && !plan.NextPeriodicLaunch.startsWith('0001-') ? plan.NextPeriodicLaunch : undefined;
  return (
    <div class="dry-run" data-dry-run={failed.length ? 'failed' : 'ok'}>
      {failed.length === 0 ? (
        <p class="good-text">All tasks successfully allocated.</p>
      ) : (
        <>
          <p class="bad-text" role="alert">
            {jobType === 'system' ? 'WARNING: Failed to place allocations on all nodes.' : 'WARNING: Failed to place all allocations.'}
          </p>
          {failed.map(([group, m]) => {
            const n = m.CoalescedFailures + 1;
            return (
              <div data-failed-group={group} data-failed={n}>
                <p>
                  Task Group {quote(group)} (failed to place {n} allocation{n === 1 ? '' : 's'}):
                </p>
                <ul>
                  {metricLines(m).map((l) => (
                    <li>{l}</li>
                  ))}
                </ul>
              </div>
            );
          })}
        </>
      )}
      {plan.BerthPlacements?.length || plan.BerthStops?.length ? (
        <ul class="placements" aria-label="Placements">
          {(plan.BerthPlacements ?? []).map((p) => (
            <li data-placement={p.Name}>
              Place {p.Name || `${p.Group}[${p.Index}]`} on node {quote(p.NodeName || p.NodeID)} (<a href={`/ui/nodes/${encodeURIComponent(p.NodeID)}`}>{p.NodeID.slice(0, 8)}</a>)
            </li>
          ))}
          {(plan.BerthStops ?? []).map((s) => (
            <li data-stop={s.Name}>
              Stop {s.Name || s.AllocID.slice(0, 8)}: {s.Description}
            </li>
          ))}
        </ul>
      ) : null}
      {next ? <p>If submitted now, next periodic launch would be at {next}.</p> : null}
      {plan.Warnings ? <pre class="warnings">Job Warnings: {plan.Warnings}</pre> : null}
    </div>
  );
}
