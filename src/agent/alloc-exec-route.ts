// `alloc exec` on the node agent: GET /v1/client/allocation/:id/exec
// upgraded to a WebSocket, in Nomad's protocol (api/allocations_exec.go).
// The query names the task, the command as a JSON array and tty=true|false;
// the client sends `{"stdin":{"data":b64}}`, `{"stdin":{"close":true}}`,
// `{"tty_size":{"height":h,"width":w}}` and `{}` heartbeats; the agent
// sends `{"stdout":{"data":b64}}`, `{"stderr":...}` and last
// `{"exited":true,"result":{"exit_code":n}}`, then closes. A failure closes
// the socket with the reason as its close message (1008; 1011 for an
// internal error), as Nomad does. The token comes as X-Nomad-Token (Nomad's
// Go client) or, with `ws_handshake=true` (a browser, which cannot set that
// header), in a first message `{"version":1,"auth_token":"..."}`.

import { Writable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import * as api from '../api/index.js';
import { describeError } from '../lib/index.js';
import { runnerOf, taskOf, type ClientRoutesDeps } from './client-route-deps.js';
import { asRouteError, ClientRouteError } from './client-route-error.js';

/**
 * A one-at-a-time async queue: push() items, end() it; iterating yields
 * them in order and finishes after end(). What the WebSocket's stdin and
 * resize frames become for the driver's execTaskStreaming.
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
      const frame: api.ExecStreamingOutput = { [stream]: { data: data.toString('base64') } };
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(frame), () => done());
      else done();
    },
  });
}

/** A close reason fits in 123 bytes. */
function closeReason(message: string): string {
  let out = message;
  while (Buffer.byteLength(out) > 123) out = out.slice(0, -2);
  return out;
}

/** The command of `?command=["/bin/sh","-c","..."]`. Throws ClientRouteError 400. */
function commandOf(raw: unknown): string[] {
  let command: unknown;
  try {
    command = JSON.parse(typeof raw === 'string' ? raw : '');
  } catch {
    throw new ClientRouteError(400, 'INVALID', 'command must be a JSON array of strings, e.g. ["/bin/sh","-c","ls"]');
  }
  if (!Array.isArray(command) || !command.every((w) => typeof w === 'string') || command.length === 0 || command[0] === '') {
    throw new ClientRouteError(400, 'INVALID', 'command must be a non-empty JSON array of strings');
  }
  return command as string[];
}

type ExecRequest = FastifyRequest<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>;

/** Registers the exec route (management role). The app must have @fastify/websocket registered. Sessions end when `closing` fires. */
export function registerAllocExecRoute(app: FastifyInstance, deps: ClientRoutesDeps, closing: AbortSignal): void {
  const log = deps.logger.child({ component: 'client-http' });
  app.route<{ Params: { id: string }; Querystring: Record<string, string | undefined> }>({
      method: 'GET',
      url: '/v1/client/allocation/:id/exec',
      config: { access: 'write', wsHandshake: true },
      // fastify's HEAD route for it, which never upgrades (the API's GET routes answer HEAD themselves).
      exposeHeadRoute: true,
      // A plain GET (no Upgrade): Nomad answers 400 with gorilla's reason; @fastify/websocket's default is an empty 404.
      handler: async () => {
        throw new ClientRouteError(400, 'INVALID', "websocket: the client is not using the websocket protocol: 'upgrade' token not found in 'Connection' header (exec runs over a WebSocket)");
      },
      wsHandler: (socket: WebSocket, req: ExecRequest) => {
      // A dev agent relays the session of another node's allocation to that node's agent.
      if (deps.relayExec?.(socket, req)) return;
      const stdin = new FrameQueue<Buffer>();
      const resize = new FrameQueue<{ cols: number; rows: number }>();
      const abort = new AbortController();
      const onClosing = (): void => abort.abort(new Error('agent closing'));
      closing.addEventListener('abort', onClosing, { once: true });
      const fail = (code: number, message: string): void => {
        if (socket.readyState === socket.OPEN) socket.close(code, closeReason(message));
      };
      // With ws_handshake the first message is the token, and nothing runs before it is checked.
      let handshake: ((raw: Buffer) => void) | undefined;
      const authorized = req.authorizeHandshake
        ? new Promise<void>((resolve, reject) => {
            handshake = (raw) => {
              handshake = undefined;
              let msg: api.WsHandshakeMessage;
              try {
                msg = api.WsHandshakeMessage.parse(JSON.parse(raw.toString('utf8')));
              } catch {
                return reject(new ClientRouteError(400, 'INVALID', 'the first message must be the handshake {"version":1,"auth_token":"..."}'));
              }
              if (msg.version !== 1) return reject(new ClientRouteError(400, 'INVALID', `unexpected handshake value: ${msg.version}`));
              (req.authorizeHandshake as (t: string) => Promise<void>)(msg.auth_token).then(resolve, reject);
            };
          })
        : Promise.resolve();
      socket.on('message', (raw: Buffer) => {
        if (handshake) return handshake(raw);
        let frame: api.ExecStreamingInput;
        try {
          frame = JSON.parse(raw.toString('utf8')) as api.ExecStreamingInput;
        } catch {
          return fail(1008, 'frames must be JSON objects');
        }
        if (frame.stdin?.data) stdin.push(Buffer.from(frame.stdin.data, 'base64'));
        if (frame.stdin?.close) stdin.end();
        if (frame.tty_size?.width && frame.tty_size.height) resize.push({ cols: frame.tty_size.width, rows: frame.tty_size.height });
      });
      socket.on('close', () => {
        closing.removeEventListener('abort', onClosing);
        stdin.end();
        resize.end();
        abort.abort(new Error('the exec client went away'));
      });
      void (async () => {
        try {
          await authorized;
          const q = req.query;
          const command = commandOf(q['command']);
          const tty = q['tty'] === 'true' || q['tty'] === '1';
          const runner = runnerOf(deps, req.params.id);
          const taskName = taskOf(runner, req.params.id, q['task']);
          const taskId = runner.taskIds()[taskName];
          if (!taskId) throw new ClientRouteError(409, 'TASK_NOT_RUNNING', `task "${taskName}" is not running`);
          const driver = [...deps.drivers.values()].find((d) => {
            try {
              d.inspectTask(taskId);
              return true;
            } catch {
              return false;
            }
          });
          if (!driver) throw new ClientRouteError(409, 'TASK_NOT_RUNNING', `task "${taskName}" is not running`);
          log.info({ allocId: req.params.id, task: taskName, tty, caller: req.caller?.name }, 'exec started');
          const { exitCode } = await driver.execTaskStreaming(taskId, {
            command,
            tty,
            stdin,
            stdout: frameWriter(socket, 'stdout'),
            stderr: frameWriter(socket, 'stderr'),
            resize,
            signal: abort.signal,
          });
          const exited: api.ExecStreamingOutput = { exited: true, result: { exit_code: exitCode } };
          if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(exited));
          socket.close(1000);
        } catch (err) {
          if (abort.signal.aborted) return;
          const e = asRouteError(err);
          // A refusal (a bad request, a bad token) is a policy violation; anything else an internal error.
          const code = (e as { code?: unknown }).code;
          if (e instanceof ClientRouteError || code === 'UNAUTHENTICATED' || code === 'FORBIDDEN') return fail(1008, (e as Error).message);
          log.warn({ allocId: req.params.id, err: describeError(err) }, 'exec failed');
          fail(1011, err instanceof Error ? err.message : String(err));
        }
      })();
      },
  });
}
