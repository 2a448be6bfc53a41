// The node agent's own HTTP endpoints, served by a client agent's listener
// (or, in dev mode, by the server's): a task's logs, read or followed, and a
// command run inside a task over a WebSocket (Nomad's exec protocol: JSON
// frames with base64 data), and garbage collection on demand. Every route needs the management role.

import { Readable, Writable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import {
  AllocRunner,
  followTaskLogs,
  LogsError,
  readTaskLogs,
  type Client,
  type LogStream,
  type TaskDriver,
  type TaskResourceUsage,
  type TaskLogsLocation,
} from '../client/index.js';
import { NodeMetaApplyRequest, type NodeMetaResponse } from '../api/index.js';
import { describeError, type Logger } from '../lib/index.js';
import { registerAllocOpsRoutes } from './alloc-ops-routes.js';
import { runningTaskUsage } from './task-metrics.js';

/** What the routes read: the running Client (undefined until it started) and its drivers. */
export interface ClientRoutesDeps {
  client(): Client | undefined;
  drivers: ReadonlyMap<string, TaskDriver>;
  logger: Logger;
}

/** An HTTP answer with the API's `{ code, message, details }` envelope. */
class RouteError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

interface TaskTarget {
  runner: AllocRunner;
  taskName: string;
}

function findTask(deps: ClientRoutesDeps, allocId: string, task: string | undefined): TaskTarget {
  const client = deps.client();
  if (!client || client.state !== 'running') throw new RouteError(503, 'CLIENT_NOT_READY', 'the node agent is not running yet');
  const runner = client.runner(allocId);
  if (!(runner instanceof AllocRunner)) throw new RouteError(404, 'NOT_FOUND', `allocation ${allocId} does not run on this node`);
  const names = Object.keys(runner.taskIds());
  if (task) {
    if (!names.includes(task)) throw new RouteError(404, 'NOT_FOUND', `allocation ${allocId} has no task "${task}" (tasks: ${names.join(', ')})`);
    return { runner, taskName: task };
  }
  if (names.length !== 1) throw new RouteError(400, 'TASK_REQUIRED', `allocation ${allocId} runs several tasks (${names.join(', ')}); name one`);
  return { runner, taskName: names[0] as string };
}

function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  if (err instanceof RouteError) return reply.status(err.status).send({ code: err.code, message: err.message, details: {} });
  if (err instanceof LogsError) {
    return reply.status(err.code === 'LOGS_DISABLED' ? 400 : 404).send({ code: err.code, message: err.message, details: {} });
  }
  throw err;
}

const META_KEY = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/**
 * A node meta change from Nomad's NodeMetaApplyRequest body (`Meta`: key ->
 * value, null removes the key; Berth's `BerthUnset`: dynamic keys to forget).
 * RouteError 400 when malformed.
 */
function metaChange(body: unknown): { set: Record<string, string | null>; unset: string[] } {
  const parsed = NodeMetaApplyRequest.safeParse(body ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RouteError(400, 'INVALID', `${issue?.path.join('.') || 'request body'}: ${issue?.message ?? 'malformed'} (Meta is an object of key -> string, or null to remove it)`);
  }
  for (const k of [...Object.keys(parsed.data.Meta), ...(parsed.data.BerthUnset ?? [])]) {
    if (!META_KEY.test(k)) throw new RouteError(400, 'INVALID', `meta key "${k}" must be letters, digits, "_", "." or "-"`);
  }
  return { set: { ...parsed.data.Meta }, unset: parsed.data.BerthUnset ?? [] };
}

/** Nomad's NodeMetaResponse from the client's view of its meta. */
function metaResponse(view: { meta: Record<string, string>; dynamic: Record<string, string | null>; static: Record<string, string> }): NodeMetaResponse {
  return { Meta: view.meta, Dynamic: view.dynamic, Static: view.static };
}

type LogsQuery = { task?: string; type?: string; follow?: string; lines?: string };

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

/**
 * A one-at-a-time async queue: push() items, end() it; iterating yields
 * them in order and finishes after end(). What the WebSocket's stdin and
 * resize frames become for execTaskStreaming.
 */
class FrameQueue<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #ended = false;
  #wake: (() => void) | undefined;

  push(item: T): void {
    if (this.#ended) return;
    this.#items.push(item);
    this.#wake?.();
  }

  end(): void {
    this.#ended = true;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      const item = this.#items.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.#ended) return;
      await new Promise<void>((resolve) => (this.#wake = resolve));
      this.#wake = undefined;
    }
  }
}

function frameWriter(socket: WebSocket, stream: 'stdout' | 'stderr'): Writable {
  return new Writable({
    write(chunk: Buffer | string, _enc, done) {
      const data = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ [stream]: { data: data.toString('base64') } }), () => done());
      else done();
    },
  });
}

/**
 * Registers `GET /v1/client/allocation/:id/stats` (each running task's
 * resource usage, from its cgroup; read access), `GET /v1/client/allocation/:id/logs` (query task, type
 * stdout|stderr, follow=true, lines=N; a streamed octet body) and
 * `GET /v1/client/allocation/:id/exec` (WebSocket; query task, tty=true,
 * command repeated once per argv word, width/height). Both declare
 * `config.access = 'write'` (management tokens), which the listener's auth
 * hook enforces. The app must have @fastify/websocket registered. Followed
 * logs and exec sessions end when the listener closes.
 */
export function registerClientRoutes(app: FastifyInstance, deps: ClientRoutesDeps): void {
  const log = deps.logger.child({ component: 'client-http' });
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort(new Error('agent closing')));
  registerAllocOpsRoutes(app, deps, closing.signal);

  // Garbage-collects every finished allocation on this node now (their directories, secrets and the
  // agent's memory of them); running ones and ones with volumes still mounted are kept. `berth system gc`
  // calls it. Answers { collected: [allocation IDs] }.
  app.post('/v1/client/gc', { config: { access: 'write' } }, async (_req, reply) => {
    try {
      const client = deps.client();
      if (!client || client.state !== 'running') throw new RouteError(503, 'CLIENT_NOT_READY', 'the node agent is not running yet');
      const collected = await client.collectGarbage();
      log.info({ collected: collected.length }, 'garbage collection requested');
      return reply.send({ collected });
    } catch (err) {
      return sendError(reply, err);
    }
  });

  // The node's meta (Nomad 1.5+'s /v1/client/metadata): GET answers Nomad's NodeMetaResponse (merged,
  // dynamic and static meta); POST (and PUT) takes a NodeMetaApplyRequest and applies dynamic meta, kept
  // across restarts. `node_id` (the query, or NodeID in the body) may name only this agent's node: Berth
  // does not relay to another node's agent (ask that agent, at its node's HTTPAddr).
  const readyClient = (nodeId?: string): Client => {
    const client = deps.client();
    if (!client || client.state !== 'running') throw new RouteError(503, 'CLIENT_NOT_READY', 'the node agent is not running yet');
    if (nodeId && nodeId !== client.nodeId) {
      throw new RouteError(404, 'NOT_FOUND', `node ${nodeId} is not this agent's node (${client.nodeId}); ask the agent of that node, at its HTTPAddr`);
    }
    return client;
  };
  app.get<{ Querystring: { node_id?: string } }>('/v1/client/metadata', { config: { access: 'read' } }, async (req, reply) => {
    try {
      return reply.send(metaResponse(readyClient(req.query.node_id).nodeMeta()));
    } catch (err) {
      return sendError(reply, err);
    }
  });
  const applyMeta = async (req: FastifyRequest<{ Querystring: { node_id?: string } }>, reply: FastifyReply): Promise<FastifyReply> => {
    try {
      const bodyNode = (req.body as { NodeID?: unknown } | undefined)?.NodeID;
      const client = readyClient(req.query.node_id || (typeof bodyNode === 'string' ? bodyNode : undefined));
      const { set, unset } = metaChange(req.body);
      const view = client.applyNodeMeta(set, unset);
      log.info({ set: Object.keys(set), unset }, 'node meta applied');
      return reply.send(metaResponse(view));
    } catch (err) {
      return sendError(reply, err);
    }
  };
  app.put<{ Querystring: { node_id?: string } }>('/v1/client/metadata', { config: { access: 'write' } }, applyMeta);
  app.post<{ Querystring: { node_id?: string } }>('/v1/client/metadata', { config: { access: 'write' } }, applyMeta);

  // Resource usage of the allocation's running tasks, from their cgroups (/proc without one).
  // Which node this agent runs (`node drain -self`).
  app.get('/v1/client/self', { config: { access: 'read' } }, async (_req, reply) => {
    const client = deps.client();
    if (!client || client.state !== 'running') return sendError(reply, new RouteError(503, 'CLIENT_NOT_READY', 'the node agent is not running yet'));
    return { nodeId: client.nodeId };
  });

  app.get<{ Params: { id: string } }>('/v1/client/allocation/:id/stats', { config: { access: 'read' } }, async (req, reply) => {
    try {
      const client = deps.client();
      if (!client || client.state !== 'running') throw new RouteError(503, 'CLIENT_NOT_READY', 'the node agent is not running yet');
      if (!(client.runner(req.params.id) instanceof AllocRunner)) throw new RouteError(404, 'NOT_FOUND', `allocation ${req.params.id} does not run on this node`);
      const usage = await runningTaskUsage(client, deps.drivers);
      const tasks: Record<string, TaskResourceUsage> = {};
      for (const { allocId, task, usage: u } of usage.values()) if (allocId === req.params.id) tasks[task] = u;
      return reply.send({ allocId: req.params.id, tasks });
    } catch (err) {
      return sendError(reply, err);
    }
  });

  app.get<{ Params: { id: string }; Querystring: LogsQuery }>(
    '/v1/client/allocation/:id/logs',
    { config: { access: 'write' } },
    async (req, reply) => {
      const q = req.query;
      try {
        const stream = q.type ?? 'stdout';
        if (stream !== 'stdout' && stream !== 'stderr') throw new RouteError(400, 'INVALID', 'type must be stdout or stderr');
        const lines = q.lines === undefined || q.lines === '' ? undefined : Number(q.lines);
        if (lines !== undefined && (!Number.isInteger(lines) || lines < 0)) throw new RouteError(400, 'INVALID', 'lines must be a whole number');
        const { runner, taskName } = findTask(deps, req.params.id, q.task);
        const loc: TaskLogsLocation = { dir: runner.allocDir.task(taskName).logsDir, taskName, stream: stream as LogStream };
        const initial = await readTaskLogs(loc); // throws LOGS_DISABLED before any byte is sent
        reply.header('content-type', 'application/octet-stream').header('x-berth-task', taskName);
        if (q.follow !== 'true') return reply.send(lines === undefined ? initial : lastLines(initial, lines));
        const stop = new AbortController();
        const onClosing = (): void => stop.abort();
        closing.signal.addEventListener('abort', onClosing, { once: true });
        reply.raw.once('close', () => {
          closing.signal.removeEventListener('abort', onClosing);
          stop.abort();
        });
        const body = async function* (): AsyncGenerator<Buffer> {
          let first = true;
          for await (const chunk of followTaskLogs(loc, { signal: stop.signal })) {
            yield first && lines !== undefined ? lastLines(chunk, lines) : chunk;
            first = false;
          }
        };
        return reply.send(Readable.from(body()));
      } catch (err) {
        return sendError(reply, err);
      }
    },
  );

  app.get<{ Params: { id: string }; Querystring: Record<string, string | string[] | undefined> }>(
    '/v1/client/allocation/:id/exec',
    { websocket: true, config: { access: 'write' } },
    (socket: WebSocket, req: FastifyRequest<{ Params: { id: string }; Querystring: Record<string, string | string[] | undefined> }>) => {
      const q = req.query;
      const stdin = new FrameQueue<Buffer>();
      const resize = new FrameQueue<{ cols: number; rows: number }>();
      const abort = new AbortController();
      const onClosing = (): void => abort.abort(new Error('agent closing'));
      closing.signal.addEventListener('abort', onClosing, { once: true });
      const fail = (code: string, message: string): void => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ error: { code, message } }));
        socket.close(1000);
      };
      socket.on('message', (raw: Buffer) => {
        try {
          const frame = JSON.parse(raw.toString('utf8')) as { stdin?: { data?: string; close?: boolean }; tty_size?: { width?: number; height?: number } };
          if (frame.stdin?.data) stdin.push(Buffer.from(frame.stdin.data, 'base64'));
          if (frame.stdin?.close) stdin.end();
          if (frame.tty_size?.width && frame.tty_size.height) resize.push({ cols: frame.tty_size.width, rows: frame.tty_size.height });
        } catch {
          fail('INVALID', 'frames must be JSON objects');
        }
      });
      socket.on('close', () => {
        closing.signal.removeEventListener('abort', onClosing);
        stdin.end();
        resize.end();
        abort.abort(new Error('the exec client went away'));
      });
      void (async () => {
        try {
          const command = (Array.isArray(q['command']) ? q['command'] : q['command'] !== undefined ? [q['command']] : []).filter((w) => w !== '');
          if (command.length === 0) throw new RouteError(400, 'INVALID', 'a command is required');
          const tty = q['tty'] === 'true';
          const { runner, taskName } = findTask(deps, req.params.id, typeof q['task'] === 'string' ? q['task'] : undefined);
          const taskId = runner.taskIds()[taskName];
          if (!taskId) throw new RouteError(409, 'TASK_NOT_RUNNING', `task "${taskName}" is not running`);
          const driver = [...deps.drivers.values()].find((d) => {
            try {
              d.inspectTask(taskId);
              return true;
            } catch {
              return false;
            }
          });
          if (!driver) throw new RouteError(409, 'TASK_NOT_RUNNING', `task "${taskName}" is not running`);
          const width = Number(q['width']);
          const height = Number(q['height']);
          log.info({ allocId: req.params.id, task: taskName, tty, caller: req.caller?.name }, 'exec started');
          const { exitCode } = await driver.execTaskStreaming(taskId, {
            command,
            tty,
            stdin,
            stdout: frameWriter(socket, 'stdout'),
            stderr: frameWriter(socket, 'stderr'),
            ...(tty && width > 0 && height > 0 ? { size: { cols: width, rows: height } } : {}),
            resize,
            signal: abort.signal,
          });
          if (socket.readyState === socket.OPEN) socket.send(JSON.stringify({ exited: true, result: { exit_code: exitCode } }));
          socket.close(1000);
        } catch (err) {
          if (abort.signal.aborted) return;
          if (err instanceof RouteError) return fail(err.code, err.message);
          const code = typeof (err as { code?: unknown }).code === 'string' ? (err as { code: string }).code : 'TASK_EXEC_FAILED';
          log.warn({ allocId: req.params.id, err: describeError(err) }, 'exec failed');
          fail(code, err instanceof Error ? err.message : String(err));
        }
      })();
    },
  );
}
