// `berth server members`: the servers of the cluster, their addresses, which
// one leads and whether each is alive, as any server sees them.

import { Command } from 'commander';
import { age, apiAction, apiCommand, elapsed, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';

interface Member {
  id: string;
  address: string;
  leader: boolean;
  status: 'alive' | 'left' | 'failed';
  startedAt: number;
  failedAt?: number;
}

interface MembersAnswer {
  leader: string | null;
  servers: Member[];
  warning?: string;
}

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
  const { body } = await s.api.get<MembersAnswer>('/v1/operator/members');
  if (s.out.json) return s.out.document(body);
  s.out.table(
    ['Name', 'Address', 'Leader', 'Status', 'Up', 'Failed Since'],
    body.servers.map((m) => [
      m.id,
      m.address,
      m.leader ? 'true' : 'false',
      s.style.status(m.status),
      m.status === 'alive' && m.startedAt ? elapsed(m.startedAt) : '-',
      m.status === 'failed' ? (m.failedAt ? `${timestamp(m.failedAt)} (${age(m.failedAt)})` : 'unknown') : '-',
    ]),
  );
  if (body.warning) s.out.warn(`Warning: ${body.warning}`);
  else if (!body.leader) s.out.warn('Warning: no leader right now; writes are refused until one is elected');
}
