// `berth deployment list|status|promote|fail|pause|resume`, `job promote`
// and the deployment monitor `job run` follows a rolling update with, as
// Nomad's deployment commands and monitor (command/deployment_*.go);
// `job history|revert|scale` are in job-version-commands.ts.

import { Command } from 'commander';
import type { Deployment, DeploymentState, DeploymentUpdateResponse } from '../api/index.js';
import type { Job } from '../structs/index.js';
import { ApiClientError } from './api-client.js';
import { apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { MonitorFailure } from './job-run-monitor.js';
import { UsageError } from './usage-error.js';

const MONITOR_WAIT = '30s';

/** Resolves a deployment ID or unique prefix, in any namespace. */
async function deploymentId(s: ApiSession, idOrPrefix: string): Promise<string> {
  const { body } = await s.api.get<Deployment[]>('/v1/deployments', { namespace: '*', prefix: idOrPrefix });
  const exact = body.find((d) => d.ID === idOrPrefix);
  if (exact) return exact.ID;
  if (body.length === 1) return (body[0] as Deployment).ID;
  if (body.length === 0) throw new ApiClientError('NOT_FOUND', `no deployment with ID or prefix "${idOrPrefix}"`, 404);
  throw new UsageError(`prefix "${idOrPrefix}" matches ${body.length} deployments; give more of the ID`);
}

/** A Go time.Time (RFC 3339) as epoch milliseconds; 0 for Go's zero time. */
const msOf = (goTime: string): number => Math.max(0, Date.parse(goTime) || 0);

/** The per-group table of a deployment as `nomad deployment status` lays it out: optional columns only when a group uses them. */
function groupTable(d: Deployment): { headers: string[]; rows: string[][] } {
  const groups = Object.entries(d.TaskGroups ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const states = groups.map(([, g]) => g);
  const autoRevert = states.some((g) => g.AutoRevert);
  const canaries = states.some((g) => g.DesiredCanaries > 0);
  const deadline = states.some((g) => g.ProgressDeadline !== 0);
  const headers = ['Task Group', ...(autoRevert ? ['Auto Revert'] : []), ...(canaries ? ['Promoted'] : []), 'Desired', ...(canaries ? ['Canaries'] : []), 'Placed', 'Healthy', 'Unhealthy', ...(deadline ? ['Progress Deadline'] : [])];
  const row = (name: string, g: DeploymentState): string[] => [
    name,
    ...(autoRevert ? [String(g.AutoRevert)] : []),
    ...(canaries ? [g.DesiredCanaries > 0 ? String(g.Promoted) : 'N/A'] : []),
    String(g.DesiredTotal),
    ...(canaries ? [String(g.DesiredCanaries)] : []),
    String(g.PlacedAllocs),
    String(g.HealthyAllocs),
    String(g.UnhealthyAllocs),
    ...(deadline ? [msOf(g.RequireProgressBy) > 0 ? timestamp(msOf(g.RequireProgressBy)) : 'N/A'] : []),
  ];
  return { headers, rows: groups.map(([name, g]) => row(name, g)) };
}

function printDeployment(s: ApiSession, d: Deployment, verbose: boolean): void {
  s.out.fields([
    ['ID', verbose ? d.ID : shortId(d.ID)],
    ['Job ID', d.JobID],
    ['Job Version', String(d.JobVersion)],
    ['Status', s.style.status(d.Status)],
    ['Description', d.StatusDescription],
  ]);
  if (Object.keys(d.TaskGroups ?? {}).length === 0) return;
  s.out.line('');
  s.out.line(s.style.bold('Deployed'));
  const { headers, rows } = groupTable(d);
  s.out.table(headers, rows);
}

/** Deployments as Nomad's formatDeployments lays them out. */
export function printDeploymentList(s: ApiSession, deployments: readonly Deployment[], verbose: boolean): void {
  s.out.table(
    ['ID', 'Job ID', 'Job Version', 'Status', 'Description'],
    deployments.map((d) => [verbose ? d.ID : shortId(d.ID), d.JobID, String(d.JobVersion), s.style.status(d.Status), d.StatusDescription]),
  );
}

/** Builds `berth deployment`. */
export function deploymentCommand(ctx: CommandContext): Command {
  const cmd = new Command('deployment').description('Follow and steer rolling updates');
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);

  apiCommand(cmd.command('list').description('List deployments, newest first').option('--verbose', 'full IDs'), ['deployment list', 'deployment list --json']).action(
    act(async (s, _args, opts) => {
      const { body } = await s.api.get<Deployment[]>('/v1/deployments', { namespace: s.namespace });
      const deployments = [...body].sort((a, b) => b.CreateIndex - a.CreateIndex);
      if (s.out.json) return s.out.document(deployments);
      if (deployments.length === 0) return s.out.line('No deployments found');
      printDeploymentList(s, deployments, Boolean(opts['verbose']));
    }),
  );

  apiCommand(
    cmd
      .command('status')
      .description("Show a deployment's groups: desired, placed, healthy, canaries")
      .argument('<id>', 'deployment ID or a unique prefix')
      .option('--verbose', 'full IDs'),
    ['deployment status 8f3c'],
  ).action(
    act(async (s, [idArg], opts) => {
      const { body } = await s.api.get<Deployment>(`/v1/deployment/${await deploymentId(s, idArg as string)}`);
      if (s.out.json) return s.out.document(body);
      printDeployment(s, body, Boolean(opts['verbose']));
    }),
  );

  apiCommand(
    cmd
      .command('promote')
      .description("Promote a deployment's canaries (once healthy): the rollout goes on past them; then follow it")
      .argument('<id>', 'deployment ID or a unique prefix')
      .option('--group <name...>', 'promote only these groups')
      .option('--detach', 'return at once instead of following the deployment'),
    ['deployment promote 8f3c', 'deployment promote 8f3c --group web'],
  ).action(
    act(async (s, [idArg], opts) => {
      const id = await deploymentId(s, idArg as string);
      const groups = (opts['group'] as string[] | undefined) ?? [];
      const out = await steer(s, 'promote', id, groups.length ? { Groups: groups } : { All: true });
      await followUnlessDetached(s, id, out, `Deployment "${id}" promoted`, opts);
    }),
  );

  apiCommand(cmd.command('fail').description('Mark a deployment failed (auto_revert then reverts the job)').argument('<id>', 'deployment ID or a unique prefix'), [
    'deployment fail 8f3c',
  ]).action(
    act(async (s, [idArg]) => {
      const id = await deploymentId(s, idArg as string);
      const out = await steer(s, 'fail', id, {});
      if (s.out.json) return s.out.document(out);
      s.out.line(out.RevertedJobVersion === null ? `Deployment "${id}" failed` : `Deployment "${id}" failed. Auto-reverted to job version ${out.RevertedJobVersion}.`);
    }),
  );

  apiCommand(cmd.command('pause').description('Pause a deployment: nothing more is replaced until it resumes').argument('<id>', 'deployment ID or a unique prefix'), [
    'deployment pause 8f3c',
  ]).action(
    act(async (s, [idArg]) => {
      const id = await deploymentId(s, idArg as string);
      const out = await steer(s, 'pause', id, { Pause: true });
      if (s.out.json) return s.out.document(out);
      s.out.line(`Deployment "${id}" paused`);
    }),
  );

  apiCommand(
    cmd
      .command('resume')
      .description('Resume a paused deployment; then follow it')
      .argument('<id>', 'deployment ID or a unique prefix')
      .option('--detach', 'return at once instead of following the deployment'),
    ['deployment resume 8f3c'],
  ).action(
    act(async (s, [idArg], opts) => {
      const id = await deploymentId(s, idArg as string);
      const out = await steer(s, 'pause', id, { Pause: false });
      await followUnlessDetached(s, id, out, `Deployment "${id}" resumed`, opts);
    }),
  );
  return cmd;
}

/** PUTs one of Nomad's deployment writes (`/v1/deployment/<action>/<id>`) with its request body. */
async function steer(s: ApiSession, action: 'promote' | 'fail' | 'pause', id: string, body: Record<string, unknown>): Promise<DeploymentUpdateResponse> {
  const { body: out } = await s.api.request<DeploymentUpdateResponse>('PUT', `/v1/deployment/${action}/${encodeURIComponent(id)}`, { body: { DeploymentID: id, ...body } });
  return out;
}

/** Says what was done and, unless --detach (or --json), follows the deployment until it ends; a failed one exits 1. */
async function followUnlessDetached(s: ApiSession, id: string, out: DeploymentUpdateResponse, done: string, opts: Record<string, unknown>): Promise<void> {
  if (s.out.json) return s.out.document(out);
  s.out.line(done);
  if (opts['detach']) return;
  s.out.line('');
  const end = await followDeployment(s, id);
  if (!end.ok) throw new MonitorFailure(`deployment ${shortId(id)} ${end.deployment.Status}: ${end.reason}`);
}

/** Adds `job promote` to `berth job` (`job history|revert|scale` are in job-version-commands.ts). */
export function addJobVersionCommands(job: Command, ctx: CommandContext): void {
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);
  apiCommand(
    job
      .command('promote')
      .description("Promote the canaries of a job's latest deployment")
      .argument('<id>', 'job ID')
      .option('--group <name...>', 'promote only these groups'),
    ['job promote web'],
  ).action(
    act(async (s, [id], opts) => {
      const { body: latest } = await s.api.get<Deployment | null>(`/v1/job/${encodeURIComponent(id as string)}/deployment`, { namespace: s.namespace });
      if (!latest) throw new ApiClientError('NOT_FOUND', `job "${String(id)}" has no deployment`, 404);
      const groups = (opts['group'] as string[] | undefined) ?? [];
      const out = await steer(s, 'promote', latest.ID, groups.length ? { Groups: groups } : { All: true });
      if (s.out.json) return s.out.document(out);
      s.out.line(`Deployment "${shortId(latest.ID)}" promoted`);
    }),
  );
}

/**
 * Follows the deployment of `job`'s version (if it rolls as one) until it is
 * successful, failed or cancelled, printing each change of its groups.
 * Returns undefined when the version has no deployment; ok false when it failed.
 */
export async function monitorDeployment(s: ApiSession, job: Pick<Job, 'id' | 'version'>): Promise<DeploymentEnd | undefined> {
  const first = (await s.api.get<Deployment | null>(`/v1/job/${encodeURIComponent(job.id)}/deployment`, { namespace: s.namespace })).body;
  if (!first || first.JobVersion !== job.version) return undefined;
  return followDeployment(s, first.ID);
}

/** How a followed deployment ended: ok when successful, else the reason it failed or was cancelled. */
export interface DeploymentEnd {
  ok: boolean;
  reason: string;
  deployment: Deployment;
}

/** Follows deployment `id` with blocking reads until it is successful, failed or cancelled, printing each change of its groups. */
export async function followDeployment(s: ApiSession, id: string): Promise<DeploymentEnd> {
  const say = (text: string): void => {
    if (!s.out.json) s.out.line(text);
  };
  say(`==> ${timestamp(Date.now())}: Monitoring deployment "${shortId(id)}"`);
  let index = 0;
  let last = '';
  for (;;) {
    const ans = await s.api.get<Deployment>(`/v1/deployment/${encodeURIComponent(id)}`, index ? { index, wait: MONITOR_WAIT } : {});
    index = ans.index;
    const d = ans.body;
    const line = Object.entries(d.TaskGroups ?? {})
      .map(([g, st]) => `${g}: ${st.HealthyAllocs}/${st.DesiredTotal} healthy, ${st.PlacedAllocs} placed${st.UnhealthyAllocs ? `, ${st.UnhealthyAllocs} unhealthy` : ''}${st.DesiredCanaries > 0 && !st.Promoted ? ', canaries await promotion' : ''}`)
      .join('; ');
    const now = `${d.Status}|${line}`;
    if (now !== last) say(`    ${timestamp(Date.now())}  ${d.Status.padEnd(10)} ${line}`);
    last = now;
    if (d.Status === 'successful') {
      say(`==> Deployment "${shortId(d.ID)}" successful`);
      return { ok: true, reason: d.StatusDescription, deployment: d };
    }
    if (d.Status === 'failed' || d.Status === 'cancelled') {
      say(`==> Deployment "${shortId(d.ID)}" ${d.Status}: ${d.StatusDescription}`);
      return { ok: false, reason: d.StatusDescription, deployment: d };
    }
  }
}
