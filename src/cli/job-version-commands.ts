// `berth job history|revert|scale` (Nomad's command/job_history.go,
// job_revert.go, job_scale.go), over GET /v1/job/:id/versions, PUT
// /v1/job/:id/revert and PUT /v1/job/:id/scale.

import type { Command } from 'commander';
import type * as api from '../api/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, timestamp } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { formatJobDiff } from './job-diff-output.js';
import { formatKV, msOfNanos } from './job-json.js';
import { UsageError } from './usage-error.js';

/** Adds `history`, `revert` and `scale` to `berth job`. */
export function addJobVersionCommands(job: Command, ctx: CommandContext): void {
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);

  apiCommand(
    job
      .command('history')
      .description("List a job's kept versions (stable: a deployment of it succeeded); -p shows what each changed")
      .argument('<id>', 'job ID or a unique prefix')
      .option('-p, --diff', 'show the changes between each version and the one before')
      .option('--full', 'print each version in full (JSON)')
      .option('--version <n>', 'show only this version')
      .option('-t, --template <template>', 'format the versions with a Go template'),
    ['job history web', 'job history -p web', 'job history -version 3 web'],
  ).action(
    act(async (s, [idArg], opts) => {
      const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
      const { body } = await s.api.get<api.JobVersionsResponse>(`${KINDS.job.getPath(id)}/versions`, { namespace: s.namespace, ...(opts['diff'] ? { diffs: true } : {}) });
      let versions = (body.Versions ?? []).map((v, i) => ({ job: v, diff: body.Diffs?.[i] }));
      if (opts['version'] !== undefined) {
        const wanted = Number(opts['version']);
        versions = versions.filter((v) => v.job.Version === wanted);
        if (!versions.length) throw new UsageError(`job "${id}" has no version ${String(opts['version'])} (see \`berth job history ${id}\`)`);
      }
      // -json, or -t: the Output formats the document with the template.
      if (s.out.json) return s.out.document(versions.map((v) => v.job));
      versions.forEach((v, i) => {
        if (i > 0) s.out.line();
        if (opts['full']) return s.out.line(JSON.stringify(v.job, null, 4));
        const rows: Array<[string, string]> = [
          ['Version', String(v.job.Version ?? 0)],
          ['Stable', String(v.job.Stable ?? false)],
          ['Submit Date', timestamp(msOfNanos(v.job.SubmitTime ?? 0))],
        ];
        if (opts['diff'] && v.diff) rows.push(['Diff', formatJobDiff(v.diff).trim()]);
        for (const line of formatKV(rows)) s.out.line(line);
      });
    }),
  );

  apiCommand(
    job
      .command('revert')
      .description('Run a kept version of a job again (as a new version)')
      .argument('<id>', 'job ID or a unique prefix')
      .argument('<version>', 'the version to run'),
    ['job revert web 3'],
  ).action(
    act(async (s, [idArg, version]) => {
      const v = Number(version);
      if (!Number.isInteger(v) || v < 0) throw new UsageError(`version must be a job version number, not "${String(version)}" (see \`berth job history ${String(idArg)}\`)`);
      const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
      const { body } = await s.api.request<api.JobRegisterResponse>('PUT', `${KINDS.job.getPath(id)}/revert`, {
        query: { namespace: s.namespace },
        body: { JobID: id, JobVersion: v },
      });
      if (s.out.json) return s.out.document(body);
      s.out.line(`Job "${id}" reverted to version ${v}`);
      s.out.line(`Evaluation ID: ${body.EvalID}`);
    }),
  );

  apiCommand(
    job
      .command('scale')
      .description("Set a group's count (the group may be left out when the job has one)")
      .argument('<id>', 'job ID or a unique prefix')
      .argument('<group|count>', 'task group, or the count when the job has one group')
      .argument('[count]', 'new count'),
    ['job scale web 5', 'job scale web api 5'],
  ).action(
    act(async (s, [idArg, second, third]) => {
      const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
      let group = third === undefined ? undefined : (second as string);
      const countText = third ?? second;
      const n = Number(countText);
      if (!Number.isInteger(n) || n < 0) throw new UsageError(`count must be a whole number of at least 0, not "${String(countText)}"`);
      if (group === undefined) {
        const { body: job } = await s.api.get<api.Job>(KINDS.job.getPath(id), { namespace: s.namespace });
        const groups = (job.TaskGroups ?? []).map((g) => g.Name ?? '');
        if (groups.length !== 1) throw new UsageError(`job "${id}" has ${groups.length} groups (${groups.map((g) => `"${g}"`).join(', ')}): name the one to scale`);
        group = groups[0] as string;
      }
      const { body } = await s.api.request<api.JobRegisterResponse>('PUT', `${KINDS.job.getPath(id)}/scale`, {
        query: { namespace: s.namespace },
        body: { Count: n, Target: { Job: id, Group: group }, Message: 'submitted using the Berth CLI' },
      });
      if (s.out.json) return s.out.document(body);
      s.out.line(`Job "${id}" group "${group}" scaled to ${n}`);
      if (body.EvalID) s.out.line(`Evaluation ID: ${body.EvalID}`);
    }),
  );
}
