// A job diff and a scheduler dry run as Nomad's CLI prints them
// (command/job_plan.go: formatJobDiff, formatDryRun; command/monitor.go:
// formatAllocMetrics), from the API's JobDiff and JobPlanResponse. Used by
// `job plan` and `job history -p`. Pure, without colours.

import type * as api from '../api/index.js';

/** Nomad's marker for a diff type, and its length. */
function marker(type: string): [string, number] {
  switch (type) {
    case 'Added':
      return ['+ ', 2];
    case 'Deleted':
      return ['- ', 2];
    case 'Edited':
      return ['+/- ', 4];
    default:
      return ['', 0];
  }
}

const spaces = (n: number): string => ' '.repeat(Math.max(0, n));
const quote = (s: string): string => JSON.stringify(s);

function longestPrefixes(fields: readonly api.FieldDiff[], objects: readonly api.ObjectDiff[]): [number, number] {
  let field = 0;
  let mark = 0;
  for (const f of fields) {
    field = Math.max(field, f.Name.length);
    mark = Math.max(mark, marker(f.Type)[1]);
  }
  for (const o of objects) mark = Math.max(mark, marker(o.Type)[1]);
  return [field, mark];
}

function fieldLine(f: api.FieldDiff, start: number, keyPrefix: number, valuePrefix: number): string {
  let out = `${spaces(start)}${marker(f.Type)[0]}${spaces(keyPrefix)}${f.Name}: ${spaces(valuePrefix)}`;
  if (f.Type === 'Added') out += quote(f.New);
  else if (f.Type === 'Deleted') out += quote(f.Old);
  else if (f.Type === 'Edited') out += `${quote(f.Old)} => ${quote(f.New)}`;
  else out += quote(f.New);
  if (f.Annotations?.length) out += ` (${f.Annotations.join(', ')})`;
  return out;
}

function objectText(o: api.ObjectDiff, start: number, keyPrefix: number): string {
  const [mark, markLen] = marker(o.Type);
  const fields = o.Fields ?? [];
  const objects = o.Objects ?? [];
  const [longestField, longestMarker] = longestPrefixes(fields, objects);
  const body = aligned(fields, objects, start + keyPrefix + 2, longestField, longestMarker);
  return `${spaces(start)}${mark}${spaces(keyPrefix)}${o.Name} {\n${body}\n${spaces(start + markLen + keyPrefix)}}`;
}

function aligned(fields: readonly api.FieldDiff[], objects: readonly api.ObjectDiff[], start: number, longestField: number, longestMarker: number): string {
  const lines: string[] = [];
  for (const f of fields) lines.push(fieldLine(f, start, longestMarker - marker(f.Type)[1], longestField - f.Name.length));
  for (const o of objects) lines.push(objectText(o, start, longestMarker - marker(o.Type)[1]));
  return lines.join('\n');
}

function taskText(t: api.TaskDiff, start: number, taskPrefix: number, verbose: boolean): string {
  let out = `${spaces(start)}${marker(t.Type)[0]}${spaces(taskPrefix)}Task: ${quote(t.Name)}`;
  if (t.Annotations?.length) out += ` (${t.Annotations.join(', ')})`;
  if (t.Type === 'None' || ((t.Type === 'Deleted' || t.Type === 'Added') && !verbose)) return out;
  const fields = t.Fields ?? [];
  const objects = t.Objects ?? [];
  const [longestField, longestMarker] = longestPrefixes(fields, objects);
  return `${out}\n${aligned(fields, objects, start + 2, longestField, longestMarker)}`;
}

function groupText(g: api.TaskGroupDiff, prefix: number, verbose: boolean): string {
  let out = `${marker(g.Type)[0]}${spaces(prefix)}Task Group: ${quote(g.Name)}`;
  const updates = Object.entries(g.Updates ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  out += updates.length ? ` (${updates.map(([kind, n]) => `${n} ${kind}`).join(', ')})\n` : '\n';
  const fields = g.Fields ?? [];
  const objects = g.Objects ?? [];
  const tasks = g.Tasks ?? [];
  const [longestField, longestMarkerOwn] = longestPrefixes(fields, objects);
  const longestMarker = Math.max(longestMarkerOwn, ...tasks.map((t) => marker(t.Type)[1]));
  const sub = prefix + 2;
  if (g.Type === 'Edited' || verbose) {
    const fo = aligned(fields, objects, sub, longestField, longestMarker);
    if (fo) out += `${fo}\n`;
  }
  for (const t of tasks) out += `${taskText(t, sub, longestMarker - marker(t.Type)[1], verbose)}\n`;
  return out;
}

/** A job's diff as `nomad job plan` prints it (its lines, the last one empty). */
export function formatJobDiff(d: api.JobDiff, verbose = false): string {
  let out = `${marker(d.Type)[0]}Job: ${quote(d.ID)}\n`;
  const fields = d.Fields ?? [];
  const objects = d.Objects ?? [];
  const groups = d.TaskGroups ?? [];
  const [longestField, longestMarkerOwn] = longestPrefixes(fields, objects);
  const longestMarker = Math.max(longestMarkerOwn, ...groups.map((g) => marker(g.Type)[1]));
  if (d.Type === 'Edited' || verbose) {
    const fo = aligned(fields, objects, 0, longestField, longestMarker);
    if (fo) out += `${fo}\n`;
  }
  for (const g of groups) out += `${groupText(g, longestMarker - marker(g.Type)[1], verbose)}\n`;
  return out;
}

/** Why placements failed, one `* ...` line each, as Nomad's formatAllocMetrics. */
export function formatAllocMetrics(m: api.AllocationMetric, prefix: string): string[] {
  const out: string[] = [];
  if (m.NodesEvaluated === 0) out.push(`${prefix}* No nodes were eligible for evaluation`);
  for (const [dc, n] of Object.entries(m.NodesAvailable ?? {})) if (n === 0) out.push(`${prefix}* No nodes are available in datacenter ${quote(dc)}`);
  for (const [cls, n] of Object.entries(m.ClassFiltered ?? {})) out.push(`${prefix}* Class ${quote(cls)}: ${n} nodes excluded by filter`);
  for (const [c, n] of Object.entries(m.ConstraintFiltered ?? {})) out.push(`${prefix}* Constraint ${quote(c)}: ${n} nodes excluded by filter`);
  if (m.NodesExhausted > 0) out.push(`${prefix}* Resources exhausted on ${m.NodesExhausted} nodes`);
  for (const [cls, n] of Object.entries(m.ClassExhausted ?? {})) out.push(`${prefix}* Class ${quote(cls)} exhausted on ${n} nodes`);
  for (const [dim, n] of Object.entries(m.DimensionExhausted ?? {})) out.push(`${prefix}* Dimension ${quote(dim)} exhausted on ${n} nodes`);
  for (const q of m.QuotaExhausted ?? []) out.push(`${prefix}* Quota limit hit ${quote(q)}`);
  return out;
}

/** The scheduler dry run of a plan as Nomad prints it (Berth adds where it would place each allocation). */
export function formatDryRun(p: api.JobPlanResponse, jobType: string): string[] {
  const out: string[] = [];
  const failed = Object.entries(p.FailedTGAllocs ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));
  if (failed.length === 0) out.push('- All tasks successfully allocated.');
  else {
    out.push(jobType === 'system' ? '- WARNING: Failed to place allocations on all nodes.' : '- WARNING: Failed to place all allocations.');
    for (const [group, m] of failed) {
      const n = m.CoalescedFailures + 1;
      out.push(`  Task Group ${quote(group)} (failed to place ${n} allocation${n === 1 ? '' : 's'}):`);
      out.push(...formatAllocMetrics(m, '    '));
      out.push('');
    }
    while (out.at(-1) === '') out.pop();
  }
  for (const pl of p.BerthPlacements ?? []) out.push(`- Place ${pl.Name || `${pl.Group}[${pl.Index}]`} on node ${quote(pl.NodeName || pl.NodeID)} (${pl.NodeID.slice(0, 8)})`);
  for (const st of p.BerthStops ?? []) out.push(`- Stop ${st.Name || st.AllocID.slice(0, 8)}: ${st.Description}`);
  if (p.NextPeriodicLaunch && !p.NextPeriodicLaunch.startsWith('0001-')) out.push(`- If submitted now, next periodic launch would be at ${p.NextPeriodicLaunch}.`);
  return out;
}

/** `job plan`'s exit code as Nomad's: 1 when the scheduler would place, stop, migrate, replace or canary anything. */
export function planExitCode(p: api.JobPlanResponse): 0 | 1 {
  for (const d of Object.values(p.Annotations?.DesiredTGUpdates ?? {})) {
    if (d.Stop + d.Place + d.Migrate + d.DestructiveUpdate + d.Canary > 0) return 1;
  }
  return 0;
}
