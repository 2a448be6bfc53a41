// `berth job plan FILE`: what `job run` would do, without doing it (Nomad's
// command/job_plan.go), over PUT /v1/job/:id/plan: the job's diff against
// the running version with Nomad's +/-/+/- markers, the scheduler's dry run
// (why something cannot be placed; Berth adds where each allocation would
// go), and the Job Modify Index for `job run -check-index`. Exit codes as
// Nomad's: 0 no allocation change, 1 changes, 255 an error.

import type { Command } from 'commander';
import type * as api from '../api/index.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { describeFailure } from './exit-codes.js';
import { formatDryRun, formatJobDiff, planExitCode } from './job-diff-output.js';
import { fileJobJson, fileNamespace, readJobFile, sendJobFile, variableOptions } from './spec-file-input.js';

/** Nomad's plan exit codes. */
export const PLAN_EXIT = { NO_CHANGE: 0, CHANGES: 1, ERROR: 255 } as const;

/** Adds `plan` to `berth job`. */
export function addJobPlan(job: Command, ctx: CommandContext): void {
  apiCommand(
    variableOptions(
      job
        .command('plan')
        .description('Show what `job run` would change (diff, placements, failures) without changing anything; exit 0 no change, 1 changes, 255 error')
        .argument('<file>', 'job file: .hcl or .json, or - for stdin')
        .option('--diff', 'show the diff (default; --no-diff hides it)', true)
        .option('--no-diff', 'hide the diff')
        .option('--verbose', 'show the diff of added and removed groups and tasks in full')
        .option('--output', 'print the plan request JSON ({"Job": ..., "Diff": true}, what PUT /v1/job/:id/plan takes) instead of planning')
        .option('-t, --template <template>', 'format the plan (JobPlanResponse) with a Go template'),
    ),
    ['job plan web.hcl', 'job plan -json-output web.hcl', 'job plan web.hcl && echo unchanged', 'job plan -output web.hcl | curl -X PUT -H "X-Nomad-Token: $NOMAD_TOKEN" -d @- $NOMAD_ADDR/v1/job/web/plan'],
    { jsonInput: true },
  ).action(async (...params: unknown[]) => {
    try {
      await apiAction(ctx, (session, args, opts) => plan(ctx, session, args, opts))(...params);
    } catch (err) {
      // Nomad's plan exits 255 on any error, so 1 can mean "changes".
      const failure = describeFailure(err, ctx.state);
      for (const line of failure.lines) ctx.io.stderr(`${line}\n`);
      ctx.state.exitCode = PLAN_EXIT.ERROR;
    }
  });
}

async function plan(ctx: CommandContext, s: ApiSession, [file]: string[], opts: Record<string, unknown>): Promise<void> {
  const parsed = await readJobFile(file as string, opts);
  for (const note of parsed.notes) s.out.warn(`Warning: ${note}`);
  const namespace = fileNamespace(parsed, s);
  const job = await fileJobJson(parsed, namespace);
  if (opts['output']) {
    s.out.line(JSON.stringify({ Job: job, Diff: opts['diff'] !== false }, null, 4));
    return;
  }
  const { body } = await sendJobFile(parsed, job, () =>
    s.api.request<api.JobPlanResponse>('PUT', `/v1/job/${encodeURIComponent(parsed.job.id)}/plan`, { query: { namespace }, body: { Job: job, Diff: opts['diff'] !== false } }),
  );
  s.signal.throwIfAborted();
  if (s.out.json) s.out.document(body); // -json-output, or -t through the Output's template
  else for (const line of renderPlan(body, parsed.job.type, file === '-' ? '<stdin>' : (file as string), Boolean(opts['verbose']))) s.out.line(line);
  ctx.state.exitCode = planExitCode(body) === 1 ? PLAN_EXIT.CHANGES : PLAN_EXIT.NO_CHANGE;
}

/** The plan as Nomad's CLI prints it. Pure. */
export function renderPlan(p: api.JobPlanResponse, jobType: string, file: string, verbose: boolean): string[] {
  const out: string[] = [];
  if (p.Diff) out.push(formatJobDiff(p.Diff, verbose).trim(), '');
  out.push('Scheduler dry-run:', ...formatDryRun(p, jobType), '');
  if (p.Warnings) out.push('Job Warnings:', p.Warnings, '');
  out.push(`Job Modify Index: ${p.JobModifyIndex}`);
  out.push('To submit the job with version verification run:');
  out.push('');
  out.push(`berth job run -check-index ${p.JobModifyIndex} ${file}`);
  out.push('');
  out.push('When running the job with the check-index flag, the job will only be run if the');
  out.push('job modify index given matches the server-side version. If the index has');
  out.push("changed, another user has modified the job and the plan's results are");
  out.push('potentially invalid.');
  return out;
}
