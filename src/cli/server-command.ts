// `berth server members`: the servers of the cluster, their addresses, which
// one leads and whether each is alive, as any server sees them
// (GET /v1/agent/members, as Nomad's `server members`).

import { Command } from 'commander';
import type { ServerMembers } from '../api/index.js';
import { age, apiAction, apiCommand, elapsed, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';

/** Builds `berth server`. */
export function serverCommand(ctx: CommandContext): Command {
  const server = new Command('server').description('Inspect the servers of the cluster (members, leader)');
  apiCommand(server.command('members').description('List the servers: name, address, leader and health'), [
    'server members',
    'server members --json',
  ]).action(apiAction(ctx, members));
  return server;
}

async function members(s: ApiSession): Promise<void> {
  const { body } = await s.api.get<ServerMembers>('/v1/agent/members');
  if (s.out.json) return s.out.document(body);
  s.out.table(
    ['Name', 'Address', 'Leader', 'Status', 'Up', 'Failed Since'],
    body.Members.map((m) => [
      m.Name,
      `${m.Addr.includes(':') ? `[${m.Addr}]` : m.Addr}:${m.Port}`,
      m.Leader ? 'true' : 'false',
      s.style.status(m.Status),
      m.Status === 'alive' && m.StartedAt ? elapsed(m.StartedAt) : '-',
      m.Status === 'failed' ? (m.FailedAt ? `${timestamp(m.FailedAt)} (${age(m.FailedAt)})` : 'unknown') : '-',
    ]),
  );
  if (body.Warning) s.out.warn(`Warning: ${body.Warning}`);
  else if (!body.Members.some((m) => m.Leader)) s.out.warn('Warning: no leader right now; writes are refused until one is elected');
}
