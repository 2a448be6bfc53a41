// `berth job status` and `berth job inspect` in Nomad's layout
// (command/job_status.go, job_inspect.go): the job list (JobListStub), or
// one job's fields, its summary per group (GET /v1/job/:id/summary), its
// children when it launches them, why placements failed, and its
// allocations. `-json` and `-t` print what Nomad's do: for status, each
// job's summary, allocations, latest deployment and evaluations; for
// inspect, the job.

import type { Command } from 'commander';
import type * as api from '../api/index.js';
import { KINDS } from './api-client.js';
import { age, apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { printJobEvaluations } from './eval-command.js';
import { formatKV, msOfNanos, statusString, typeString } from './job-json.js';

/** One job in `job status -json`, as Nomad's JobJson. */
interface JobJson {
  Summary: api.JobSummary;
  Allocations: api.AllocationListStub[];
  LatestDeployment: api.Deployment | null;
  Evaluations: api.Evaluation[];
}

/** Adds `status` and `inspect` to `berth job`. */
export function addJobStatus(job: Command, ctx: CommandContext): void {
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);
  apiCommand(
    job
      .command('status')
      .description('List jobs, or show one job with its summary and allocations')
      .argument('[id]', 'job ID or a unique prefix')
      .option('--short', 'only the job, not its summary and allocations')
      .option('--verbose', 'full IDs, and every evaluation of the job')
      .option('--evals', 'every evaluation of the job, not only the last three')
      .option('--all-allocs', "also the allocations of the job's earlier instances (a job purged and run again)")
      .option('-t, --template <template>', "format Nomad's JSON with a Go template (as -json prints it)"),
    ['job status', 'job status writer', 'job status -verbose wri', 'job status -evals writer', 'job status -json writer', "job status -t '{{range .}}{{.Summary.JobID}}{{end}}'"],
  ).action(act(jobStatus));

  apiCommand(
    job
      .command('inspect')
      .description('Print a job as Nomad\'s API JSON ({"Job": ...}, what `job run -json` takes back)')
      .argument('<id>', 'job ID or a unique prefix')
      .option('-t, --template <template>', 'format the job with a Go template'),
    ['job inspect writer', 'job inspect writer > writer.json && berth job run -json writer.json', "job inspect -t '{{.Version}}' writer"],
  ).action(act(inspectJob));
}

async function jobJson(s: ApiSession, namespace: string, id: string): Promise<JobJson> {
  const path = KINDS.job.getPath(id);
  const q = { namespace };
  const [summary, allocations, deployment, evaluations] = await Promise.all([
    s.api.get<api.JobSummary>(`${path}/summary`, q),
    s.api.get<api.AllocationListStub[]>(`${path}/allocations`, q),
    s.api.get<api.Deployment | null>(`${path}/deployment`, q),
    s.api.get<api.Evaluation[]>(`${path}/evaluations`, q),
  ]);
  return { Summary: summary.body, Allocations: allocations.body, LatestDeployment: deployment.body, Evaluations: evaluations.body };
}

async function jobStatus(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  if (!idArg) {
    const { body: jobs } = await s.api.get<api.JobListStub[]>(KINDS.job.listPath, { namespace: s.namespace });
    // -json, or -t: the Output formats the document with the template.
    if (s.out.json) return s.out.document(await Promise.all(jobs.map((j) => jobJson(s, j.Namespace ?? s.namespace, j.ID))));
    if (jobs.length === 0) return s.out.line('No running jobs');
    const all = s.namespace === '*';
    s.out.table(
      ['ID', ...(all ? ['Namespace'] : []), 'Type', 'Priority', 'Status', 'Submit Date'],
      jobs.map((j) => [j.ID, ...(all ? [j.Namespace ?? ''] : []), typeString(j), String(j.Priority), s.style.status(statusString(j.Status, j.Stop)), timestamp(msOfNanos(j.SubmitTime))]),
    );
    return;
  }
  const id = await s.api.resolve(KINDS.job, idArg, { namespace: s.namespace });
  if (s.out.json) return s.out.document([await jobJson(s, s.namespace, id)]);
  const short = (x: string): string => (opts['verbose'] ? x : shortId(x));
  const { body: job } = await s.api.get<api.Job>(KINDS.job.getPath(id), { namespace: s.namespace });
  const periodic = job.Periodic !== null && job.Periodic !== undefined;
  const parameterized = job.ParameterizedJob !== null && job.ParameterizedJob !== undefined;
  for (const line of formatKV([
    ['ID', job.ID ?? id],
    ['Name', job.Name ?? id],
    ['Submit Date', timestamp(msOfNanos(job.SubmitTime ?? 0))],
    ['Type', job.Type ?? ''],
    ['Priority', String(job.Priority ?? 0)],
    ['Datacenters', (job.Datacenters ?? []).join(',')],
    ['Namespace', job.Namespace ?? ''],
    ['Status', s.style.status(statusString(job.Status ?? '', job.Stop))],
    ['Periodic', String(periodic)],
    ['Parameterized', String(parameterized)],
    // The job's `ui` block, as the web UI shows it.
    ...(job.UI?.Description ? [['Description', job.UI.Description.trim().split('\n')[0] ?? ''] as [string, string]] : []),
    ...(job.UI?.Links ?? []).map((l) => [`Link "${l.Label}"`, l.URL] as [string, string]),
  ]))
    s.out.line(line);
  if (opts['short']) return;

  const { body: summary } = await s.api.get<api.JobSummary>(`${KINDS.job.getPath(id)}/summary`, { namespace: s.namespace });
  if (periodic || parameterized) return printChildren(s, id, summary, parameterized);
  s.out.line();
  s.out.line(s.style.bold('Summary'));
  s.out.table(
    ['Task Group', 'Queued', 'Starting', 'Running', 'Failed', 'Complete', 'Lost'],
    Object.entries(summary.Summary ?? {})
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([g, c]) => [g, String(c.Queued), String(c.Starting), String(c.Running), String(c.Failed), String(c.Complete), String(c.Lost)]),
  );
  await printJobEvaluations(s, id, { all: Boolean(opts['evals'] || opts['verbose']), fullIds: Boolean(opts['verbose']) });
  const { body: allocs } = await s.api.get<api.AllocationListStub[]>(`${KINDS.job.getPath(id)}/allocations`, { namespace: s.namespace, ...(opts['allAllocs'] ? { all: true } : {}) });
  s.out.line();
  s.out.line(s.style.bold('Allocations'));
  if (allocs.length === 0) return s.out.line('No allocations placed');
  s.out.table(
    ['ID', 'Node ID', 'Task Group', 'Version', 'Desired', 'Status', 'Created', 'Modified'],
    [...allocs]
      .sort((a, b) => b.CreateIndex - a.CreateIndex)
      .map((a) => [short(a.ID), short(a.NodeID), a.TaskGroup, String(a.JobVersion), a.DesiredStatus, s.style.status(a.ClientStatus), age(msOfNanos(a.CreateTime)), age(msOfNanos(a.ModifyTime))]),
  );
}

/** A periodic or parameterized job's children, as Nomad lists them under its summary. */
async function printChildren(s: ApiSession, id: string, summary: api.JobSummary, parameterized: boolean): Promise<void> {
  const c = summary.Children ?? { Pending: 0, Running: 0, Dead: 0 };
  s.out.line();
  s.out.line(s.style.bold('Children Job Summary'));
  s.out.table(['Pending', 'Running', 'Dead'], [[String(c.Pending), String(c.Running), String(c.Dead)]]);
  const { body: jobs } = await s.api.get<api.JobListStub[]>(KINDS.job.listPath, { namespace: s.namespace, prefix: `${id}/` });
  const children = jobs.filter((j) => j.ParentID === id).sort((a, b) => b.SubmitTime - a.SubmitTime);
  s.out.line();
  s.out.line(s.style.bold(parameterized ? 'Dispatched Jobs' : 'Previously Launched Jobs'));
  if (children.length === 0) return s.out.line(parameterized ? 'No dispatched instances of parameterized job found' : 'No instances of periodic job found');
  if (parameterized) s.out.table(['ID', 'Status'], children.map((j) => [j.ID, s.style.status(statusString(j.Status, j.Stop))]));
  else s.out.table(['ID', 'Launch Time', 'Status'], children.map((j) => [j.ID, timestamp(msOfNanos(j.SubmitTime)), s.style.status(statusString(j.Status, j.Stop))]));
}

async function inspectJob(s: ApiSession, [idArg]: string[]): Promise<void> {
  const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  const { body: job } = await s.api.get<api.Job>(KINDS.job.getPath(id), { namespace: s.namespace });
  if (s.out.json) return s.out.document(job);
  // Nomad prints the body `job run -json` (and PUT /v1/jobs) takes back, with its four-space indent.
  s.out.line(JSON.stringify({ Job: job }, null, 4));
}
