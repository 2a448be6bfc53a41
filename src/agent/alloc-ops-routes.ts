// The node agent's allocation operations: restart and signal a task (the
// allocation's volumes stay mounted: only the task process is replaced), and
// read the allocation directory (Nomad's /v1/client/fs/{ls,stat,cat,stream}),
// never outside it (alloc-fs.ts).

import { watch } from 'node:fs';
import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { AllocRunner } from '../client/index.js';
import { BerthError } from '../lib/index.js';
import { AllocFsError, listDir, openInside, statPath } from './alloc-fs.js';
import type { ClientRoutesDeps } from './client-routes.js';

const FS_STATUS: Record<string, number> = { ALLOC_FS_ESCAPE: 403, ALLOC_FS_SECRET: 403, ALLOC_FS_NOT_FOUND: 404, ALLOC_FS_NOT_A_FILE: 400, ALLOC_FS_NOT_A_DIRECTORY: 400 };

class OpsError extends BerthError<string> {
  constructor(
    readonly status: number,
    code: string,
    message: string,
  ) {
    super(code, message);
  }
}

function runnerOf(deps: ClientRoutesDeps, allocId: string): AllocRunner {
  const client = deps.client();
  if (!client || client.state !== 'running') throw new OpsError(503, 'CLIENT_NOT_READY', 'the node agent is not running yet');
  const runner = client.runner(allocId);
  if (!(runner instanceof AllocRunner)) throw new OpsError(404, 'NOT_FOUND', `allocation ${allocId} does not run on this node`);
  return runner;
}

function fail(reply: FastifyReply, err: unknown): FastifyReply {
  if (err instanceof OpsError) return reply.status(err.status).send({ code: err.code, message: err.message, details: {} });
  if (err instanceof AllocFsError) return reply.status(FS_STATUS[err.code] ?? 400).send({ code: err.code, message: err.message, details: {} });
  if (typeof (err as { code?: unknown }).code === 'string' && (err as { code: string }).code.startsWith('DRIVER_')) {
    return reply.status(400).send({ code: (err as { code: string }).code, message: (err as Error).message, details: {} });
  }
  throw err;
}

type Body = { task?: unknown; allTasks?: unknown; signal?: unknown };

/** Registers the restart, signal and fs routes (management role for restart/signal, read for fs). */
export function registerAllocOpsRoutes(app: FastifyInstance, deps: ClientRoutesDeps, closing: AbortSignal): void {
  // Restarts the named task, or every running task; with allTasks also says which did not run (finished lifecycle tasks).
  app.post<{ Params: { id: string }; Body: Body }>('/v1/client/allocation/:id/restart', { config: { access: 'write' } }, async (req, reply) => {
    try {
      const runner = runnerOf(deps, req.params.id);
      const body = req.body ?? {};
      const names = Object.keys(runner.taskIds());
      const task = typeof body.task === 'string' && body.task ? body.task : undefined;
      if (task && !names.includes(task)) throw new OpsError(404, 'NOT_FOUND', `allocation ${req.params.id} has no task "${task}" (tasks: ${names.join(', ')})`);
      const chosen = task ? [task] : names;
      const restarted: string[] = [];
      const notRunning: string[] = [];
      for (const name of chosen) {
        const t = runner.task(name);
        if (!t || t.view().state !== 'running') {
          notRunning.push(name);
          continue;
        }
        await t.restart('restart requested by the operator');
        restarted.push(name);
      }
      if (task && restarted.length === 0) throw new OpsError(409, 'TASK_NOT_RUNNING', `task "${task}" is not running`);
      return { restarted, notRunning };
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.post<{ Params: { id: string }; Body: Body }>('/v1/client/allocation/:id/signal', { config: { access: 'write' } }, async (req, reply) => {
    try {
      const runner = runnerOf(deps, req.params.id);
      const body = req.body ?? {};
      const signal = typeof body.signal === 'string' && body.signal ? body.signal.toUpperCase() : 'SIGKILL';
      const sig = signal.startsWith('SIG') ? signal : `SIG${signal}`;
      const names = Object.keys(runner.taskIds());
      const task = typeof body.task === 'string' && body.task ? body.task : undefined;
      if (task && !names.includes(task)) throw new OpsError(404, 'NOT_FOUND', `allocation ${req.params.id} has no task "${task}" (tasks: ${names.join(', ')})`);
      const signaled: string[] = [];
      for (const name of task ? [task] : names) {
        const t = runner.task(name);
        if (!t || t.view().state !== 'running') continue;
        await t.signal(sig, 'signal sent by the operator');
        signaled.push(name);
      }
      if (signaled.length === 0) throw new OpsError(409, 'TASK_NOT_RUNNING', task ? `task "${task}" is not running` : 'no task of the allocation is running');
      return { signal: sig, signaled };
    } catch (err) {
      return fail(reply, err);
    }
  });

  type FsQuery = { path?: string; follow?: string; offset?: string; origin?: string };
  app.get<{ Params: { id: string }; Querystring: FsQuery }>('/v1/client/fs/ls/:id', { config: { access: 'read' } }, async (req, reply) => {
    try {
      return await listDir(runnerOf(deps, req.params.id).allocDir.dir, req.query.path ?? '/');
    } catch (err) {
      return fail(reply, err);
    }
  });

  app.get<{ Params: { id: string }; Querystring: FsQuery }>('/v1/client/fs/stat/:id', { config: { access: 'read' } }, async (req, reply) => {
    try {
      return await statPath(runnerOf(deps, req.params.id).allocDir.dir, req.query.path ?? '/');
    } catch (err) {
      return fail(reply, err);
    }
  });

  // cat: the whole file. stream: from `offset` (bytes; from the end with origin=end), and with
  // follow=true every byte appended after, until the client goes away or the agent closes.
  for (const kind of ['cat', 'stream'] as const) {
    app.get<{ Params: { id: string }; Querystring: FsQuery }>(`/v1/client/fs/${kind}/:id`, { config: { access: 'read' } }, async (req, reply) => {
      try {
        const { handle, size } = await openInside(runnerOf(deps, req.params.id).allocDir.dir, req.query.path ?? '');
        const offset = Math.max(0, Number(req.query.offset ?? 0) || 0);
        let pos = kind === 'stream' && req.query.origin === 'end' ? Math.max(0, size - offset) : Math.min(offset, size);
        const follow = kind === 'stream' && req.query.follow === 'true';
        const gone = new AbortController();
        req.raw.on('close', () => gone.abort());
        const stop = AbortSignal.any([gone.signal, closing]);
        async function* body(): AsyncGenerator<Buffer> {
          const buf = Buffer.alloc(64 * 1024);
          try {
            for (;;) {
              const { bytesRead } = await handle.read(buf, 0, buf.length, pos);
              if (bytesRead > 0) {
                pos += bytesRead;
                yield Buffer.from(buf.subarray(0, bytesRead));
                continue;
              }
              if (!follow || stop.aborted) return;
              // Woken by the file changing (or every second, for writers inotify misses).
              await new Promise<void>((resolve) => {
                const w = watch(`/proc/self/fd/${handle.fd}`, () => done());
                const t = setTimeout(() => done(), 1000);
                const done = (): void => {
                  w.close();
                  clearTimeout(t);
                  stop.removeEventListener('abort', done);
                  resolve();
                };
                stop.addEventListener('abort', done, { once: true });
              });
              if (stop.aborted) return;
            }
          } finally {
            await handle.close();
          }
        }
        reply.header('content-type', 'application/octet-stream');
        return reply.send(Readable.from(body()));
      } catch (err) {
        return fail(reply, err);
      }
    });
  }
}
