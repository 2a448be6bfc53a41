// `berth eval list` and `berth eval status ID`: the scheduler's evaluations,
// why each ran and what came of it, with the placement failures of a
// blocked one (Nomad's command/eval_list.go and eval_status.go).

import { Command } from 'commander';
import type { Evaluation } from '../structs/index.js';
import { KINDS } from './api-client.js';
import { age, apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';

/** Builds `berth eval`. */
export function evalCommand(ctx: CommandContext): Command {
  const ev = new Command('eval').description('Inspect the scheduler\'s evaluations');
  apiCommand(
    ev
      .command('list')
      .description('List evaluations, newest first')
      .option('--job <id>', 'only the evaluations of this job')
      .option('--status <status>', 'only evaluations in this status: pending, complete, blocked, failed, canceled'),
    ['eval list', 'eval list --status blocked', 'eval list --job web --json'],
  ).action(apiAction(ctx, list));
  apiCommand(
    ev.command('status').description('Show one evaluation: trigger, status, placements and why some failed').argument('<id>', 'evaluation ID or a unique prefix'),
    ['eval status 3f2a9c1b', 'eval status 3f2a --json'],
  ).action(apiAction(ctx, status));
  return ev;
}

async function list(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const query: Record<string, string> = {};
  if (opts['status']) query['status'] = String(opts['status']);
  if (s.namespace !== 'default' || opts['job']) query['namespace'] = s.namespace;
  const { body } = await s.api.get<Evaluation[]>(KINDS.evaluation.listPath, query);
  const evals = body.filter((e) => !opts['job'] || e.jobId === opts['job']).sort((a, b) => b.createIndex - a.createIndex);
  if (s.out.json) return s.out.document(evals);
  if (evals.length === 0) return s.out.line('No evaluations');
  s.out.table(
    ['ID', 'Priority', 'Triggered By', 'Job ID', 'Status', 'Placement Failures', 'Created'],
    evals.map((e) => [shortId(e.id), String(e.priority), e.triggeredBy, e.jobId, s.style.status(e.status), String(Object.keys(e.failedPlacements ?? {}).length > 0), age(e.createTime)]),
  );
}

async function status(s: ApiSession, [idArg]: string[]): Promise<void> {
  const id = await s.api.resolve(KINDS.evaluation, idArg as string);
  const { body: e } = await s.api.get<Evaluation>(KINDS.evaluation.getPath(id));
  if (s.out.json) return s.out.document(e);
  s.out.fields([
    ['ID', e.id],
    ['Create Time', timestamp(e.createTime)],
    ['Modify Time', timestamp(e.modifyTime)],
    ['Status', s.style.status(e.status)],
    ['Status Description', e.statusDescription],
    ['Type', e.type],
    ['TriggeredBy', e.triggeredBy],
    ['Job ID', e.jobId],
    ['Namespace', e.namespace],
    ['Priority', String(e.priority)],
    ['Placed', String(e.placed)],
    ['Stopped', String(e.stopped)],
    ...(e.nodeId ? ([['Node ID', e.nodeId]] as const) : []),
    ...(e.previousEval ? ([['Previous Eval', e.previousEval]] as const) : []),
  ]);
  if (!(await printFailedPlacements(s, 'Failed Placements', e, true))) return;
  if (e.status === 'blocked') s.out.line(`\nEvaluation "${shortId(e.id)}" is blocked: it is retried when the cluster changes`);
}

/** `job status`'s evaluation sections: why the latest evaluation could not place (if so), and the latest evaluations. */
export async function printJobEvaluations(s: ApiSession, jobId: string): Promise<void> {
  const { body } = await s.api.get<Evaluation[]>(`/v1/job/${encodeURIComponent(jobId)}/evaluations`, { namespace: s.namespace });
  const evals = [...body].sort((a, b) => b.createIndex - a.createIndex);
  const latest = evals[0];
  if (!latest) return;
  await printFailedPlacements(s, 'Placement Failure', latest, false);
  s.out.line();
  s.out.line(s.style.bold('Latest Evaluations'));
  s.out.table(
    ['ID', 'Triggered By', 'Status', 'Placed', 'Stopped', 'Blocked Reason'],
    evals.slice(0, 3).map((e) => [shortId(e.id), e.triggeredBy, s.style.status(e.status), String(e.placed), String(e.stopped), e.status === 'blocked' ? e.blockedReason : '']),
  );
}

/** An evaluation's placement failures under `title`, one line per reason (Nomad's wording); false when it has none. */
async function printFailedPlacements(s: ApiSession, title: string, e: Evaluation, counts: boolean): Promise<boolean> {
  const failed = Object.entries(e.failedPlacements ?? {});
  if (failed.length === 0) return false;
  const { describePlacementFailure } = await import('../structs/index.js');
  s.out.line();
  s.out.line(s.style.bold(title));
  for (const [group, f] of failed) {
    s.out.line(`Task Group ${JSON.stringify(group)} (failed to place ${f.unplaced} allocation${f.unplaced === 1 ? '' : 's'}):`);
    for (const part of (describePlacementFailure(f) || 'no node fits').split('; ')) s.out.line(`  * ${part}`);
    const m = f.metrics;
    if (counts && m) s.out.line(`  Nodes evaluated: ${m.nodesEvaluated}, filtered: ${m.nodesFiltered}, exhausted: ${m.nodesExhausted}`);
  }
  return true;
}
