// `berth job`: run, stop and validate jobs from HCL or JSON files, sent as
// Nomad's Job JSON (PUT /v1/jobs, /v1/validate/job). `job run` follows the
// evaluation and each allocation with blocking queries (job-run-monitor.ts),
// until every allocation runs (or completes, for batch jobs), or one fails,
// is lost with no replacement, or cannot be placed. `job status` and `job
// inspect` are in job-status-command.ts.

import { Command } from 'commander';
import type * as api from '../api/index.js';
import type * as Structs from '../structs/index.js';
import { ApiClientError, KINDS } from './api-client.js';
import { apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { addJobVersionCommands as addJobPromote, monitorDeployment } from './deployment-command.js';
import { addJobInit } from './init-command.js';
import { addJobAllocsCommands } from './job-allocs-commands.js';
import { addJobLaunchCommands } from './job-launch-commands.js';
import { addJobPlan } from './job-plan-command.js';
import { addJobRestart } from './job-restart-command.js';
import { addJobStatus } from './job-status-command.js';
import { addJobVersionCommands } from './job-version-commands.js';
import { MonitorFailure, monitorRun, settledEvaluation } from './job-run-monitor.js';
import { fileJobJson, fileNamespace, loadStructs, locatedProblems, readJobFile, sendJobFile, specFileName, variableOptions } from './spec-file-input.js';
import { UsageError } from './usage-error.js';

/** Builds `berth job`. */
export function jobCommand(ctx: CommandContext): Command {
  const job = new Command('job').description('Run, inspect and stop jobs');
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);

  apiCommand(
    variableOptions(
      job
        .command('run')
        .description('Submit a job file (HCL or JSON) and follow its evaluation and allocations until they run')
        .argument('<file>', "job file: .hcl (as Nomad users write them), .json (Berth's or Nomad's API form), or - for stdin")
        .option('--detach', 'print the evaluation ID and return at once (do not follow the allocations or the deployment)')
        .option('--check-index <index>', 'run only if the job modify index is still this (from `job plan`; 0: the job must not exist yet)')
        .option('--output', 'print the registration JSON ({"Job": ...}, what PUT /v1/jobs takes) instead of running the job'),
    ),
    ['job run examples/writer.hcl', 'job run --detach examples/hostpath-plugin.hcl', 'job run -json job.json', 'job run -output web.hcl | curl -X PUT -d @- $NOMAD_ADDR/v1/jobs', 'job run --var image=redis:7 --var-file prod.hcl web.hcl'],
    { jsonInput: true },
  ).action(act(runJob));

  addJobStatus(job, ctx);
  addJobAllocsCommands(job, ctx);

  apiCommand(
    job
      .command('stop')
      .description('Stop a job: its allocations are told to stop and their volume claims released')
      .argument('<id>', 'job ID or a unique prefix')
      .option('--purge', 'also forget the job once its allocations are gone'),
    ['job stop writer', 'job stop --purge writer'],
  ).action(act(stopJob));

  apiCommand(
    variableOptions(
      job
        .command('validate')
        .description('Check a job file locally (syntax and schema, with file:line:col) and against the agent (known volumes and plugins)')
        .argument('<file>', 'job file: .hcl or .json, or - for stdin'),
    ),
    ['job validate examples/reader.hcl', 'job validate --var count=3 web.hcl', 'job validate -json - < job.json'],
    { jsonInput: true },
  ).action(act(validateJob));

  addJobInit(job, ctx);
  addJobPlan(job, ctx);
  addJobLaunchCommands(job, ctx);
  addJobVersionCommands(job, ctx);
  addJobPromote(job, ctx);
  addJobRestart(job, ctx);
  return job;
}

async function runJob(s: ApiSession, [file]: string[], opts: Record<string, unknown>): Promise<void> {
  const parsed = await readJobFile(file as string, opts);
  for (const note of parsed.notes) s.out.warn(`Warning: ${note}`);
  const namespace = fileNamespace(parsed, s);
  const job = await fileJobJson(parsed, namespace);
  // Nomad's -output: the body a user pipes to curl, with Nomad's four-space indent.
  if (opts['output']) return s.out.line(JSON.stringify({ Job: job }, null, 4));
  const jobId = parsed.job.id;
  // What the cluster holds before this submission: a submission whose answer is lost (the
  // leader died) is then known to have landed by a newer job modify index, and is not sent twice.
  const before = await registeredJob(s, namespace, jobId);
  const register = (): ReturnType<typeof s.api.request<api.JobRegisterResponse>> => s.api.request<api.JobRegisterResponse>('PUT', '/v1/jobs', {
    query: { namespace },
    body: { Job: job, ...checkIndexOption(opts) },
    verify: async () => {
      const now = await registeredJob(s, namespace, jobId);
      if (!now || (now.JobModifyIndex ?? 0) <= (before?.JobModifyIndex ?? 0)) {
        s.out.warn(`note: the earlier submission of job "${jobId}" did not land (its answer was lost); submitting it again`);
        return undefined;
      }
      const index = now.JobModifyIndex ?? 0;
      s.out.warn(`note: the earlier submission of job "${jobId}" landed (job modify index ${index}, version ${now.Version ?? 0}) though its answer was lost; not submitting it again`);
      const evals = (await s.api.get<api.Evaluation[]>(`${KINDS.job.getPath(jobId)}/evaluations`, { namespace })).body;
      const evaluation = evals.filter((e) => e.CreateIndex >= index).sort((a, b) => a.CreateIndex - b.CreateIndex)[0] ?? evals.at(-1);
      const answer: api.JobRegisterResponse = { EvalID: evaluation?.ID ?? '', EvalCreateIndex: evaluation?.CreateIndex ?? 0, JobModifyIndex: index, Warnings: '', Index: index, LastContact: 0, KnownLeader: true, NextToken: '' };
      return { body: answer, index, landed: true };
    },
  });
  const { body, landed } = await sendJobFile(parsed, job, register);
  if (body.Warnings) s.out.warn(`Job Warnings:\n${body.Warnings}`);
  if (landed && !s.out.json) s.out.line(`Job "${jobId}" was registered by the earlier attempt (job modify index ${body.JobModifyIndex})`);
  if (parsed.job.periodic || parsed.job.parameterized) return launcherRegistered(s, parsed.job, body.EvalID);
  if (opts['detach']) {
    if (s.out.json) s.out.document({ evalId: body.EvalID, jobId });
    else {
      s.out.line(`Job registration successful`);
      s.out.line(`Evaluation ID: ${body.EvalID}`);
    }
    return;
  }
  // The version this registration made (a deployment and in-place updates are told apart by it).
  const version = (await registeredJob(s, namespace, jobId))?.Version ?? 0;
  const target = { id: jobId, type: parsed.job.type, version, namespace };
  // A rolling update (the job's groups have an update block): follow its deployment instead,
  // once the scheduler ran the evaluation (it makes the deployment).
  const { rolls } = await loadStructs();
  const deploys = parsed.job.type === 'service' && parsed.job.groups.some((g) => rolls(g.update));
  const rollout = deploys ? (await settledEvaluation(s, body.EvalID), await monitorDeployment(s, target)) : undefined;
  if (rollout) {
    if (s.out.json) s.out.document({ ok: rollout.ok, reason: rollout.reason, jobId, evalId: body.EvalID, deployment: rollout.deployment });
    if (!rollout.ok) throw new MonitorFailure(`deployment ${shortId(rollout.deployment.ID)} ${rollout.deployment.Status}: ${rollout.reason}`);
    return;
  }
  const result = await monitorRun(s, await loadStructs(), target, body.EvalID, body.Index);
  if (s.out.json) s.out.document(result);
  if (!result.ok) throw new MonitorFailure(result.reason);
}

/** `--check-index N` as the registration's EnforceIndex and JobModifyIndex; a usage error unless N is a whole number. */
function checkIndexOption(opts: Record<string, unknown>): { EnforceIndex?: boolean; JobModifyIndex?: number } {
  const raw = opts['checkIndex'];
  if (raw === undefined) return {};
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) throw new UsageError(`--check-index takes a job modify index (a whole number, as \`job plan\` prints it), not "${String(raw)}"`);
  return { EnforceIndex: true, JobModifyIndex: Number(raw) };
}

/** A periodic or parameterized job runs nothing itself: say so, and when it launches next (as Nomad's job run does). */
async function launcherRegistered(s: ApiSession, job: Structs.JobSpec, evalId: string): Promise<void> {
  const { nextLaunch } = await loadStructs();
  const p = job.periodic;
  const next = p?.enabled ? nextLaunch([...(p.cron ? [p.cron] : []), ...(p.crons ?? [])], p.timeZone, Date.now()) : undefined;
  if (s.out.json) return s.out.document({ jobId: job.id, evalId, ...(next !== undefined ? { nextLaunch: new Date(next).toISOString() } : {}) });
  s.out.line('Job registration successful');
  if (p) s.out.line(next !== undefined ? `Approximate next launch time: ${timestamp(next)} (${p.timeZone})` : 'No launch is scheduled (the periodic block is disabled, or its schedule has no future time)');
  else s.out.line(`Job "${job.id}" is parameterized: launch it with \`berth job dispatch ${job.id}\``);
}

/** The job as the cluster holds it now, or undefined when it has none by that ID. */
async function registeredJob(s: ApiSession, namespace: string, jobId: string): Promise<api.Job | undefined> {
  try {
    return (await s.api.get<api.Job>(KINDS.job.getPath(jobId), { namespace })).body;
  } catch (err) {
    if (err instanceof ApiClientError && err.code === 'NOT_FOUND') return undefined;
    throw err;
  }
}

async function stopJob(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  const { body } = await s.api.request<api.JobDeregisterResponse>('DELETE', KINDS.job.getPath(id), {
    query: { namespace: s.namespace, ...(opts['purge'] ? { purge: true } : {}) },
  });
  if (s.out.json) return s.out.document({ jobId: id, evalId: body.EvalID, purged: Boolean(opts['purge']) });
  s.out.line(`==> Job "${id}" ${opts['purge'] ? 'stopped and purged' : 'stopped'}`);
  s.out.line(`    Evaluation ID: ${body.EvalID}`);
}

async function validateJob(s: ApiSession, [file]: string[], opts: Record<string, unknown>): Promise<void> {
  const parsed = await readJobFile(file as string, opts);
  for (const note of parsed.notes) s.out.warn(`Warning: ${note}`);
  const namespace = fileNamespace(parsed, s);
  const job = await fileJobJson(parsed, namespace);
  const { body } = await s.api.request<api.JobValidateResponse>('PUT', '/v1/validate/job', { query: { namespace }, body: { Job: job } });
  if (body.ValidationErrors?.length) {
    // Each error is `<Nomad path>: <message>` (or a message alone): shown at its place in the file.
    const problems = body.ValidationErrors.map((e) => /^(Job\.[^:\s]*): (.*)$/s.exec(e)).map((m, i) => (m ? { path: m[1] as string, message: m[2] as string } : { path: '', message: body.ValidationErrors?.[i] ?? '' }));
    throw await locatedProblems(parsed, job, new ApiClientError('INVALID', `job validation errors: ${body.ValidationErrors.join('; ')}`, 400, { problems }));
  }
  const warnings = await driverWarnings(s, parsed.job);
  for (const w of warnings) s.out.warn(`Warning: ${w}`);
  if (s.out.json) return s.out.document({ valid: true, job: parsed.job.id, format: parsed.format, warnings: [...parsed.notes, ...warnings] });
  s.out.line(`Job validation successful: ${specFileName(file as string)} (job "${parsed.job.id}", ${parsed.job.groups.length} group${parsed.job.groups.length === 1 ? '' : 's'})`);
}

/**
 * A warning for each driver of the job that no ready node has healthy (the
 * job would block), naming the drivers the nodes do have, as Nomad's
 * placement failure would say later.
 */
async function driverWarnings(s: ApiSession, job: Structs.JobSpec): Promise<string[]> {
  const { body: nodes } = await s.api.get<api.NodeListStub[]>(KINDS.node.listPath);
  const ready = nodes.filter((n) => n.Status === 'ready');
  const healthy = (n: api.NodeListStub, d: string): boolean => Boolean(n.Drivers?.[d]?.Detected && n.Drivers[d]?.Healthy);
  const wanted = [...new Set(job.groups.flatMap((g) => g.tasks.map((t) => t.driver)))];
  const have = [...new Set(ready.flatMap((n) => Object.keys(n.Drivers ?? {}).filter((d) => healthy(n, d))))].sort();
  return wanted
    .filter((d) => !ready.some((n) => healthy(n, d)))
    .map((d) =>
      ready.length
        ? `no ready node can run driver "${d}" (the nodes' healthy drivers: ${have.join(', ') || 'none'}); the job would not be placed`
        : `no node is ready, so nothing can run driver "${d}" yet`,
    );
}
