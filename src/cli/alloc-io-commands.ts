// `berth alloc logs` and `berth alloc exec`: find the allocation's node
// through the API, then talk to that node agent's own address (its
// HTTPAddr): logs over a streamed GET, exec over a WebSocket carrying
// Nomad-style JSON frames (stdin, stdout, stderr, tty_size, exit code).

import type { Command } from 'commander';
import { AbortedError } from '../lib/index.js';
import type * as Api from '../api/index.js';
import type { Allocation } from '../structs/index.js';
import { ApiClient, ApiClientError, KINDS } from './api-client.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { tokenSetting } from './agent-address.js';
import { UsageError } from './usage-error.js';

/** The allocation's full ID and an API client for the node agent running it. */
async function nodeAgentFor(s: ApiSession, idArg: string, token: string | undefined): Promise<{ allocId: string; agent: ApiClient; alloc: Allocation }> {
  const allocId = await s.api.resolve(KINDS.allocation, idArg);
  const { body: alloc } = await s.api.get<Allocation>(KINDS.allocation.getPath(allocId));
  if (!alloc.nodeId) throw new ApiClientError('CLI_NOT_PLACED', `allocation ${allocId} is not placed on a node`, 0);
  return { allocId, alloc, agent: await nodeAgentOf(s, alloc, token) };
}

/** An API client for the node agent running `alloc` (placed), at the node's HTTPAddr. */
export async function nodeAgentOf(s: ApiSession, alloc: Allocation, token: string | undefined): Promise<ApiClient> {
  const { body: node } = await s.api.get<Api.Node>(KINDS.node.getPath(alloc.nodeId));
  return nodeAgentAt(s, node, token);
}

/** An API client for the node's own agent, at its HTTPAddr (as Nomad's CLI reaches a client). Throws CLI_NO_NODE_ADDRESS when it has none. */
export function nodeAgentAt(s: ApiSession, node: Pick<Api.Node, 'ID' | 'Name' | 'HTTPAddr' | 'TLSEnabled'>, token: string | undefined): ApiClient {
  if (!node.HTTPAddr) throw new ApiClientError('CLI_NO_NODE_ADDRESS', `node ${node.Name} (${node.ID.slice(0, 8)}) reports no HTTP address; is its agent running?`, 0);
  const address = `${node.TLSEnabled ? 'https' : 'http'}://${node.HTTPAddr}`;
  return new ApiClient({ address, signal: s.signal, answerTimeoutMs: s.api.answerTimeoutMs, ...(token ? { token } : {}) });
}

/** The --token flag, else $BERTH_TOKEN. */
export function tokenOf(opts: Record<string, unknown>): string | undefined {
  return tokenSetting(opts['token'] as string | undefined);
}

/** Adds `logs` and `exec` to `berth alloc`. */
export function addAllocIoCommands(alloc: Command, ctx: CommandContext): void {
  apiCommand(
    alloc
      .command('logs')
      .description("Print a task's stdout (or stderr); -f follows new output until Ctrl-C")
      .argument('<id>', 'allocation ID or a unique prefix')
      .argument('[task]', 'task name (needed when the group has several tasks)')
      .option('-f, --follow', 'keep printing new output as it is written')
      .option('--stderr', 'print stderr instead of stdout')
      .option('--tail <n>', 'only the last n lines (then new ones with -f)'),
    ['alloc logs 3f2a9c1b', 'alloc logs -f 3f2a writer', 'alloc logs --stderr --tail 20 3f2a'],
  ).action(apiAction(ctx, (s, args, opts) => allocLogs(ctx, s, args, opts)));

  apiCommand(
    alloc
      .command('exec')
      .description('Run a command inside a running task; -t gives it a terminal (interactive shells)')
      .argument('<id>', 'allocation ID or a unique prefix')
      .argument('<command...>', 'the command and its arguments (put -- before a command that has flags of its own)')
      .option('-t, --tty', 'run on a pseudo-terminal, with this terminal in raw mode and its resizes forwarded')
      .option('--task <name>', 'task name (needed when the group has several tasks)')
      .passThroughOptions(),
    ['alloc exec 3f2a cat /etc/hostname', 'alloc exec -t 3f2a /bin/sh', 'alloc exec --task writer 3f2a -- ls -la /data'],
  ).action(apiAction(ctx, (s, args, opts) => allocExec(ctx, s, args, opts)));
}

async function allocLogs(ctx: CommandContext, s: ApiSession, [idArg, task]: string[], opts: Record<string, unknown>): Promise<void> {
  const tail = opts['tail'] as string | undefined;
  if (tail === '-n') throw new UsageError("Nomad's `-tail -n N` is `-tail N` in berth (-n names the namespace here)");
  if (tail !== undefined && !/^\d+$/.test(tail)) throw new UsageError(`--tail must be a whole number of lines, got "${tail}"`);
  const { allocId, agent } = await nodeAgentFor(s, idArg as string, tokenOf(opts));
  const res = await agent.stream(`/v1/client/allocation/${encodeURIComponent(allocId)}/logs`, {
    task,
    type: opts['stderr'] ? 'stderr' : 'stdout',
    follow: opts['follow'] ? 'true' : undefined,
    lines: tail,
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body) ctx.io.stdout(decoder.decode(chunk, { stream: true }));
  } catch (err) {
    // Ctrl-C ends a follow: that is how it is meant to stop.
    if (!s.signal.aborted) throw new ApiClientError('API_UNREACHABLE', `the node agent at ${agent.address} closed the log stream`, 0, {}, { cause: err });
  }
  const rest = decoder.decode();
  if (rest) ctx.io.stdout(rest);
}

interface ExecFrame {
  stdout?: { data?: string };
  stderr?: { data?: string };
  exited?: boolean;
  result?: { exit_code?: number };
  error?: { code?: string; message?: string };
}

async function allocExec(ctx: CommandContext, s: ApiSession, [idArg, ...rest]: string[], opts: Record<string, unknown>): Promise<void> {
  const command = (rest.flat() as string[]).filter((w, i) => !(i === 0 && w === '--'));
  if (command.length === 0) throw new UsageError('give the command to run, e.g. berth alloc exec 3f2a /bin/sh');
  const tty = Boolean(opts['tty']);
  const token = tokenOf(opts);
  const { allocId, agent } = await nodeAgentFor(s, idArg as string, token);
  const url = new URL(`${agent.address.replace(/^http/, 'ws')}/v1/client/allocation/${encodeURIComponent(allocId)}/exec`);
  for (const word of command) url.searchParams.append('command', word);
  if (opts['task']) url.searchParams.set('task', opts['task'] as string);
  if (tty) {
    url.searchParams.set('tty', 'true');
    if (process.stdout.columns && process.stdout.rows) {
      url.searchParams.set('width', String(process.stdout.columns));
      url.searchParams.set('height', String(process.stdout.rows));
    }
  }
  // ws loads with `alloc exec` only.
  const { default: WebSocket } = await import('ws');
  const ws = new WebSocket(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const stdin = process.stdin;
  const rawMode = tty && stdin.isTTY;
  const send = (frame: unknown): void => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };
  const onData = (d: Buffer): void => send({ stdin: { data: d.toString('base64') } });
  const onEnd = (): void => send({ stdin: { close: true } });
  const onResize = (): void => send({ tty_size: { width: process.stdout.columns, height: process.stdout.rows } });
  const onAbort = (): void => ws.close();
  s.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const exitCode = await new Promise<number>((resolve, reject) => {
      let result: number | undefined;
      ws.on('unexpected-response', (_req, res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString()));
        res.on('end', () => {
          let body: { code?: string; message?: string } = {};
          try {
            body = JSON.parse(text) as typeof body;
          } catch {
            /* not JSON */
          }
          reject(new ApiClientError(body.code ?? `HTTP_${res.statusCode ?? 0}`, body.message ?? `the node agent answered ${res.statusCode ?? 0}`, res.statusCode ?? 0));
        });
      });
      ws.on('error', (err) => reject(new ApiClientError('API_UNREACHABLE', `cannot reach the node agent at ${agent.address} (${(err as NodeJS.ErrnoException).code ?? err.message})`, 0, {}, { cause: err })));
      ws.on('open', () => {
        if (rawMode) stdin.setRawMode(true);
        stdin.on('data', onData);
        stdin.on('end', onEnd);
        if (tty) process.stdout.on('resize', onResize);
        stdin.resume();
      });
      ws.on('message', (raw: Buffer) => {
        const frame = JSON.parse(raw.toString('utf8')) as ExecFrame;
        if (frame.stdout?.data) process.stdout.write(Buffer.from(frame.stdout.data, 'base64'));
        if (frame.stderr?.data) process.stderr.write(Buffer.from(frame.stderr.data, 'base64'));
        if (frame.exited) result = frame.result?.exit_code ?? 0;
        if (frame.error) reject(new ApiClientError(frame.error.code ?? 'TASK_EXEC_FAILED', frame.error.message ?? 'exec failed', 0));
      });
      ws.on('close', () => {
        if (result !== undefined) resolve(result);
        else if (s.signal.aborted) reject(new AbortedError('interrupted'));
        else reject(new ApiClientError('API_UNREACHABLE', `the node agent at ${agent.address} closed the session before the command exited`, 0));
      });
    });
    ctx.state.exitCode = exitCode;
  } finally {
    s.signal.removeEventListener('abort', onAbort);
    stdin.off('data', onData);
    stdin.off('end', onEnd);
    process.stdout.off('resize', onResize);
    if (rawMode) stdin.setRawMode(false);
    stdin.pause();
    stdin.unref?.();
  }
}
