// `berth eval list` and `berth eval status ID`: the scheduler's evaluations,
// why each ran and what came of it, with the placement failures of a
// blocked one, laid out as Nomad's command/eval_list.go and eval_status.go.

import { Command } from 'commander';
import type { Evaluation, EvaluationStub } from '../api/index.js';
import { KINDS } from './api-client.js';
import { age, apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { failedGroups, failedPlacementLines } from './placement-failures.js';
import { UsageError } from './usage-error.js';

/** Builds `berth eval`. */
export function evalCommand(ctx: CommandContext): Command {
  const ev = new Command('eval').description("Inspect the scheduler's evaluations");
  apiCommand(
    ev
      .command('list')
      .description('List evaluations, newest first')
      .option('--job <id>', 'only the evaluations of this job')
      .option('--status <status>', 'only evaluations in this status: pending, complete, blocked, failed, canceled')
      .option('--filter <expression>', 'only evaluations the filter expression keeps (Nomad\'s, e.g. \'TriggeredBy == "node-update"\')')
      .option('--per-page <n>', 'at most this many evaluations (a page; the next page is named at the end)')
      .option('--page-token <token>', 'the page to start at, as the previous page named it')
      .option('--verbose', 'full IDs'),
    ['eval list', 'eval list --status blocked', 'eval list --job web --json', 'eval list --filter \'Status == "blocked"\''],
  ).action(apiAction(ctx, list));
  apiCommand(
    ev
      .command('status')
      .description('Show one evaluation: trigger, status, related evaluations and why placements failed')
      .argument('<id>', 'evaluation ID or a unique prefix')
      .option('--verbose', 'full IDs and exact times'),
    ['eval status 3f2a9c1b', 'eval status 3f2a --json'],
  ).action(apiAction(ctx, status));
  return ev;
}

/** Nomad's "Placement Failures" column: whether it failed to place, "N/A - In Progress" while blocked. */
function failureStatus(e: Evaluation): string {
  return e.Status === 'blocked' ? 'N/A - In Progress' : String(failedGroups(e).length > 0);
}

async function list(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const perPage = opts['perPage'] === undefined ? undefined : Number(opts['perPage']);
  if (perPage !== undefined && (!Number.isInteger(perPage) || perPage < 1)) throw new UsageError(`--per-page takes a whole number of at least 1, not "${String(opts['perPage'])}"`);
  const query: Record<string, string> = { namespace: s.namespace };
  for (const [flag, param] of [['job', 'job'], ['status', 'status'], ['filter', 'filter'], ['pageToken', 'next_token']] as const) {
    if (opts[flag] !== undefined) query[param] = String(opts[flag]);
  }
  if (perPage !== undefined) query['per_page'] = String(perPage);
  const { body, nextToken } = await s.api.get<Evaluation[]>(KINDS.evaluation.listPath, query);
  const evals = [...body].sort((a, b) => b.CreateIndex - a.CreateIndex);
  if (s.out.json) return s.out.document(evals);
  if (evals.length === 0) return s.out.line('No evals found');
  const id = opts['verbose'] ? (v: string) => v : shortId;
  s.out.table(
    ['ID', 'Priority', 'Triggered By', 'Job ID', 'Namespace', 'Node ID', 'Status', 'Placement Failures', 'Created'],
    evals.map((e) => [id(e.ID), String(e.Priority), e.TriggeredBy, e.JobID, e.Namespace, id(e.NodeID), s.style.status(e.Status), failureStatus(e), age(e.CreateTime / 1e6)]),
  );
  if (nextToken) s.out.line(`\nResults have been paginated. To get the next page, add --page-token ${nextToken}`);
}

async function status(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const verbose = Boolean(opts['verbose']);
  const id = await s.api.resolve(KINDS.evaluation, idArg as string, { namespace: '*' });
  const { body: e } = await s.api.get<Evaluation>(KINDS.evaluation.getPath(id), { related: 'true' });
  if (s.out.json) return s.out.document(e);
  const short = verbose ? (v: string) => v : shortId;
  const when = (ns: number): string => (verbose ? timestamp(ns / 1e6) : age(ns / 1e6));
  const trigger: Array<readonly [string, string]> = e.TriggeredBy === 'node-update' ? [['Node ID', short(e.NodeID)]] : [];
  const waitUntil = Date.parse(e.WaitUntil);
  s.out.fields([
    ['ID', short(e.ID)],
    ['Create Time', when(e.CreateTime)],
    ['Modify Time', when(e.ModifyTime)],
    ['Status', s.style.status(e.Status)],
    ['Status Description', e.StatusDescription || e.Status],
    ['Type', e.Type],
    ['TriggeredBy', e.TriggeredBy],
    ['Job ID', e.JobID],
    ['Namespace', e.Namespace],
    ...trigger,
    ['Priority', String(e.Priority)],
    ['Placement Failures', failureStatus(e)],
    ...(waitUntil > 0 ? ([['Wait Until', timestamp(waitUntil)]] as const) : []),
    ['Previous Eval', short(e.PreviousEval)],
    ['Next Eval', short(e.NextEval)],
    ['Blocked Eval', short(e.BlockedEval)],
  ]);
  if (e.RelatedEvals?.length) {
    s.out.line();
    s.out.line(s.style.bold('Related Evaluations'));
    s.out.table(['ID', 'Priority', 'Triggered By', 'Node ID', 'Status', 'Description'], e.RelatedEvals.map((r: EvaluationStub) => [short(r.ID), String(r.Priority), r.TriggeredBy, short(r.NodeID), r.Status, r.StatusDescription]));
  }
  if (failedGroups(e).length === 0) return;
  s.out.line();
  s.out.line(s.style.bold('Failed Placements'));
  for (const line of failedPlacementLines(e)) s.out.line(line);
  // Berth blocks the evaluation itself (Nomad makes a second, blocked one, named in BlockedEval).
  if (e.BlockedEval) s.out.line(`\nEvaluation "${short(e.BlockedEval)}" waiting for additional capacity to place remainder`);
  else if (e.Status === 'blocked') s.out.line(`\nEvaluation "${short(e.ID)}" is blocked: it is retried when the cluster changes`);
}

/**
 * `job status`'s evaluation sections: why the latest evaluation with
 * placement failures could not place, while one of the job's evaluations is
 * blocked (Nomad's "Placement Failure"), and the latest evaluations.
 */
export async function printJobEvaluations(s: ApiSession, jobId: string, opts: { all?: boolean; fullIds?: boolean } = {}): Promise<void> {
  const { body } = await s.api.get<Evaluation[]>(`/v1/job/${encodeURIComponent(jobId)}/evaluations`, { namespace: s.namespace });
  const evals = [...body].sort((a, b) => b.CreateIndex - a.CreateIndex);
  if (evals.length === 0) return;
  const failed = evals.find((e) => failedGroups(e).length > 0);
  if (failed && evals.some((e) => e.Status === 'blocked')) {
    s.out.line();
    s.out.line(s.style.bold('Placement Failure'));
    for (const line of failedPlacementLines(failed)) s.out.line(line);
  }
  s.out.line();
  // `-evals` (or `-verbose`): every evaluation of the job, as Nomad's "Evaluations"; otherwise the last three.
  s.out.line(s.style.bold(opts.all ? 'Evaluations' : 'Latest Evaluations'));
  s.out.table(
    ['ID', 'Priority', 'Triggered By', 'Status', 'Placement Failures'],
    (opts.all ? evals : evals.slice(0, 3)).map((e) => [opts.fullIds ? e.ID : shortId(e.ID), String(e.Priority), e.TriggeredBy, s.style.status(e.Status), failureStatus(e)]),
  );
}
