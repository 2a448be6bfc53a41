// The worker's relay: a request the worker does not serve itself goes to
// main's fastify over main's internal unix socket (a keep-alive pool), and
// the answer comes back as main wrote it, streamed both ways without
// buffering (event streams, log streams, blocking reads held open). A
// WebSocket upgrade is relayed byte for byte once its head is sent on.
// Main serves everything it always served; the worker only carries bytes.

import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { threadId } from 'node:worker_threads';
import { sendErrorAnswer } from '../answers.js';
import { RELAYED_BY_HEADER } from './relayed.js';
import { connectUnix, UnixRelayAgent } from './unix-connect.js';

/** Hop-by-hop request headers: the relay's own connection to main has its own. */
const REQUEST_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'expect', 'te']);
/** Hop-by-hop answer headers: the worker's connection to the caller decides these (Node frames the body). */
const ANSWER_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

export class Relay {
  readonly #socketPath: string;
  readonly #agent: http.Agent;

  readonly #ended: ((m: { method: string; path: string; status: number; upgrade: boolean }) => void) | undefined;

  /** `ended`: told of each relayed request once it ended (a trace for the log). */
  constructor(socketPath: string, ended?: (m: { method: string; path: string; status: number; upgrade: boolean }) => void) {
    this.#socketPath = socketPath;
    this.#ended = ended;
    this.#agent = new UnixRelayAgent(socketPath);
  }

  /**
   * Sends `req` on to main and its answer back to `res`. `head` is what of
   * the body the worker already read (all of it when `req` ended).
   */
  request(req: IncomingMessage, res: ServerResponse, head: readonly Buffer[] = []): void {
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !REQUEST_HOP.has(k)) headers[k] = v;
    headers[RELAYED_BY_HEADER] = String(threadId);
    const up = http.request({ agent: this.#agent, socketPath: this.#socketPath, method: req.method, path: req.url, headers });
    up.on('response', (answer) => {
      const raw: string[] = [];
      for (let i = 0; i + 1 < answer.rawHeaders.length; i += 2) {
        const name = answer.rawHeaders[i] as string;
        const lower = name.toLowerCase();
        if (!ANSWER_HOP.has(lower) || (lower === 'connection' && /\bclose\b/i.test(answer.rawHeaders[i + 1] as string))) raw.push(name, answer.rawHeaders[i + 1] as string);
      }
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, raw);
      // A stream's head goes out at once (an event stream may say nothing for seconds).
      if (answer.headers['content-length'] === undefined) res.flushHeaders();
      answer.pipe(res);
      answer.once('aborted', () => res.destroy());
      answer.once('error', () => res.destroy());
    });
    up.on('error', (err) => {
      if (!res.headersSent) sendErrorAnswer(req, res, 503, { code: 'UNAVAILABLE', message: `the API's main thread did not answer: ${err.message}`, details: {} });
      else res.destroy();
    });
    // The caller went away: so does the relayed request (main's blocking read or stream ends).
    res.once('close', () => {
      if (!res.writableFinished) up.destroy();
      this.#ended?.({ method: req.method ?? '', path: pathOf(req.url), status: res.statusCode, upgrade: false });
    });
    for (const chunk of head) up.write(chunk);
    if (req.complete) up.end();
    else req.pipe(up);
  }

  /** Relays a WebSocket (or any) upgrade: its head, then bytes both ways until either side closes. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.pause();
    connectUnix(this.#socketPath, (err, up) => {
      if (err || !up) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        this.#ended?.({ method: req.method ?? '', path: pathOf(req.url), status: 503, upgrade: true });
        return;
      }
      this.#joinUpgrade(req, socket, head, up);
    });
  }

  #joinUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, up: Socket): void {
    const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}`];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) if ((req.rawHeaders[i] as string).toLowerCase() !== RELAYED_BY_HEADER) lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
    lines.push(`${RELAYED_BY_HEADER}: ${threadId}`);
    up.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length) up.write(head);
    socket.pipe(up);
    up.pipe(socket);
    socket.resume();
    let ended = false;
    const end = (): void => {
      socket.destroy();
      up.destroy();
      if (!ended) this.#ended?.({ method: req.method ?? '', path: pathOf(req.url), status: 101, upgrade: true });
      ended = true;
    };
    up.once('error', end);
    up.once('close', end);
    socket.once('error', end);
    socket.once('close', end);
  }

  close(): void {
    this.#agent.destroy();
  }
}

/** A URL's path: the log never gets a query (a token may be in it). */
function pathOf(url: string | undefined): string {
  return (url ?? '').split('?')[0] ?? '';
}
