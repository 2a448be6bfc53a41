// `berth job allocs`, `job deployments` and `job eval`: one job's
// allocations, its deployments, and a new evaluation of it, laid out as
// Nomad's command/job_allocs.go, job_deployments.go and job_eval.go.

import type { Command } from 'commander';
import type * as api from '../api/index.js';
import { KINDS } from './api-client.js';
import { age, apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { printDeploymentList } from './deployment-command.js';
import { msOfNanos } from './job-json.js';
import { MonitorFailure, monitorRun } from './job-run-monitor.js';

/** Adds `allocs`, `deployments` and `eval` to `berth job`. */
export function addJobAllocsCommands(job: Command, ctx: CommandContext): void {
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);
  apiCommand(
    job
      .command('allocs')
      .description("List a job's allocations, newest first")
      .argument('<id>', 'job ID or a unique prefix')
      .option('--all', "also the allocations of the job's earlier instances (a job purged and run again)")
      .option('--verbose', 'full IDs, the evaluation and node name, exact times')
      .option('-t, --template <template>', "format Nomad's JSON with a Go template (as -json prints it)"),
    ['job allocs web', 'job allocs -verbose web', 'job allocs -json web', "job allocs -t '{{range .}}{{.ID}} {{.ClientStatus}}{{println}}{{end}}' web"],
  ).action(act(allocs));

  apiCommand(
    job
      .command('deployments')
      .description("List a job's deployments, newest first")
      .argument('<id>', 'job ID or a unique prefix')
      .option('--latest', 'only the latest deployment')
      .option('--all', "also the deployments of the job's earlier instances (a job purged and run again)")
      .option('--verbose', 'full IDs')
      .option('-t, --template <template>', "format Nomad's JSON with a Go template (as -json prints it)"),
    ['job deployments web', 'job deployments -latest web', 'job deployments -json web'],
  ).action(act(deployments));

  apiCommand(
    job
      .command('eval')
      .description('Evaluate a job again now (the scheduler reconsiders it), and follow the evaluation as `job run` does')
      .argument('<id>', 'job ID or a unique prefix')
      .option('--force-reschedule', "reschedule the job's failed allocations now, whatever their reschedule policy's attempts and delay")
      .option('--detach', 'print the evaluation ID and return at once')
      .option('--verbose', 'full IDs'),
    ['job eval web', 'job eval -force-reschedule web', 'job eval -detach web'],
  ).action(act(evaluate));
}

async function allocs(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  const { body } = await s.api.get<api.AllocationListStub[]>(`${KINDS.job.getPath(id)}/allocations`, { namespace: s.namespace, ...(opts['all'] ? { all: true } : {}) });
  const list = [...body].sort((a, b) => b.CreateIndex - a.CreateIndex);
  if (s.out.json) return s.out.document(list);
  if (list.length === 0) return s.out.line('No allocations placed');
  if (opts['verbose']) {
    s.out.table(
      ['ID', 'Eval ID', 'Node ID', 'Node Name', 'Task Group', 'Version', 'Desired', 'Status', 'Created', 'Modified'],
      list.map((a) => [a.ID, a.EvalID, a.NodeID, a.NodeName, a.TaskGroup, String(a.JobVersion), a.DesiredStatus, s.style.status(a.ClientStatus), timestamp(msOfNanos(a.CreateTime)), timestamp(msOfNanos(a.ModifyTime))]),
    );
    return;
  }
  s.out.table(
    ['ID', 'Node ID', 'Task Group', 'Version', 'Desired', 'Status', 'Created', 'Modified'],
    list.map((a) => [shortId(a.ID), shortId(a.NodeID), a.TaskGroup, String(a.JobVersion), a.DesiredStatus, s.style.status(a.ClientStatus), age(msOfNanos(a.CreateTime)), age(msOfNanos(a.ModifyTime))]),
  );
}

async function deployments(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  if (opts['latest']) {
    const { body } = await s.api.get<api.Deployment | null>(`${KINDS.job.getPath(id)}/deployment`, { namespace: s.namespace });
    if (s.out.json) return s.out.document(body);
    if (!body) return s.out.line(`Job "${id}" has no deployment`);
    return printDeploymentList(s, [body], Boolean(opts['verbose']));
  }
  const { body } = await s.api.get<api.Deployment[]>(`${KINDS.job.getPath(id)}/deployments`, { namespace: s.namespace, ...(opts['all'] ? { all: true } : {}) });
  const list = [...body].sort((a, b) => b.CreateIndex - a.CreateIndex);
  if (s.out.json) return s.out.document(list);
  if (list.length === 0) return s.out.line(`Job "${id}" has no deployments`);
  printDeploymentList(s, list, Boolean(opts['verbose']));
}

async function evaluate(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  const request: api.JobEvaluateRequest = { JobID: id, EvalOptions: { ForceReschedule: Boolean(opts['forceReschedule']) } };
  const { body } = await s.api.request<api.JobRegisterResponse>('PUT', `${KINDS.job.getPath(id)}/evaluate`, { body: request, query: { namespace: s.namespace } });
  const evalId = opts['verbose'] ? body.EvalID : shortId(body.EvalID);
  if (opts['detach']) {
    if (s.out.json) return s.out.document({ EvalID: body.EvalID });
    return s.out.line(`Created eval ID: "${evalId}"`);
  }
  const { body: job } = await s.api.get<api.Job>(KINDS.job.getPath(id), { namespace: s.namespace });
  const structs = await import('../structs/index.js');
  const target = { id, namespace: job.Namespace ?? s.namespace, type: job.Type ?? 'service', version: job.Version ?? 0 };
  const result = await monitorRun(s, structs, target, body.EvalID, body.EvalCreateIndex);
  if (s.out.json) s.out.document(result);
  if (!result.ok) throw new MonitorFailure(result.reason);
}
