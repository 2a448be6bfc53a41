// The HTTP API of an agent a benchmark started (AgentRun), with its token.

import type { AgentRun } from '../test/support/agent-run.js';

/** Calls the agent's API; resolves with the parsed body and X-Nomad-Index (0 when absent); throws on a non-2xx answer with its text. */
export type AgentCall = <T>(method: string, path: string, body?: unknown) => Promise<{ body: T; index: number }>;

export function agentApi(agent: Pick<AgentRun, 'addr' | 'token'>): AgentCall {
  return async <T>(method: string, path: string, body?: unknown): Promise<{ body: T; index: number }> => {
    const res = await fetch(agent.addr + path, {
      method,
      headers: { authorization: `Bearer ${agent.token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return { body: (text ? JSON.parse(text) : undefined) as T, index: Number(res.headers.get('x-nomad-index') ?? res.headers.get('x-berth-index') ?? 0) };
  };
}
