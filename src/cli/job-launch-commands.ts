// `berth job dispatch` and `berth job periodic force`: launch a child job of
// a parameterized or periodic job (Nomad's command/job_dispatch.go and
// job_periodic_force.go), then print the child's ID and evaluation.

import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type * as api from '../api/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import type { CommandContext } from './command-context.js';
import { collect, parsePairs } from './values.js';
import { UsageError } from './usage-error.js';

/** The largest payload read (the server refuses more than 16 KiB anyway; reading stops well before memory matters). */
const MAX_PAYLOAD_READ = 64 * 1024;

/** Adds `dispatch` and `periodic force` to `berth job`. */
export function addJobLaunchCommands(job: Command, ctx: CommandContext): void {
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);
  apiCommand(
    job
      .command('dispatch')
      .description('Dispatch a parameterized job: launch a child job with a payload (a file, or - for stdin) and meta')
      .argument('<id>', 'the parameterized job')
      .argument('[payload]', 'a file whose bytes are the payload, or - to read standard input')
      .option('--meta <key=value>', 'a meta value for the child job (repeatable)', collect)
      .option('--id-prefix-template <text>', "put this into the child's ID: <id>/dispatch-<text>-<unix>-<random>")
      .option('--detach', 'print the child job and evaluation IDs and return at once'),
    ['job dispatch video-encode input.mp4.json', 'job dispatch --meta quality=high video-encode -', 'echo hi | berth job dispatch -meta k=v report -'],
  ).action(act(dispatch));

  const periodic = job.command('periodic').description('Act on periodic jobs');
  apiCommand(
    periodic.command('force').description('Launch a periodic job now, whatever its schedule (and prohibit_overlap)').argument('<id>', 'the periodic job'),
    ['job periodic force nightly-backup'],
  ).action(act(force));
}

async function readPayload(source: string | undefined): Promise<Buffer | undefined> {
  if (source === undefined) return undefined;
  if (source !== '-') {
    try {
      const buf = await readFile(source);
      if (buf.length > MAX_PAYLOAD_READ) throw new UsageError(`${source} is ${buf.length} bytes; a dispatch payload is at most 16 KiB`);
      return buf;
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new UsageError(`cannot read the payload ${source}: ${(err as { code?: string }).code ?? String(err)}`);
    }
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > MAX_PAYLOAD_READ) throw new UsageError('the payload on standard input is over 16 KiB; a dispatch payload is at most 16 KiB');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function dispatch(s: ApiSession, [idArg, source]: string[], opts: Record<string, unknown>): Promise<void> {
  const meta = parsePairs('--meta', opts['meta'] as string[] | undefined);
  const payload = await readPayload(source);
  const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  const { body } = await s.api.request<api.JobDispatchResponse>('PUT', `${KINDS.job.getPath(id)}/dispatch`, {
    query: { namespace: s.namespace },
    body: {
      JobID: id,
      Payload: payload?.length ? payload.toString('base64') : null,
      Meta: Object.keys(meta).length ? meta : null,
      ...(opts['idPrefixTemplate'] ? { IdPrefixTemplate: opts['idPrefixTemplate'] } : {}),
    },
  });
  if (s.out.json) return s.out.document(body);
  s.out.line('Dispatched Job ID = ' + body.DispatchedJobID);
  s.out.line('Evaluation ID     = ' + body.EvalID);
  s.out.line(`==> Follow it with \`berth job status ${body.DispatchedJobID}\``);
}

async function force(s: ApiSession, [idArg]: string[]): Promise<void> {
  const id = await s.api.resolve(KINDS.job, idArg as string, { namespace: s.namespace });
  const { body } = await s.api.request<api.PeriodicForceResponse>('PUT', `${KINDS.job.getPath(id)}/periodic/force`, { query: { namespace: s.namespace } });
  // The child the launch wrote is the evaluation's job.
  const { body: evaluation } = await s.api.get<api.Evaluation>(KINDS.evaluation.getPath(body.EvalID));
  if (s.out.json) return s.out.document({ ...body, JobID: evaluation.JobID });
  s.out.line(`==> Periodic job "${id}" launched "${evaluation.JobID}"`);
  s.out.line(`    Evaluation ID: ${body.EvalID}`);
}
