// `berth alloc logs` and `berth alloc exec`: find the allocation's node
// through the API, then talk to that node agent's own address (its HTTP
// address) with Nomad's client routes: logs as Nomad's stream of JSON frames
// (GET /v1/client/fs/logs/:id), exec over a WebSocket carrying Nomad's JSON
// frames (stdin, stdout, stderr, tty_size, the exit code).

import type { Command } from 'commander';
import type * as api from '../api/index.js';
import { AbortedError, jsonObjects } from '../lib/index.js';
import { ApiClient, ApiClientError, KINDS } from './api-client.js';
import { apiAction, apiCommand, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { tokenSetting } from './agent-address.js';
import { UsageError } from './usage-error.js';

/** Nomad's `alloc logs -tail` reads this many bytes per line asked for (its bytesToLines). */
const BYTES_PER_LINE = 120;
/** Lines `-tail` shows when neither -n nor -c says. */
const DEFAULT_TAIL_LINES = 10;

/**
 * The full ID of the allocation `idArg` names (an ID or a unique prefix, in
 * any namespace: allocation IDs are unique) and the allocation.
 */
export async function allocationOf(s: ApiSession, idArg: string): Promise<api.Allocation> {
  const id = await s.api.resolve(KINDS.allocation, idArg, { namespace: '*' });
  return (await s.api.get<api.Allocation>(KINDS.allocation.getPath(id))).body;
}

/** An API client for the node agent running `alloc` (placed), at the node's HTTPAddr. */
export async function nodeAgentOf(s: ApiSession, alloc: Pick<api.Allocation, 'ID' | 'NodeID'>, token: string | undefined): Promise<ApiClient> {
  if (!alloc.NodeID) throw new ApiClientError('CLI_NOT_PLACED', `allocation ${alloc.ID} is not placed on a node`, 0);
  const { body: node } = await s.api.get<api.Node>(KINDS.node.getPath(alloc.NodeID));
  return nodeAgentAt(s, node, token);
}

/** An API client for the node's own agent, at its HTTPAddr (as Nomad's CLI reaches a client). Throws CLI_NO_NODE_ADDRESS when it has none. */
export function nodeAgentAt(s: ApiSession, node: Pick<api.Node, 'ID' | 'Name' | 'HTTPAddr' | 'TLSEnabled'>, token: string | undefined): ApiClient {
  if (!node.HTTPAddr) throw new ApiClientError('CLI_NO_NODE_ADDRESS', `node ${node.Name} (${node.ID.slice(0, 8)}) reports no HTTP address; is its agent running?`, 0);
  const address = /^https?:\/\//.test(node.HTTPAddr) ? node.HTTPAddr : `${node.TLSEnabled ? 'https' : 'http'}://${node.HTTPAddr}`;
  return new ApiClient({ address, signal: s.signal, answerTimeoutMs: s.api.answerTimeoutMs, ...(token ? { token } : {}) });
}

/** The --token flag, else $BERTH_TOKEN. */
export function tokenOf(opts: Record<string, unknown>): string | undefined {
  return tokenSetting(opts['token'] as string | undefined);
}

/**
 * The task a command acts on: the one named (positional or --task, not two
 * different ones), else the allocation's only task. Throws UsageError for
 * two names, ApiClientError CLI_TASK for a task the allocation does not
 * run or a missing name when it runs several (Nomad's "Failed to validate task").
 */
export function taskOf(a: api.Allocation, positional: string | undefined, flag: string | undefined): string {
  if (positional && flag && positional !== flag) throw new UsageError(`two tasks named: "${positional}" and --task "${flag}"`);
  const named = positional ?? flag;
  const names = Object.keys(a.TaskStates ?? {});
  if (named) {
    if (names.length && !names.includes(named)) throw new ApiClientError('CLI_TASK', `allocation ${a.ID} has no task "${named}" (tasks: ${names.join(', ')})`, 0);
    return named;
  }
  if (names.length === 1) return names[0] as string;
  throw new ApiClientError('CLI_TASK', `allocation ${a.ID} runs several tasks (${names.join(', ')}); name one`, 0);
}

/** Adds `logs` and `exec` to `berth alloc`. */
export function addAllocIoCommands(alloc: Command, ctx: CommandContext): void {
  apiCommand(
    alloc
      .command('logs')
      .description("Print a task's stdout (or stderr); -f follows new output until Ctrl-C; -tail starts near the end")
      .argument('<id>', 'allocation ID or a unique prefix')
      .argument('[task]', 'task name (needed when the group has several tasks)')
      .option('--task <name>', 'task name (instead of the argument)')
      .option('-f, --follow', 'keep printing new output as it is written')
      .option('--stderr', 'print stderr instead of stdout')
      .option('--tail', `start near the end: the last lines (-n, default ${DEFAULT_TAIL_LINES}) or bytes (-c)`)
      .option('-n <lines>', 'with -tail: how many lines')
      .option('-c <bytes>', 'with -tail: how many bytes'),
    ['alloc logs 3f2a9c1b', 'alloc logs -f 3f2a writer', 'alloc logs -stderr -tail -n 20 3f2a', 'alloc logs -tail -c 4096 3f2a'],
    { shortNamespace: false },
  ).action(apiAction(ctx, (s, args, opts) => allocLogs(ctx, s, args, opts)));

  apiCommand(
    alloc
      .command('exec')
      .description('Run a command inside a running task; -t gives it a terminal (interactive shells)')
      .argument('<id>', 'allocation ID or a unique prefix')
      .argument('<command...>', 'the command and its arguments (put -- before a command that has flags of its own)')
      .option('-i, --stdin [bool]', "pass this process's stdin to the command (default true)", parseBool)
      .option('-t, --tty [bool]', 'run on a pseudo-terminal, with this terminal in raw mode and its resizes forwarded (default: when stdin and stdout are terminals)', parseBool)
      .option('--task <name>', 'task name (needed when the group has several tasks)')
      .passThroughOptions(),
    ['alloc exec 3f2a cat /etc/hostname', 'alloc exec -t 3f2a /bin/sh', 'alloc exec -i=false 3f2a ls', 'alloc exec --task writer 3f2a -- ls -la /data'],
  ).action(apiAction(ctx, (s, args, opts) => allocExec(ctx, s, args, opts)));
}

/** `-t`, `-t=false`, `-i=true`: Nomad's boolean flags with a value. */
function parseBool(value: string): boolean {
  const v = value.replace(/^=/, '');
  if (['1', 't', 'true'].includes(v.toLowerCase())) return true;
  if (['0', 'f', 'false'].includes(v.toLowerCase())) return false;
  throw new UsageError(`expected true or false, got "${value}"`);
}

function wholeNumber(flag: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value)) throw new UsageError(`${flag} must be a whole number, got "${String(value)}"`);
  return Number(value);
}

async function allocLogs(ctx: CommandContext, s: ApiSession, [idArg, taskArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const lines = wholeNumber('-n', opts['n']);
  const bytes = wholeNumber('-c', opts['c']);
  if (lines !== undefined && bytes !== undefined) throw new UsageError('both -n and -c set; give one');
  const tail = Boolean(opts['tail']) || lines !== undefined || bytes !== undefined;
  const a = await allocationOf(s, idArg as string);
  const task = taskOf(a, taskArg, opts['task'] as string | undefined);
  const agent = await nodeAgentOf(s, a, tokenOf(opts));
  const keepLines = tail && bytes === undefined ? (lines ?? DEFAULT_TAIL_LINES) : undefined;
  const res = await agent.stream(`/v1/client/fs/logs/${encodeURIComponent(a.ID)}`, {
    task,
    type: opts['stderr'] ? 'stderr' : 'stdout',
    follow: opts['follow'] ? 'true' : 'false',
    ...(tail ? { origin: 'end', offset: String(bytes ?? (keepLines as number) * BYTES_PER_LINE) } : {}),
  });
  const decoder = new TextDecoder();
  const write = (data: Uint8Array): void => ctx.io.stdout(decoder.decode(data, { stream: true }));
  // -tail -n: the first burst is cut to its last lines (Nomad's line limit reader); what follows passes.
  let held: Buffer[] | undefined = keepLines === undefined ? undefined : [];
  const release = (): void => {
    if (!held) return;
    write(lastLines(Buffer.concat(held), keepLines as number));
    held = undefined;
  };
  const timer = held ? setTimeout(release, 1000) : undefined;
  try {
    for await (const raw of jsonObjects(res.body)) {
      const frame = raw as api.StreamFrame;
      if (!frame.Data) {
        // A heartbeat: the burst is over.
        if (!frame.FileEvent) release();
        continue;
      }
      const data = Buffer.from(frame.Data, 'base64');
      if (held) held.push(data);
      else write(data);
    }
  } catch (err) {
    // Ctrl-C ends a follow: that is how it is meant to stop.
    if (!s.signal.aborted) throw new ApiClientError('API_UNREACHABLE', `the node agent at ${agent.address} closed the log stream`, 0, {}, { cause: err });
  } finally {
    clearTimeout(timer);
  }
  if (!s.signal.aborted) release();
  const rest = decoder.decode();
  if (rest) ctx.io.stdout(rest);
}

/** The last `n` lines of `buf` (a final newline does not count as a line of its own). */
export function lastLines(buf: Buffer, n: number): Buffer {
  if (n <= 0) return Buffer.alloc(0);
  let end = buf.length;
  if (end > 0 && buf[end - 1] === 0x0a) end -= 1;
  let seen = 0;
  for (let i = end - 1; i >= 0; i--) {
    if (buf[i] === 0x0a && ++seen === n) return buf.subarray(i + 1);
  }
  return buf;
}

async function allocExec(ctx: CommandContext, s: ApiSession, [idArg, ...rest]: string[], opts: Record<string, unknown>): Promise<void> {
  const command = (rest.flat() as string[]).filter((w, i) => !(i === 0 && w === '--'));
  if (command.length === 0) throw new UsageError('give the command to run, e.g. berth alloc exec 3f2a /bin/sh');
  const stdin = process.stdin;
  const tty = opts['tty'] === undefined ? Boolean(stdin.isTTY && process.stdout.isTTY) : opts['tty'] !== false;
  const passStdin = opts['stdin'] !== false;
  const token = tokenOf(opts);
  const a = await allocationOf(s, idArg as string);
  const task = taskOf(a, undefined, opts['task'] as string | undefined);
  const agent = await nodeAgentOf(s, a, token);
  const url = new URL(`${agent.address.replace(/^http/, 'ws')}/v1/client/allocation/${encodeURIComponent(a.ID)}/exec`);
  url.searchParams.set('task', task);
  url.searchParams.set('tty', String(tty));
  url.searchParams.set('command', JSON.stringify(command));
  // ws loads with `alloc exec` only.
  const { default: WebSocket } = await import('ws');
  const ws = new WebSocket(url, { headers: token ? { 'X-Nomad-Token': token } : {} });
  const rawMode = tty && stdin.isTTY;
  const send = (frame: api.ExecStreamingInput): void => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(frame));
  };
  const onData = (d: Buffer): void => send({ stdin: { data: d.toString('base64') } });
  const onEnd = (): void => send({ stdin: { close: true } });
  const onResize = (): void => send({ tty_size: { width: process.stdout.columns, height: process.stdout.rows } });
  const onAbort = (): void => ws.close();
  s.signal.addEventListener('abort', onAbort, { once: true });
  // Nomad's client sends a heartbeat every 10 s.
  const heartbeat = setInterval(() => send({}), 10_000);
  heartbeat.unref();
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
            body = { message: text.trim() || undefined };
          }
          const code = body.code ?? (typeof res.headers['x-berth-error-code'] === 'string' ? res.headers['x-berth-error-code'] : `HTTP_${res.statusCode ?? 0}`);
          reject(new ApiClientError(code, body.message ?? `the node agent answered ${res.statusCode ?? 0}`, res.statusCode ?? 0));
        });
      });
      ws.on('error', (err) => reject(new ApiClientError('API_UNREACHABLE', `cannot reach the node agent at ${agent.address} (${(err as NodeJS.ErrnoException).code ?? err.message})`, 0, {}, { cause: err })));
      ws.on('open', () => {
        if (tty && process.stdout.columns && process.stdout.rows) onResize();
        if (!passStdin) {
          onEnd();
          return;
        }
        if (rawMode) stdin.setRawMode(true);
        stdin.on('data', onData);
        stdin.on('end', onEnd);
        if (tty) process.stdout.on('resize', onResize);
        stdin.resume();
      });
      ws.on('message', (raw: Buffer) => {
        const frame = JSON.parse(raw.toString('utf8')) as api.ExecStreamingOutput;
        if (frame.stdout?.data) process.stdout.write(Buffer.from(frame.stdout.data, 'base64'));
        if (frame.stderr?.data) process.stderr.write(Buffer.from(frame.stderr.data, 'base64'));
        if (frame.exited) result = frame.result?.exit_code ?? 0;
      });
      ws.on('close', (code: number, reason: Buffer) => {
        if (result !== undefined) resolve(result);
        else if (s.signal.aborted) reject(new AbortedError('interrupted'));
        else if (reason.length) reject(new ApiClientError(code === 1011 ? 'TASK_EXEC_FAILED' : 'EXEC_REFUSED', reason.toString('utf8'), 0));
        else reject(new ApiClientError('API_UNREACHABLE', `the node agent at ${agent.address} closed the session before the command exited`, 0));
      });
    });
    ctx.state.exitCode = exitCode;
  } finally {
    clearInterval(heartbeat);
    s.signal.removeEventListener('abort', onAbort);
    stdin.off('data', onData);
    stdin.off('end', onEnd);
    process.stdout.off('resize', onResize);
    if (rawMode) stdin.setRawMode(false);
    stdin.pause();
    stdin.unref?.();
  }
}
