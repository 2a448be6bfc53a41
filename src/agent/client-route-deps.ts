// What the node agent's client routes are given (ClientRoutesDeps, built by
// the agent and passed to each route file by client-routes.ts) and how a
// route finds what a request names in it: the running Client, an
// allocation's runner, a task; each refusal is a ClientRouteError.

import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { AllocRunner, type Client, type TaskDriver } from '../client/index.js';
import type { Logger } from '../lib/index.js';
import { ClientRouteError } from './client-route-error.js';

/** What the routes read: the running Client (undefined until it started) and its drivers. */
export interface ClientRoutesDeps {
  client(): Client | undefined;
  drivers: ReadonlyMap<string, TaskDriver>;
  logger: Logger;
  /**
   * Takes an exec session (true) whose allocation runs on another node: a dev
   * agent relays it to that node's agent (the server's execRelay). Without it
   * every session is this node's.
   */
  relayExec?: (socket: WebSocket, req: FastifyRequest<{ Params: { id: string } }>) => boolean;
}

/** The running Client. Throws ClientRouteError 503 CLIENT_NOT_READY before it runs. */
export function readyClient(deps: ClientRoutesDeps): Client {
  const client = deps.client();
  if (!client || client.state !== 'running') throw new ClientRouteError(503, 'CLIENT_NOT_READY', 'the node agent is not running yet');
  return client;
}

/** The runner of an allocation on this node. Throws ClientRouteError 404 (Nomad's "Unknown allocation") or 503. */
export function runnerOf(deps: ClientRoutesDeps, allocId: string): AllocRunner {
  const runner = readyClient(deps).runner(allocId);
  if (!(runner instanceof AllocRunner)) throw new ClientRouteError(404, 'NOT_FOUND', `Unknown allocation "${allocId}"`);
  return runner;
}

/**
 * The task a request names, or the allocation's only task when it names
 * none. Throws ClientRouteError 400 for an unknown task (Nomad's words) or a
 * missing name when there are several.
 */
export function taskOf(runner: AllocRunner, allocId: string, task: string | undefined): string {
  const names = Object.keys(runner.taskIds());
  if (task) {
    if (!names.includes(task)) throw new ClientRouteError(400, 'INVALID', `unknown task name "${task}" (allocation ${allocId} runs: ${names.join(', ')})`);
    return task;
  }
  if (names.length !== 1) throw new ClientRouteError(400, 'INVALID', `must provide task name: allocation ${allocId} runs several tasks (${names.join(', ')})`);
  return names[0] as string;
}
