// `berth alloc stop|restart|signal|fs`: act on one allocation. Stop goes to
// the servers (PUT /v1/allocation/:id/stop: the allocation moves, a
// replacement is placed); restart, signal and fs go to the node agent that
// runs it, as logs and exec do (Nomad's /v1/client/allocation/:id/restart,
// /signal and /v1/client/fs/...).

import type { Command } from 'commander';
import type * as api from '../api/index.js';
import { jsonObjects } from '../lib/index.js';
import { allocationOf, nodeAgentOf, taskOf, tokenOf } from './alloc-io-commands.js';
import { ApiClientError } from './api-client.js';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { UsageError } from './usage-error.js';

/** Adds `stop`, `restart`, `signal` and `fs` to `berth alloc`. */
export function addAllocOpsCommands(alloc: Command, ctx: CommandContext): void {
  apiCommand(
    alloc
      .command('stop')
      .description('Stop an allocation; the scheduler places a replacement (on another node when it can)')
      .argument('<id>', 'allocation ID or a unique prefix')
      .option('--detach', 'print the evaluation ID and return (the default: say how the replacement placement went)'),
    ['alloc stop 3f2a9c1b', 'alloc stop -detach 3f2a'],
  ).action(apiAction(ctx, allocStop));

  apiCommand(
    alloc
      .command('restart')
      .description("Restart an allocation's tasks in place: the same allocation, its volumes stay mounted")
      .argument('<id>', 'allocation ID or a unique prefix')
      .argument('[task]', 'only this task (default: every running task)')
      .option('--task <name>', 'only this task')
      .option('--all-tasks', 'every task, and say which did not run (finished lifecycle tasks are not run again)'),
    ['alloc restart 3f2a', 'alloc restart 3f2a writer', 'alloc restart -all-tasks 3f2a'],
  ).action(apiAction(ctx, allocRestart));

  apiCommand(
    alloc
      .command('signal')
      .description("Send a signal to an allocation's tasks (default SIGKILL, as Nomad)")
      .argument('<id>', 'allocation ID or a unique prefix')
      .argument('[task]', 'only this task (default: every running task)')
      .option('-s, --signal <sig>', 'the signal, e.g. SIGHUP or HUP', 'SIGKILL')
      .option('--task <name>', 'only this task'),
    ['alloc signal -s SIGHUP 3f2a', 'alloc signal -s USR1 3f2a writer'],
  ).action(apiAction(ctx, allocSignal));

  apiCommand(
    alloc
      .command('fs')
      .description('List, read or follow files in the allocation directory (never outside it)')
      .argument('<id>', 'allocation ID or a unique prefix')
      .argument('[path]', 'a path inside the allocation directory (default /)', '/')
      .option('--stat', 'show the file or directory entry instead of its contents')
      .option('-f, --follow', 'keep printing what is appended to the file, until Ctrl-C')
      .option('--tail', 'start from the end of the file (with -c bytes back; default 10 lines worth: 1024 bytes)')
      .option('-c, --bytes <n>', 'with --tail: how many bytes from the end'),
    ['alloc fs 3f2a', 'alloc fs 3f2a writer/local/out.txt', 'alloc fs -stat 3f2a alloc/logs', 'alloc fs -tail -f 3f2a alloc/logs/writer.stdout.0'],
  ).action(apiAction(ctx, (s, args, opts) => allocFs(ctx, s, args, opts)));
}

/** What a restart did: the tasks asked to restart (those running), and those not running. */
export interface RestartOutcome {
  restarted: string[];
  notRunning: string[];
}

/**
 * Asks the node agent that runs `a` to restart one task, or every running
 * task (with allTasks, Nomad's AllTasks), and says which tasks were running
 * (restarted) and which not, as `a` says.
 */
export async function restartAllocTasks(s: ApiSession, a: api.Allocation, which: { task?: string; allTasks: boolean }, token: string | undefined): Promise<RestartOutcome> {
  const agent = await nodeAgentOf(s, a, token);
  const body: api.AllocationRestartRequest = which.task ? { TaskName: which.task } : { AllTasks: which.allTasks };
  await agent.request<api.GenericResponse>('PUT', `/v1/client/allocation/${encodeURIComponent(a.ID)}/restart`, { body });
  const names = which.task ? [which.task] : Object.keys(a.TaskStates ?? {});
  const running = (t: string): boolean => a.TaskStates?.[t]?.State === 'running';
  return { restarted: names.filter(running), notRunning: names.filter((t) => !running(t)) };
}

/** An evaluation as the CLI reads it here: its status, and why it is blocked. */
export interface EvaluationOutcome {
  id: string;
  status: string;
  blockedReason: string;
}

/**
 * The evaluation `id`: its status and blocked reason (read in Nomad's shape,
 * `Status`/`StatusDescription`, or the camelCase one that predates it).
 */
export async function evaluationOutcome(s: ApiSession, id: string): Promise<EvaluationOutcome> {
  const { body } = await s.api.get<Record<string, unknown>>(`/v1/evaluation/${encodeURIComponent(id)}`);
  const text = (v: unknown): string => (typeof v === 'string' ? v : '');
  return { id, status: text(body['Status'] ?? body['status']), blockedReason: text(body['StatusDescription'] ?? body['blockedReason']) };
}

/** Stops `a` through the servers; the scheduler places its replacement. Answers the stop and its evaluation (when there is one). */
export async function stopAllocation(s: ApiSession, a: Pick<api.Allocation, 'ID'>): Promise<{ stop: api.AllocStopResponse; evaluation?: EvaluationOutcome }> {
  const { body } = await s.api.request<api.AllocStopResponse>('PUT', `/v1/allocation/${encodeURIComponent(a.ID)}/stop`);
  return body.EvalID ? { stop: body, evaluation: await evaluationOutcome(s, body.EvalID) } : { stop: body };
}

async function allocStop(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const a = await allocationOf(s, idArg as string);
  if (opts['detach']) {
    const { body } = await s.api.request<api.AllocStopResponse>('PUT', `/v1/allocation/${encodeURIComponent(a.ID)}/stop`);
    if (s.out.json) return s.out.document(body);
    s.out.line(body.EvalID || 'no evaluation');
    return;
  }
  const { stop, evaluation: ev } = await stopAllocation(s, a);
  if (s.out.json) return s.out.document(stop);
  s.out.line(`Allocation "${shortId(a.ID)}" marked for migration (stopped; the scheduler places its replacement)`);
  if (!ev) return;
  s.out.line(`Evaluation "${shortId(ev.id)}": ${ev.status}${ev.status === 'blocked' && ev.blockedReason ? `: ${ev.blockedReason}` : ''}`);
  if (ev.status !== 'blocked') return;
  s.out.line('The replacement waits (for a claim to be released, or for room); `berth job status` shows when it is placed.');
}

async function allocRestart(s: ApiSession, args: string[], opts: Record<string, unknown>): Promise<void> {
  if ((args[1] || opts['task']) && opts['allTasks']) throw new UsageError('name a task or use -all-tasks, not both');
  const a = await allocationOf(s, args[0] as string);
  const task = args[1] || opts['task'] ? taskOf(a, args[1], opts['task'] as string | undefined) : undefined;
  const body = await restartAllocTasks(s, a, { ...(task ? { task } : {}), allTasks: Boolean(opts['allTasks']) }, tokenOf(opts));
  if (s.out.json) return s.out.document(body);
  s.out.line(`Restarted ${body.restarted.length ? body.restarted.map((t) => `"${t}"`).join(', ') : 'no task'} of allocation "${shortId(a.ID)}"`);
  if (opts['allTasks'] && body.notRunning.length) s.out.warn(`not running, so not restarted: ${body.notRunning.join(', ')}`);
}

async function allocSignal(s: ApiSession, args: string[], opts: Record<string, unknown>): Promise<void> {
  const signal = String(opts['signal'] ?? 'SIGKILL').toUpperCase();
  if (!/^(SIG)?[A-Z0-9]+$/.test(signal)) throw new UsageError(`-s must name a signal such as SIGHUP, got "${signal}"`);
  const sig = signal.startsWith('SIG') ? signal : `SIG${signal}`;
  const a = await allocationOf(s, args[0] as string);
  const task = args[1] || opts['task'] ? taskOf(a, args[1], opts['task'] as string | undefined) : undefined;
  const agent = await nodeAgentOf(s, a, tokenOf(opts));
  const req: api.AllocSignalRequest = { Signal: sig, ...(task ? { Task: task } : {}) };
  const { body } = await agent.request<api.GenericResponse>('PUT', `/v1/client/allocation/${encodeURIComponent(a.ID)}/signal`, { body: req });
  if (s.out.json) return s.out.document(body);
  const signaled = task ? [task] : Object.entries(a.TaskStates ?? {}).filter(([, t]) => t.State === 'running').map(([name]) => name);
  s.out.line(`Sent ${sig} to ${signaled.map((t) => `"${t}"`).join(', ')} of allocation "${shortId(a.ID)}"`);
}

function fileRow(f: api.AllocFileInfo): string[] {
  return [f.FileMode, String(f.Size), f.ModTime, f.LinkTarget !== undefined ? `${f.Name} -> ${f.LinkTarget}` : f.IsDir ? `${f.Name}/` : f.Name];
}

async function allocFs(ctx: CommandContext, s: ApiSession, [idArg, pathArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const path = pathArg ?? '/';
  const a = await allocationOf(s, idArg as string);
  const agent = await nodeAgentOf(s, a, tokenOf(opts));
  const id = encodeURIComponent(a.ID);
  const { body: st } = await agent.get<api.AllocFileInfo>(`/v1/client/fs/stat/${id}`, { path });
  if (opts['stat']) {
    if (s.out.json) return s.out.document(st);
    s.out.table(['Mode', 'Size', 'Modified Time', 'Name'], [fileRow(st)]);
    return;
  }
  if (st.IsDir) {
    if (opts['follow'] || opts['tail']) throw new UsageError(`${path} is a directory; -tail and -f read files`);
    const { body } = await agent.get<api.AllocFileInfo[]>(`/v1/client/fs/ls/${id}`, { path });
    if (s.out.json) return s.out.document(body);
    s.out.table(['Mode', 'Size', 'Modified Time', 'Name'], body.map(fileRow));
    return;
  }
  const bytes = opts['bytes'] as string | undefined;
  if (bytes !== undefined && !/^\d+$/.test(bytes)) throw new UsageError(`-c must be a number of bytes, got "${bytes}"`);
  const tail = Boolean(opts['tail']);
  const decoder = new TextDecoder();
  try {
    if (!tail && !opts['follow']) {
      const res = await agent.stream(`/v1/client/fs/cat/${id}`, { path });
      for await (const chunk of res.body) ctx.io.stdout(decoder.decode(chunk, { stream: true }));
    } else {
      const res = await agent.stream(`/v1/client/fs/stream/${id}`, {
        path,
        follow: opts['follow'] ? 'true' : 'false',
        ...(tail ? { origin: 'end', offset: bytes ?? '1024' } : {}),
      });
      for await (const frame of jsonObjects(res.body)) {
        const data = (frame as api.StreamFrame).Data;
        if (data) ctx.io.stdout(decoder.decode(Buffer.from(data, 'base64'), { stream: true }));
      }
    }
  } catch (err) {
    if (!s.signal.aborted) throw new ApiClientError('API_UNREACHABLE', `the node agent at ${agent.address} closed the stream`, 0, {}, { cause: err });
  }
  const rest = decoder.decode();
  if (rest) ctx.io.stdout(rest);
}
