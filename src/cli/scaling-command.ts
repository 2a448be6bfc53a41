// `berth scaling policy list|info`: the groups' scaling policies as Nomad's
// command/scaling_policy_list.go and scaling_policy_info.go show them.

import { Command } from 'commander';
import type { ScalingPolicy, ScalingPolicyListStub } from '../api/index.js';
import { ApiClientError } from './api-client.js';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { formatKV } from './job-json.js';

/** A policy's target as Nomad writes it: Namespace, Job, Group first, then any other key. */
function formatTarget(target: Record<string, string> | null): string {
  const entries = Object.entries(target ?? {});
  const first = ['namespace', 'job', 'group'].map((k) => entries.find(([key]) => key.toLowerCase() === k)).filter((e): e is [string, string] => e !== undefined);
  const rest = entries.filter((e) => !first.includes(e));
  return [...first, ...rest].map(([k, v]) => `${k}:${v}`).join(',');
}

/** Builds `berth scaling`. */
export function scalingCommand(ctx: CommandContext): Command {
  const scaling = new Command('scaling').description("Inspect the groups' scaling policies (min and max of their counts, the autoscaler's policy)");
  const policy = scaling.command('policy').description('List and inspect scaling policies');
  apiCommand(
    policy
      .command('list')
      .description('List scaling policies')
      .option('--job <id>', "only this job's policies")
      .option('--type <type>', 'only policies of this type (horizontal)')
      .option('--verbose', 'full IDs'),
    ['scaling policy list', 'scaling policy list --job web', 'scaling policy list --json'],
  ).action(apiAction(ctx, list));
  apiCommand(
    policy
      .command('info')
      .description("Show one policy: target, min, max and the autoscaler's policy")
      .argument('<id>', 'policy ID or a unique prefix')
      .option('--verbose', 'the full ID'),
    ['scaling policy info 3f2a9c1b', 'scaling policy info 3f2a --json'],
  ).action(apiAction(ctx, info));
  return scaling;
}

async function list(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const query: Record<string, string> = { namespace: s.namespace };
  if (typeof opts['job'] === 'string') query['job'] = opts['job'];
  if (typeof opts['type'] === 'string') query['type'] = opts['type'];
  const { body } = await s.api.get<ScalingPolicyListStub[]>('/v1/scaling/policies', query);
  if (s.out.json) return s.out.document(body);
  if (body.length === 0) return s.out.line('No policies found');
  s.out.table(
    ['ID', 'Enabled', 'Type', 'Target'],
    body.map((p) => [opts['verbose'] ? p.ID : shortId(p.ID), String(p.Enabled), p.Type, formatTarget(p.Target)]),
  );
}

async function info(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const prefix = idArg as string;
  const { body: all } = await s.api.get<ScalingPolicyListStub[]>('/v1/scaling/policies', { namespace: '*' });
  const matches = all.filter((p) => p.ID.startsWith(prefix));
  if (matches.length === 0) throw new ApiClientError('NOT_FOUND', `no scaling policy with ID or prefix "${prefix}"`, 404);
  if (matches.length > 1) {
    throw new ApiClientError('CLI_AMBIGUOUS_PREFIX', `prefix "${prefix}" matches ${matches.length} scaling policies; give more of the ID`, 0, { matches: matches.map((p) => `${p.ID} (${formatTarget(p.Target)})`) });
  }
  const { body: p } = await s.api.get<ScalingPolicy>(`/v1/scaling/policy/${encodeURIComponent((matches[0] as ScalingPolicyListStub).ID)}`);
  if (s.out.json) return s.out.document(p);
  for (const line of formatKV([
    ['ID', opts['verbose'] ? p.ID : shortId(p.ID)],
    ['Enabled', String(p.Enabled ?? true)],
    ['Target', formatTarget(p.Target)],
    ['Min', String(p.Min)],
    ['Max', String(p.Max)],
  ]))
    s.out.line(line);
  s.out.line('');
  s.out.line('Policy:');
  s.out.line(p.Policy && Object.keys(p.Policy).length ? JSON.stringify(p.Policy, null, 4) : '<empty>');
}
