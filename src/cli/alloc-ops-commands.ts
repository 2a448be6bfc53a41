// `berth alloc stop|restart|signal|fs`: act on one allocation. Stop goes to
// the servers (the allocation moves: a replacement is placed); restart,
// signal and fs go to the node agent that runs it, as logs and exec do.

import type { Command } from 'commander';
import type { AllocFileInfo, Allocation, Evaluation } from '../structs/index.js';
import { ApiClientError, KINDS } from './api-client.js';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import { nodeAgentOf, tokenOf } from './alloc-io-commands.js';
import type { CommandContext } from './csi-command.js';
import { UsageError } from './usage-error.js';


/** Adds `stop`, `restart`, `signal` and `fs` to `berth alloc`. */
export function addAllocOpsCommands(alloc: Command, ctx: CommandContext): void {
  apiCommand(
    alloc
      .command('stop')
      .description('Stop an allocation; the scheduler places a replacement (on another node when it can)')
      .argument('<id>', 'allocation ID or a unique prefix')
      .option('--detach', 'print the evaluation ID and return (the default: wait until a replacement is placed or known blocked)'),
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

/** What the node agent answers to a restart: the tasks restarted, and those not running. */
export interface RestartOutcome {
  restarted: string[];
  notRunning: string[];
}

/** Asks the node agent that runs `a` to restart one task, or every running task (also naming, with allTasks, those that did not run). */
export async function restartAllocTasks(s: ApiSession, a: Allocation, which: { task?: string; allTasks: boolean }, token: string | undefined): Promise<RestartOutcome> {
  const agent = await nodeAgentOf(s, a, token);
  const { body } = await agent.request<RestartOutcome>('POST', `/v1/client/allocation/${encodeURIComponent(a.id)}/restart`, {
    body: { ...(which.task ? { task: which.task } : {}), allTasks: which.allTasks },
  });
  return body;
}

/** Stops `a` through the servers; the scheduler places its replacement. Answers the evaluation that does. */
export async function stopAllocation(s: ApiSession, a: Allocation): Promise<{ evaluation?: Evaluation; index: number }> {
  const { body } = await s.api.request<{ evaluation?: Evaluation; index: number }>('POST', `/v1/allocation/${encodeURIComponent(a.id)}/stop`);
  return body;
}

async function allocOf(s: ApiSession, idArg: string): Promise<Allocation> {
  const id = await s.api.resolve(KINDS.allocation, idArg);
  return (await s.api.get<Allocation>(KINDS.allocation.getPath(id))).body;
}

async function allocStop(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const a = await allocOf(s, idArg as string);
  const body = await stopAllocation(s, a);
  if (s.out.json) return s.out.document(body);
  s.out.line(`Allocation "${shortId(a.id)}" marked for migration (stopped; the scheduler places its replacement)`);
  const ev = body.evaluation;
  if (!ev) return;
  s.out.line(`Evaluation "${shortId(ev.id)}": ${ev.status}${ev.blockedReason ? `: ${ev.blockedReason}` : ev.placed ? `, ${ev.placed} placed` : ''}`);
  if (opts['detach'] || ev.status !== 'blocked') return;
  s.out.line('The replacement waits (for a claim to be released, or for room); `berth job status` shows when it is placed.');
}

function taskArg(args: string[], opts: Record<string, unknown>): string | undefined {
  const positional = args[1];
  const flag = opts['task'] as string | undefined;
  if (positional && flag && positional !== flag) throw new UsageError(`two tasks named: "${positional}" and --task "${flag}"`);
  return positional ?? flag;
}

async function allocRestart(s: ApiSession, args: string[], opts: Record<string, unknown>): Promise<void> {
  const task = taskArg(args, opts);
  if (task && opts['allTasks']) throw new UsageError('name a task or use -all-tasks, not both');
  const a = await allocOf(s, args[0] as string);
  const body = await restartAllocTasks(s, a, { ...(task ? { task } : {}), allTasks: Boolean(opts['allTasks']) }, tokenOf(opts));
  if (s.out.json) return s.out.document(body);
  s.out.line(`Restarted ${body.restarted.length ? body.restarted.map((t) => `"${t}"`).join(', ') : 'no task'} of allocation "${shortId(a.id)}"`);
  if (opts['allTasks'] && body.notRunning.length) s.out.warn(`not running, so not restarted: ${body.notRunning.join(', ')}`);
}

async function allocSignal(s: ApiSession, args: string[], opts: Record<string, unknown>): Promise<void> {
  const task = taskArg(args, opts);
  const signal = String(opts['signal'] ?? 'SIGKILL');
  if (!/^(SIG)?[A-Z0-9]+$/i.test(signal)) throw new UsageError(`-s must name a signal such as SIGHUP, got "${signal}"`);
  const a = await allocOf(s, args[0] as string);
  const agent = await nodeAgentOf(s, a, tokenOf(opts));
  const { body } = await agent.request<{ signal: string; signaled: string[] }>('POST', `/v1/client/allocation/${encodeURIComponent(a.id)}/signal`, {
    body: { signal, ...(task ? { task } : {}) },
  });
  if (s.out.json) return s.out.document(body);
  s.out.line(`Sent ${body.signal} to ${body.signaled.map((t) => `"${t}"`).join(', ')} of allocation "${shortId(a.id)}"`);
}

function fileRow(f: AllocFileInfo): string[] {
  return [f.fileMode, String(f.size), f.modTime, f.linkTarget !== undefined ? `${f.name} -> ${f.linkTarget}` : f.isDir ? `${f.name}/` : f.name];
}

async function allocFs(ctx: CommandContext, s: ApiSession, [idArg, pathArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const path = pathArg ?? '/';
  const a = await allocOf(s, idArg as string);
  const agent = await nodeAgentOf(s, a, tokenOf(opts));
  const { body: st } = await agent.get<AllocFileInfo>(`/v1/client/fs/stat/${encodeURIComponent(a.id)}`, { path });
  if (opts['stat']) {
    if (s.out.json) return s.out.document(st);
    s.out.table(['Mode', 'Size', 'Modified Time', 'Name'], [fileRow(st)]);
    return;
  }
  if (st.isDir) {
    if (opts['follow'] || opts['tail']) throw new UsageError(`${path} is a directory; -tail and -f read files`);
    const { body } = await agent.get<AllocFileInfo[]>(`/v1/client/fs/ls/${encodeURIComponent(a.id)}`, { path });
    if (s.out.json) return s.out.document(body);
    s.out.table(['Mode', 'Size', 'Modified Time', 'Name'], body.map(fileRow));
    return;
  }
  const bytes = opts['bytes'] as string | undefined;
  if (bytes !== undefined && !/^\d+$/.test(bytes)) throw new UsageError(`-c must be a number of bytes, got "${bytes}"`);
  const tail = Boolean(opts['tail']);
  const res = await agent.stream(`/v1/client/fs/${tail || opts['follow'] ? 'stream' : 'cat'}/${encodeURIComponent(a.id)}`, {
    path,
    ...(tail ? { origin: 'end', offset: bytes ?? '1024' } : {}),
    ...(opts['follow'] ? { follow: 'true' } : {}),
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body) ctx.io.stdout(decoder.decode(chunk, { stream: true }));
  } catch (err) {
    if (!s.signal.aborted) throw new ApiClientError('API_UNREACHABLE', `the node agent at ${agent.address} closed the stream`, 0, {}, { cause: err });
  }
  const rest = decoder.decode();
  if (rest) ctx.io.stdout(rest);
}
