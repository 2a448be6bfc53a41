// `berth job plan FILE`: what `job run` would do, without doing it (Nomad's
// command/job_plan.go): the job's diff against the running version with
// Nomad's +/-/~ markers, the scheduler's dry run (placements, stops, and
// why something cannot be placed), and the Job Modify Index for
// `job run -check-index`. Exit codes as Nomad's: 0 no change, 1 changes,
// 255 an error.

import type { Command } from 'commander';
import type { FieldDiff, JobPlan, ObjectDiff } from '../structs/index.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { describeFailure } from './exit-codes.js';
import type { loadStructs, readJobFile, variableOptions } from './job-command.js';

/** Nomad's plan exit codes. */
export const PLAN_EXIT = { NO_CHANGE: 0, CHANGES: 1, ERROR: 255 } as const;

/** What `plan` shares with `job run` (passed in: job-command.ts registers this file). */
export interface JobFileTools {
  readJobFile: typeof readJobFile;
  loadStructs: typeof loadStructs;
  variableOptions: typeof variableOptions;
}

/** Adds `plan` to `berth job`. */
export function addJobPlan(job: Command, ctx: CommandContext, tools: JobFileTools): void {
  const { variableOptions } = tools;
  apiCommand(
    variableOptions(
      job
        .command('plan')
        .description('Show what `job run` would change (diff, placements, failures) without changing anything; exit 0 no change, 1 changes, 255 error')
        .argument('<file>', 'job file: .hcl or .json, or - for stdin')
        .option('--diff', 'show the diff (default; --no-diff hides it)', true)
        .option('--no-diff', 'hide the diff'),
    ),
    ['job plan web.hcl', 'job plan web.hcl --json', 'job plan web.hcl && echo unchanged'],
  ).action(async (...params: unknown[]) => {
    try {
      await apiAction(ctx, (session, args, opts) => plan(ctx, tools, session, args, opts))(...params);
    } catch (err) {
      // Nomad's plan exits 255 on any error, so 1 can mean "changes".
      const failure = describeFailure(err, ctx.state);
      for (const line of failure.lines) ctx.io.stderr(`${line}\n`);
      ctx.state.exitCode = PLAN_EXIT.ERROR;
    }
  });
}

async function plan(ctx: CommandContext, tools: JobFileTools, s: ApiSession, [file]: string[], opts: Record<string, unknown>): Promise<void> {
  const parsed = await tools.readJobFile(file as string, opts);
  for (const note of parsed.notes) s.out.warn(`Warning: ${note}`);
  const id = String((parsed.input as { id?: unknown }).id ?? '');
  const { body } = await s.api.request<JobPlan>('PUT', `/v1/job/${encodeURIComponent(id)}/plan`, {
    query: { namespace: s.namespace },
    body: { job: { namespace: s.namespace, ...parsed.input } },
  });
  s.signal.throwIfAborted();
  if (s.out.json) s.out.document(body);
  else {
    const { describePlacementFailure } = await tools.loadStructs();
    for (const line of renderPlan(body, file === '-' ? '<stdin>' : (file as string), opts['diff'] !== false, describePlacementFailure)) s.out.line(line);
  }
  ctx.state.exitCode = body.changes ? PLAN_EXIT.CHANGES : PLAN_EXIT.NO_CHANGE;
}

const MARK: Record<string, string> = { Added: '+', Deleted: '-', Edited: '+/-', None: '' };

function fieldLine(f: FieldDiff, indent: string): string {
  const mark = MARK[f.type] ?? '';
  if (f.type === 'Added') return `${indent}${mark} ${f.name}: ${JSON.stringify(f.new)}`;
  if (f.type === 'Deleted') return `${indent}${mark} ${f.name}: ${JSON.stringify(f.old)}`;
  return `${indent}${mark} ${f.name}: ${JSON.stringify(f.old)} => ${JSON.stringify(f.new)}`;
}

function objectLines(o: ObjectDiff, indent: string): string[] {
  const out = [`${indent}${MARK[o.type] ?? ''} ${o.name} {`];
  for (const f of o.fields) out.push(fieldLine(f, `${indent}  `));
  for (const c of o.objects) out.push(...objectLines(c, `${indent}  `));
  out.push(`${indent}  }`);
  return out;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The plan as Nomad's CLI prints it. Pure. */
export function renderPlan(p: JobPlan, file: string, showDiff: boolean, describe: (f: JobPlan['failedPlacements'][string]) => string): string[] {
  const out: string[] = [];
  if (showDiff) {
    const d = p.diff;
    out.push(`${d.type === 'None' ? '' : `${MARK[d.type]} `}Job: ${JSON.stringify(d.name)}`);
    for (const f of d.fields) out.push(fieldLine(f, ''));
    for (const o of d.objects) out.push(...objectLines(o, ''));
    for (const g of d.groups) {
      const updates = Object.entries(g.updates).map(([what, n]) => `${n} ${what}`);
      out.push(`${g.type === 'None' ? '' : `${MARK[g.type]} `}Task Group: ${JSON.stringify(g.name)}${updates.length ? ` (${updates.join(', ')})` : ''}`);
      for (const f of g.fields) out.push(fieldLine(f, '  '));
      for (const o of g.objects) out.push(...objectLines(o, '  '));
      for (const t of g.tasks) {
        out.push(`  ${t.type === 'None' ? '   ' : `${MARK[t.type]} `}Task: ${JSON.stringify(t.name)}`);
        for (const f of t.fields) out.push(fieldLine(f, '    '));
        for (const o of t.objects) out.push(...objectLines(o, '    '));
      }
    }
    out.push('');
  }
  out.push('Scheduler dry-run:');
  const failed = Object.entries(p.failedPlacements ?? {});
  if (failed.length === 0) out.push('- All tasks successfully allocated.');
  else {
    out.push('- WARNING: Failed to place all allocations.');
    for (const [group, f] of failed) {
      out.push(`  Task Group ${JSON.stringify(group)} (failed to place ${plural(f.unplaced, 'allocation')}):`);
      for (const part of (describe(f) || 'no node fits').split('; ')) out.push(`    * ${part}`);
    }
  }
  for (const pl of p.placements) out.push(`- Place ${pl.name || `${pl.group}[${pl.index}]`} on node ${JSON.stringify(pl.nodeName || pl.nodeId)} (${pl.nodeId.slice(0, 8)})`);
  for (const st of p.stops) out.push(`- Stop ${st.name || st.allocId.slice(0, 8)}: ${st.description}`);
  if (p.inPlaceUpdates) out.push(`- Update ${plural(p.inPlaceUpdates, 'allocation')} in place (new resources, no restart)`);
  out.push('');
  out.push(`Job Modify Index: ${p.jobModifyIndex}`);
  out.push('To submit the job with version verification run:');
  out.push('');
  out.push(`berth job run -check-index ${p.jobModifyIndex} ${file}`);
  out.push('');
  out.push('When running the job with the check-index flag, the job will only be run if the');
  out.push('job modify index given matches the server-side version. If the index has');
  out.push('changed, another user has modified the job and the plan\'s results are');
  out.push('potentially invalid.');
  return out;
}
