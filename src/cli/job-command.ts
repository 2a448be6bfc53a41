// `berth job`: run, status, stop and validate jobs from HCL or JSON files.
// `job run` follows the evaluation and each allocation with blocking queries
// (job-run-monitor.ts), until every allocation runs (or completes, for batch
// jobs), or one fails, is lost with no replacement, or cannot be placed.

import { open } from 'node:fs/promises';
import { Command } from 'commander';
import type * as SpecFiles from '../spec-files/index.js';
import type * as Structs from '../structs/index.js';
import type * as api from '../api/index.js';
import type { Evaluation, Job } from '../structs/index.js';
import { ApiClientError, KINDS } from './api-client.js';
import { age, apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { addJobVersionCommands, monitorDeployment } from './deployment-command.js';
import { addJobInit } from './init-command.js';
import { addJobLaunchCommands } from './job-launch-commands.js';
import { addJobPlan } from './job-plan-command.js';
import { addJobRestart } from './job-restart-command.js';
import { printJobEvaluations } from './eval-command.js';
import { MonitorFailure, monitorRun, settledEvaluation } from './job-run-monitor.js';
import { UsageError } from './usage-error.js';

/**
 * The spec parser (zod schemas, and HCL's WebAssembly once a file is HCL),
 * loaded by the commands that read files or follow a placement only: `job
 * status` and `job stop` talk to the API and need none of it.
 */
export const loadStructs = (): Promise<typeof Structs> => import('../structs/index.js');

/** The job and volume file readers (HCL's WebAssembly loads once a file is HCL). */
export const loadSpecFiles = (): Promise<typeof SpecFiles> => import('../spec-files/index.js');

/** The largest job or volume file read (structs' MAX_SPEC_FILE_BYTES, kept here so `job status` need not load structs). */
const MAX_SPEC_FILE_BYTES = 1024 * 1024;

/** How a file argument of `-` (standard input) is named in messages. */
export const STDIN_NAME = '<stdin>';

/** The name a spec file is given in messages: its path, or <stdin> for `-`. */
export const specFileName = (file: string): string => (file === '-' ? STDIN_NAME : file);

/** Reads standard input to its end, refusing more than MAX_SPEC_FILE_BYTES. */
async function readStdin(input: NodeJS.ReadableStream = process.stdin): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += buf.length;
    if (size > MAX_SPEC_FILE_BYTES) throw new UsageError(`standard input is too large: more than ${MAX_SPEC_FILE_BYTES} bytes; job and volume files are at most 1 MiB`);
    chunks.push(buf);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Reads a spec file of at most 1 MiB, or standard input for `-`; a missing
 * or larger file is a usage error (nothing was sent). Reads no more than the
 * limit and one byte, whatever the file's size.
 */
export async function readSpecFile(file: string): Promise<string> {
  if (file === '-') return readStdin();
  let text: string;
  try {
    const handle = await open(file, 'r');
    try {
      const buf = Buffer.alloc(MAX_SPEC_FILE_BYTES + 1);
      let got = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buf, got, buf.length - got, null);
        if (bytesRead === 0) break;
        got += bytesRead;
        if (got === buf.length) break;
      }
      if (got > MAX_SPEC_FILE_BYTES) {
        const size = (await handle.stat()).size;
        throw new UsageError(`${file} is too large: ${size} bytes; job and volume files are at most ${MAX_SPEC_FILE_BYTES} bytes (1 MiB)`);
      }
      text = buf.subarray(0, got).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const code = (err as { code?: string }).code;
    throw new UsageError(`cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : (code ?? String(err))}`);
  }
  return text;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** `--var` and `--var-file` (Nomad's -var, -var-file), on every command that reads a job file. */
export function variableOptions(cmd: Command): Command {
  return cmd
    .option('--var <name=value>', 'set a variable the job file declares (repeatable); wins over --var-file and NOMAD_VAR_*/BERTH_VAR_*', collect, [])
    .option('--var-file <file>', 'read variable values from an HCL (name = value) or JSON file (repeatable)', collect, []);
}

/** How the CLI evaluates a job file: --var, --var-file, the NOMAD_VAR_ and BERTH_VAR_ environment, file functions allowed (as Nomad's CLI). */
async function jobFileOptions(opts: Record<string, unknown>): Promise<SpecFiles.JobFileOptions> {
  const varFiles = await Promise.all(((opts['varFile'] as string[] | undefined) ?? []).map(async (file) => ({ file, text: await readSpecFile(file) })));
  return { vars: (opts['var'] as string[] | undefined) ?? [], varFiles, env: process.env, allowFS: true };
}

/** Reads and evaluates a job file as `job run` and `job validate` do. Rejects with SpecFileError or UsageError. */
export async function readJobFile(file: string, opts: Record<string, unknown>): Promise<SpecFiles.JobFile> {
  const { parseJobFile } = await loadSpecFiles();
  return parseJobFile(specFileName(file), await readSpecFile(file), await jobFileOptions(opts));
}

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
        .option('--check-index <index>', 'run only if the job modify index is still this (from `job plan`; 0: the job must not exist yet)'),
    ),
    ['job run examples/writer.hcl', 'job run --detach examples/hostpath-plugin.hcl', 'job run job.json --json', 'job run --var image=redis:7 --var-file prod.hcl web.hcl'],
  ).action(act(runJob));

  apiCommand(
    job.command('status').description('List jobs, or show one job with its allocations').argument('[id]', 'job ID or a unique prefix'),
    ['job status', 'job status writer', 'job status wri --json'],
  ).action(act(jobStatus));

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
    ['job validate examples/reader.hcl', 'job validate --var count=3 web.hcl', 'job validate - < job.json'],
  ).action(act(validateJob));

  apiCommand(
    job
      .command('inspect')
      .description("Print a job as JSON ({\"job\": ...}, what `job run` takes back)")
      .argument('<id>', 'job ID or a unique prefix'),
    ['job inspect writer', 'job inspect writer > writer.json && berth job run writer.json'],
  ).action(act(inspectJob));

  addJobInit(job, ctx);
  addJobPlan(job, ctx, { readJobFile, loadStructs, variableOptions });
  addJobLaunchCommands(job, ctx);
  addJobVersionCommands(job, ctx);
  addJobRestart(job, ctx);
  return job;
}

async function runJob(s: ApiSession, [file]: string[], opts: Record<string, unknown>): Promise<void> {
  const parsed = await readJobFile(file as string, opts);
  for (const note of parsed.notes) s.out.warn(`Warning: ${note}`);
  const jobId = String((parsed.input as { id?: unknown }).id ?? '');
  // What the cluster holds before this submission: a submission whose answer is lost (the
  // leader died) is then known to have landed by a newer submit index, and is not sent twice.
  const before = jobId ? await registeredJob(s, jobId) : undefined;
  const { body, landed } = await s.api.request<Registered>('POST', '/v1/jobs', {
    query: { namespace: s.namespace },
    body: { job: { namespace: s.namespace, ...parsed.input }, ...checkIndexOption(opts) },
    verify: async () => {
      const now = jobId ? await registeredJob(s, jobId) : undefined;
      if (!now || (now.submitIndex ?? 0) <= (before?.submitIndex ?? 0)) {
        s.out.warn(`note: the earlier submission of job "${jobId}" did not land (its answer was lost); submitting it again`);
        return undefined;
      }
      s.out.warn(`note: the earlier submission of job "${jobId}" landed (submit index ${now.submitIndex ?? 0}, version ${now.version}) though its answer was lost; not submitting it again`);
      const evals = (await s.api.get<api.Evaluation[]>(`/v1/job/${encodeURIComponent(jobId)}/evaluations`, { namespace: s.namespace })).body;
      const evaluation = evals.filter((e) => e.CreateIndex >= (now.submitIndex ?? 0)).sort((a, b) => a.CreateIndex - b.CreateIndex)[0] ?? evals.at(-1);
      return { body: { job: now, evalId: evaluation?.ID ?? '', index: now.submitIndex ?? now.modifyIndex }, index: now.modifyIndex, landed: true };
    },
  });
  if (landed && !s.out.json) s.out.line(`Job "${body.job.id}" was registered by the earlier attempt (submit index ${body.job.submitIndex ?? 0})`);
  if (body.job.periodic || body.job.parameterized) return launcherRegistered(s, body.job, body.evalId);
  if (opts['detach']) {
    if (s.out.json) s.out.document({ evalId: body.evalId, jobId: body.job.id });
    else {
      s.out.line(`Job registration successful`);
      s.out.line(`Evaluation ID: ${body.evalId}`);
    }
    return;
  }
  // A rolling update (the job's groups have an update block): follow its deployment instead,
  // once the scheduler ran the evaluation (it makes the deployment).
  const { rolls } = await loadStructs();
  const deploys = body.job.type === 'service' && body.job.groups.some((g) => rolls(g.update));
  const rollout = deploys ? (await settledEvaluation(s, body.evalId), await monitorDeployment(s, body.job)) : undefined;
  if (rollout) {
    if (s.out.json) s.out.document({ ok: rollout.ok, reason: rollout.reason, jobId: body.job.id, evalId: body.evalId, deployment: rollout.deployment });
    if (!rollout.ok) throw new MonitorFailure(`deployment ${shortId(rollout.deployment.ID)} ${rollout.deployment.Status}: ${rollout.reason}`);
    return;
  }
  const result = await monitorRun(s, await loadStructs(), body.job, body.evalId, body.index);
  if (s.out.json) s.out.document(result);
  if (!result.ok) throw new MonitorFailure(result.reason);
}

/** `--check-index N` as the registration's `checkIndex`; a usage error unless N is a whole number. */
function checkIndexOption(opts: Record<string, unknown>): { checkIndex?: number } {
  const raw = opts['checkIndex'];
  if (raw === undefined) return {};
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) throw new UsageError(`--check-index takes a job modify index (a whole number, as \`job plan\` prints it), not "${String(raw)}"`);
  return { checkIndex: Number(raw) };
}

/** A periodic or parameterized job runs nothing itself: say so, and when it launches next (as Nomad's job run does). */
async function launcherRegistered(s: ApiSession, job: Job, evalId: string): Promise<void> {
  const { nextLaunch } = await loadStructs();
  const p = job.periodic;
  const next = p?.enabled ? nextLaunch([...(p.cron ? [p.cron] : []), ...(p.crons ?? [])], p.timeZone, Date.now()) : undefined;
  if (s.out.json) return s.out.document({ jobId: job.id, evalId, ...(next !== undefined ? { nextLaunch: new Date(next).toISOString() } : {}) });
  s.out.line('Job registration successful');
  if (p) s.out.line(next !== undefined ? `Approximate next launch time: ${timestamp(next)} (${p.timeZone})` : 'No launch is scheduled (the periodic block is disabled, or its schedule has no future time)');
  else s.out.line(`Job "${job.id}" is parameterized: launch it with \`berth job dispatch ${job.id}\``);
}

/** The answer of a job registration. */
interface Registered {
  evaluation?: Evaluation;
  evalId: string;
  index: number;
  job: Job;
}

/** The job as the cluster holds it now, or undefined when it has none by that ID. */
async function registeredJob(s: ApiSession, jobId: string): Promise<Job | undefined> {
  try {
    return (await s.api.get<Job>(KINDS.job.getPath(jobId), { namespace: s.namespace })).body;
  } catch (err) {
    if (err instanceof ApiClientError && err.code === 'NOT_FOUND') return undefined;
    throw err;
  }
}

async function jobStatus(s: ApiSession, [idArg]: string[]): Promise<void> {
  if (!idArg) {
    const { body: jobs } = await s.api.get<Job[]>('/v1/jobs', { namespace: s.namespace });
    if (s.out.json) return s.out.document(jobs);
    s.out.table(
      ['ID', 'Type', 'Priority', 'Status', 'Submit Date'],
      jobs.map((j) => [j.id, j.type, String(j.priority), s.style.status(j.stop ? 'dead (stopped)' : j.status), timestamp(j.submitTime)]),
    );
    return;
  }
  const id = await s.api.resolve(KINDS.job, idArg, { namespace: s.namespace });
  const { body: job } = await s.api.get<Job>(KINDS.job.getPath(id), { namespace: s.namespace });
  const { body: allocs } = await s.api.get<api.AllocationListStub[]>(`/v1/job/${encodeURIComponent(id)}/allocations`, { namespace: s.namespace });
  if (s.out.json) return s.out.document({ job, allocations: allocs });
  s.out.fields([
    ['ID', job.id],
    ['Namespace', job.namespace],
    ['Type', job.type],
    ['Priority', job.priority],
    ['Datacenters', job.datacenters.join(',')],
    ['Status', s.style.status(job.stop ? 'dead (stopped)' : job.status)],
    ['Version', job.version],
    ['Submit Date', timestamp(job.submitTime)],
  ]);
  s.out.line();
  s.out.line(s.style.bold('Summary'));
  const statuses = ['pending', 'running', 'complete', 'failed', 'lost'] as const;
  s.out.table(
    ['Task Group', 'Count', ...statuses.map((x) => x[0]!.toUpperCase() + x.slice(1))],
    job.groups.map((g) => {
      const mine = allocs.filter((a) => a.TaskGroup === g.name);
      return [g.name, String(g.count), ...statuses.map((st) => String(mine.filter((a) => a.ClientStatus === st).length))];
    }),
  );
  await printJobEvaluations(s, id);
  s.out.line();
  s.out.line(s.style.bold('Allocations'));
  s.out.table(
    ['ID', 'Node ID', 'Task Group', 'Version', 'Desired', 'Status', 'Created'],
    [...allocs]
      .sort((a, b) => b.CreateIndex - a.CreateIndex)
      .map((a) => [shortId(a.ID), shortId(a.NodeID), a.TaskGroup, String(a.JobVersion), a.DesiredStatus, s.style.status(a.ClientStatus), age(Math.floor(a.CreateTime / 1_000_000))]),
  );
}

/** Nomad's "Placement Failure" section: why the job's blocked evaluation (if any) could not place, per group. */
async function stopJob(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  const { body } = await s.api.request<{ evalId: string; evaluation: Evaluation }>('DELETE', KINDS.job.getPath(id), {
    query: { namespace: s.namespace, ...(opts['purge'] ? { purge: true } : {}) },
  });
  if (s.out.json) return s.out.document({ jobId: id, evalId: body.evalId, purged: Boolean(opts['purge']) });
  s.out.line(`==> Job "${id}" ${opts['purge'] ? 'stopped and purged' : 'stopped'}`);
  s.out.line(`    Evaluation ID: ${body.evalId}`);
}

async function validateJob(s: ApiSession, [file]: string[], opts: Record<string, unknown>): Promise<void> {
  const parsed = await readJobFile(file as string, opts);
  for (const note of parsed.notes) s.out.warn(`Warning: ${note}`);
  await s.api.request('POST', '/v1/validate/job', { body: { job: { namespace: s.namespace, ...parsed.input } } });
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
  const { body: nodes } = await s.api.get<Structs.Node[]>('/v1/nodes');
  const ready = nodes.filter((n) => n.status === 'ready');
  const healthy = (n: Structs.Node, d: string): boolean => Boolean(n.drivers[d]?.detected && n.drivers[d]?.healthy);
  const wanted = [...new Set(job.groups.flatMap((g) => g.tasks.map((t) => t.driver)))];
  const have = [...new Set(ready.flatMap((n) => Object.keys(n.drivers).filter((d) => healthy(n, d))))].sort();
  return wanted
    .filter((d) => !ready.some((n) => healthy(n, d)))
    .map((d) =>
      ready.length
        ? `no ready node can run driver "${d}" (the nodes' healthy drivers: ${have.join(', ') || 'none'}); the job would not be placed`
        : `no node is ready, so nothing can run driver "${d}" yet`,
    );
}

async function inspectJob(s: ApiSession, [idArg]: string[]): Promise<void> {
  const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  const { body: job } = await s.api.get<Job>(KINDS.job.getPath(id), { namespace: s.namespace });
  s.out.document({ job });
}
