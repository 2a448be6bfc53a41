// Nomad's /v1/client/fs/... routes on the node agent: an allocation
// directory listed (ls), an entry described (stat), a file read whole (cat)
// or from an offset up to a limit (readat), a file streamed as framed JSON
// (stream, following by default) and a task's logs (logs: framed, or the
// bytes alone with plain=true; followed with follow=true). Reads never leave
// the allocation directory nor enter a task's secrets (alloc-fs.ts).

import type { FastifyInstance, FastifyReply } from 'fastify';
import type * as api from '../api/index.js';
import { checkLogsEnabled, listLogFiles, type LogStream, type TaskLogsLocation } from '../client/index.js';
import { describeError, type Logger } from '../lib/index.js';
import { streamFile, streamLogs, type AtEof } from './alloc-stream.js';
import { listDir, openInside, statPath } from './alloc-fs.js';
import { runnerOf, taskOf, type ClientRoutesDeps } from './client-route-deps.js';
import { asRouteError, ClientRouteError } from './client-route-error.js';
import { StreamFramer } from './stream-framer.js';

type FsQuery = Record<string, string | undefined>;

/** A boolean parameter as Go's strconv.ParseBool reads it; `fallback` when absent. Throws ClientRouteError 400. */
function boolOf(q: FsQuery, name: string, fallback: boolean): boolean {
  const raw = q[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 't', 'T', 'true', 'TRUE', 'True'].includes(raw)) return true;
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(raw)) return false;
  throw new ClientRouteError(400, 'INVALID', `failed to parse ${name} field to boolean: "${raw}"`);
}

/** A non-negative whole number parameter; `fallback` when absent. Throws ClientRouteError 400. */
function intOf(q: FsQuery, name: string, fallback: number): number {
  const raw = q[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new ClientRouteError(400, 'INVALID', `error parsing ${name}: "${raw}" is not a non-negative whole number`);
  return n;
}

function originOf(q: FsQuery): 'start' | 'end' {
  const origin = q['origin'] ?? '';
  if (origin === '' || origin === 'start') return 'start';
  if (origin === 'end') return 'end';
  throw new ClientRouteError(400, 'INVALID', 'origin must be start or end');
}

function pathOf(q: FsQuery): string {
  const path = q['path'];
  if (!path) throw new ClientRouteError(400, 'INVALID', 'must provide a file name');
  return path;
}

/**
 * Sends `framer`'s body, running `produce` into it; the body ends when
 * `produce` does, when the client goes away or when the agent closes.
 * An error after the first byte can only end the body (the status is sent).
 */
function sendStream(reply: FastifyReply, closing: AbortSignal, log: Logger, framer: StreamFramer, contentType: string, produce: (signal: AbortSignal) => Promise<unknown>): FastifyReply {
  const stop = new AbortController();
  const onClosing = (): void => stop.abort();
  closing.addEventListener('abort', onClosing, { once: true });
  reply.raw.once('close', () => {
    closing.removeEventListener('abort', onClosing);
    stop.abort();
    framer.destroy();
  });
  void produce(stop.signal).then(
    () => framer.end(),
    (err: unknown) => {
      log.warn({ err: describeError(err) }, 'allocation stream failed');
      framer.destroy();
    },
  );
  void reply.header('content-type', contentType).header('x-content-type-options', 'nosniff');
  return reply.send(framer.output);
}

/** Registers ls, stat, cat, readat, stream and logs (read access; the listener checks it). */
export function registerAllocFsRoutes(app: FastifyInstance, deps: ClientRoutesDeps, closing: AbortSignal): void {
  const read = { config: { access: 'read' as const } };
  const log = deps.logger.child({ component: 'client-http' });

  app.get<{ Params: { id: string }; Querystring: FsQuery }>('/v1/client/fs/ls/:id', read, async (req): Promise<api.AllocFileInfo[]> => {
    try {
      return await listDir(runnerOf(deps, req.params.id).allocDir.dir, req.query['path'] || '/');
    } catch (err) {
      throw asRouteError(err);
    }
  });

  app.get<{ Params: { id: string }; Querystring: FsQuery }>('/v1/client/fs/stat/:id', read, async (req): Promise<api.AllocFileInfo> => {
    try {
      return await statPath(runnerOf(deps, req.params.id).allocDir.dir, pathOf(req.query));
    } catch (err) {
      throw asRouteError(err);
    }
  });

  // cat: the whole file; readat: `limit` bytes (0: to the end) from `offset`. The bytes alone.
  for (const kind of ['cat', 'readat'] as const) {
    app.get<{ Params: { id: string }; Querystring: FsQuery }>(`/v1/client/fs/${kind}/:id`, read, async (req, reply) => {
      try {
        const root = runnerOf(deps, req.params.id).allocDir.dir;
        const path = pathOf(req.query);
        const offset = kind === 'readat' ? intOf(req.query, 'offset', 0) : 0;
        const limit = kind === 'readat' ? intOf(req.query, 'limit', 0) : 0;
        const { handle } = await openInside(root, path); // refuses before the status is sent
        await handle.close();
        const framer = new StreamFramer({ plain: true });
        return sendStream(reply, closing, log, framer, 'application/octet-stream', (signal) =>
          streamFile(root, path, path, framer, { offset, limit, signal, atEof: stopAtEof }),
        );
      } catch (err) {
        throw asRouteError(err);
      }
    });
  }

  // Framed JSON from `offset` (from the end with origin=end); followed unless follow=false.
  app.get<{ Params: { id: string }; Querystring: FsQuery }>('/v1/client/fs/stream/:id', read, async (req, reply) => {
    try {
      const root = runnerOf(deps, req.params.id).allocDir.dir;
      const path = pathOf(req.query);
      const follow = boolOf(req.query, 'follow', true);
      const offset = intOf(req.query, 'offset', 0);
      const origin = originOf(req.query);
      const { handle, size } = await openInside(root, path);
      await handle.close();
      const start = origin === 'end' ? Math.max(0, size - offset) : offset;
      const framer = new StreamFramer({ plain: false });
      const atEof: AtEof = async () => (follow ? 'wait' : 'stop');
      return sendStream(reply, closing, log, framer, 'application/json', (signal) => streamFile(root, path, path, framer, { offset: start, signal, atEof }));
    } catch (err) {
      throw asRouteError(err);
    }
  });

  app.get<{ Params: { id: string }; Querystring: FsQuery }>('/v1/client/fs/logs/:id', read, async (req, reply) => {
    try {
      const q = req.query;
      const runner = runnerOf(deps, req.params.id);
      const taskName = taskOf(runner, req.params.id, q['task']);
      const type = q['type'] || 'stdout';
      if (type !== 'stdout' && type !== 'stderr') throw new ClientRouteError(400, 'INVALID', 'must provide log type (stdout/stderr)');
      const follow = boolOf(q, 'follow', false);
      const plain = boolOf(q, 'plain', false);
      const offset = intOf(q, 'offset', 0);
      const origin = originOf(q);
      const state = runner.status().taskStates[taskName];
      if (!state?.startedAt) throw new ClientRouteError(404, 'NOT_FOUND', `task "${taskName}" not started yet. No logs available`);
      const loc: TaskLogsLocation = { dir: runner.allocDir.task(taskName).logsDir, taskName, stream: type as LogStream };
      checkLogsEnabled(loc);
      if (!(await listLogFiles(loc)).length) throw new ClientRouteError(404, 'NOT_FOUND', `log entry for task "${taskName}" and log type "${type}" not found`);
      const framer = new StreamFramer({ plain });
      const source = { root: runner.allocDir.dir, dir: loc.dir, list: () => listLogFiles(loc) };
      return sendStream(reply, closing, log, framer, plain ? 'text/plain' : 'application/json', (signal) => streamLogs(source, framer, { follow, offset, origin, signal }));
    } catch (err) {
      throw asRouteError(err);
    }
  });
}

const stopAtEof: AtEof = async () => 'stop';
