// `berth deployment list|status|promote|fail|pause|resume`, `job promote`
// and the deployment monitor
// `job run` follows a rolling update with, as Nomad's deployment monitor.

import { Command } from 'commander';
import type { Deployment, Job } from '../structs/index.js';
import { ApiClientError } from './api-client.js';
import { apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { UsageError } from './usage-error.js';

const MONITOR_WAIT = '30s';

/** Resolves a deployment ID or unique prefix. */
async function deploymentId(s: ApiSession, idOrPrefix: string): Promise<string> {
  const { body } = await s.api.get<Deployment[]>('/v1/deployments', { namespace: '*', prefix: idOrPrefix });
  const exact = body.find((d) => d.id === idOrPrefix);
  if (exact) return exact.id;
  if (body.length === 1) return (body[0] as Deployment).id;
  if (body.length === 0) throw new ApiClientError('NOT_FOUND', `no deployment with ID or prefix "${idOrPrefix}"`, 404);
  throw new UsageError(`prefix "${idOrPrefix}" matches ${body.length} deployments; give more of the ID`);
}

/** The per-group table of a deployment, as `nomad deployment status` prints it. */
function groupRows(d: Deployment): string[][] {
  return Object.entries(d.taskGroups).map(([name, g]) => [
    name,
    g.desiredCanaries > 0 ? String(g.promoted) : '-',
    String(g.desiredTotal),
    g.desiredCanaries > 0 ? String(g.desiredCanaries) : '-',
    String(g.placedAllocs),
    String(g.healthyAllocs),
    String(g.unhealthyAllocs),
    g.requireProgressBy > 0 ? timestamp(g.requireProgressBy) : '-',
  ]);
}
const GROUP_HEADERS = ['Task Group', 'Promoted', 'Desired', 'Canaries', 'Placed', 'Healthy', 'Unhealthy', 'Progress Deadline'];

function printDeployment(s: ApiSession, d: Deployment): void {
  s.out.fields([
    ['ID', d.id],
    ['Job ID', d.jobId],
    ['Job Version', String(d.jobVersion)],
    ['Status', s.style.status(d.status)],
    ['Description', d.statusDescription],
  ]);
  s.out.line('');
  s.out.line('Deployed');
  s.out.table(GROUP_HEADERS, groupRows(d));
}

/** Builds `berth deployment`. */
export function deploymentCommand(ctx: CommandContext): Command {
  const cmd = new Command('deployment').description('Follow and steer rolling updates');
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);

  apiCommand(cmd.command('list').description('List deployments, newest first'), ['deployment list', 'deployment list --json']).action(
    act(async (s) => {
      const { body } = await s.api.get<Deployment[]>('/v1/deployments', { namespace: s.namespace });
      if (s.out.json) return s.out.document(body);
      s.out.table(
        ['ID', 'Job ID', 'Job Version', 'Status', 'Description'],
        body.map((d) => [shortId(d.id), d.jobId, String(d.jobVersion), s.style.status(d.status), d.statusDescription]),
      );
    }),
  );

  apiCommand(cmd.command('status').description("Show a deployment's groups: desired, placed, healthy, canaries").argument('<id>', 'deployment ID or a unique prefix'), [
    'deployment status 8f3c',
  ]).action(
    act(async (s, [idArg]) => {
      const { body } = await s.api.get<Deployment>(`/v1/deployment/${await deploymentId(s, idArg as string)}`);
      if (s.out.json) return s.out.document(body);
      printDeployment(s, body);
    }),
  );

  apiCommand(
    cmd
      .command('promote')
      .description("Promote a deployment's canaries (once healthy): the rollout goes on past them")
      .argument('<id>', 'deployment ID or a unique prefix')
      .option('--group <name...>', 'promote only these groups'),
    ['deployment promote 8f3c', 'deployment promote 8f3c --group web'],
  ).action(act(async (s, [idArg], opts) => steer(s, `/v1/deployment/promote/${await deploymentId(s, idArg as string)}`, { groups: opts['group'] ?? [] }, 'promoted')));

  apiCommand(cmd.command('fail').description('Mark a deployment failed (auto_revert then reverts the job)').argument('<id>', 'deployment ID or a unique prefix'), [
    'deployment fail 8f3c',
  ]).action(act(async (s, [idArg]) => steer(s, `/v1/deployment/fail/${await deploymentId(s, idArg as string)}`, {}, 'failed')));

  apiCommand(cmd.command('pause').description('Pause a deployment: nothing more is replaced until it resumes').argument('<id>', 'deployment ID or a unique prefix'), [
    'deployment pause 8f3c',
  ]).action(act(async (s, [idArg]) => steer(s, `/v1/deployment/pause/${await deploymentId(s, idArg as string)}`, { pause: true }, 'paused')));

  apiCommand(cmd.command('resume').description('Resume a paused deployment').argument('<id>', 'deployment ID or a unique prefix'), ['deployment resume 8f3c']).action(
    act(async (s, [idArg]) => steer(s, `/v1/deployment/pause/${await deploymentId(s, idArg as string)}`, { pause: false }, 'resumed')),
  );
  return cmd;
}

async function steer(s: ApiSession, path: string, body: unknown, verb: string): Promise<void> {
  const { body: out } = await s.api.request<{ deployment: Deployment; revertedTo?: number }>('POST', path, { body });
  if (s.out.json) return s.out.document(out);
  s.out.line(`Deployment "${shortId(out.deployment.id)}" ${verb}${out.revertedTo !== undefined ? `; job "${out.deployment.jobId}" reverted to version ${out.revertedTo}` : ''}`);
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
      const { body } = await s.api.request<{ deployment: Deployment }>('POST', `/v1/job/${encodeURIComponent(id as string)}/promote`, {
        query: { namespace: s.namespace },
        body: { groups: opts['group'] ?? [] },
      });
      if (s.out.json) return s.out.document(body);
      s.out.line(`Deployment "${shortId(body.deployment.id)}" promoted`);
    }),
  );
}

/**
 * Follows the deployment of `job`'s version (if it rolls as one) until it is
 * successful, failed or cancelled, printing each change of its groups.
 * Returns undefined when the version has no deployment; ok false when it failed.
 */
export async function monitorDeployment(s: ApiSession, job: Pick<Job, 'id' | 'version'>): Promise<{ ok: boolean; reason: string; deployment: Deployment } | undefined> {
  const path = `/v1/job/${encodeURIComponent(job.id)}/deployment`;
  const first = (await s.api.get<Deployment | null>(path, { namespace: s.namespace })).body;
  if (!first || first.jobVersion !== job.version) return undefined;
  const say = (text: string): void => {
    if (!s.out.json) s.out.line(text);
  };
  say(`==> ${timestamp(Date.now())}: Monitoring deployment "${shortId(first.id)}"`);
  let index = 0;
  let last = '';
  for (;;) {
    const ans = await s.api.get<Deployment>(`/v1/deployment/${first.id}`, index ? { index, wait: MONITOR_WAIT } : {});
    index = ans.index;
    const d = ans.body;
    const line = Object.entries(d.taskGroups)
      .map(([g, st]) => `${g}: ${st.healthyAllocs}/${st.desiredTotal} healthy, ${st.placedAllocs} placed${st.unhealthyAllocs ? `, ${st.unhealthyAllocs} unhealthy` : ''}${st.desiredCanaries > 0 && !st.promoted ? ', canaries await promotion' : ''}`)
      .join('; ');
    const now = `${d.status}|${line}`;
    if (now !== last) say(`    ${timestamp(Date.now())}  ${d.status.padEnd(10)} ${line}`);
    last = now;
    if (d.status === 'successful') {
      say(`==> Deployment "${shortId(d.id)}" successful`);
      return { ok: true, reason: d.statusDescription, deployment: d };
    }
    if (d.status === 'failed' || d.status === 'cancelled') {
      say(`==> Deployment "${shortId(d.id)}" ${d.status}: ${d.statusDescription}`);
      return { ok: false, reason: d.statusDescription, deployment: d };
    }
  }
}
