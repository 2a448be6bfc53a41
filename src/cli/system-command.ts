// `berth system gc`: the server's garbage collection, now.

import { Command } from 'commander';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';

/** What PUT /v1/system/gc answers: what one forced collection deleted. */
interface GcAnswer {
  allocations: string[];
  evaluations: string[];
  jobs: string[];
  index: number;
}

/** Builds `berth system` (gc). */
export function systemCommand(ctx: CommandContext): Command {
  const system = new Command('system').description('Cluster maintenance: garbage collection');
  apiCommand(
    system
      .command('gc')
      .description(
        'Collect now, regardless of age and count limits: stopped allocations (nodes drop them), finished evaluations, and stopped jobs with nothing left (management token)',
      ),
    ['system gc', 'system gc --json'],
  ).action(apiAction(ctx, systemGc));
  return system;
}

async function systemGc(s: ApiSession): Promise<void> {
  const { body } = await s.api.request<GcAnswer>('PUT', '/v1/system/gc');
  if (s.out.json) return s.out.document(body);
  const n = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? '' : 's'}`;
  s.out.line(`Collected ${n(body.allocations.length, 'allocation')}, ${n(body.evaluations.length, 'evaluation')}, ${n(body.jobs.length, 'stopped job')}`);
  if (body.allocations.length) s.out.line(`Allocations: ${body.allocations.map(shortId).join(' ')}`);
  if (body.jobs.length) s.out.line(`Jobs: ${body.jobs.join(' ')}`);
}
