// `berth system gc` and `berth system reconcile summaries`: the server's
// garbage collection, now, and Nomad's summary reconciliation (a no-op in
// Berth, whose job summaries are counted at every read).

import { Command } from 'commander';
import type { SystemGcResult } from '../api/index.js';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';

/** Builds `berth system` (gc, reconcile summaries). */
export function systemCommand(ctx: CommandContext): Command {
  const system = new Command('system').description('Cluster maintenance: garbage collection, job summary reconciliation');
  apiCommand(
    system
      .command('gc')
      .description(
        'Collect now, regardless of age and count limits: stopped allocations (nodes drop them), finished evaluations, and stopped jobs with nothing left (management token)',
      ),
    ['system gc', 'system gc --json'],
  ).action(apiAction(ctx, systemGc));
  const reconcile = new Command('reconcile').description("Reconcile the server's derived state");
  apiCommand(
    reconcile.command('summaries').description("Reconcile the jobs' summaries (Berth counts them at every read: nothing to do; for Nomad's scripts)"),
    ['system reconcile summaries'],
  ).action(apiAction(ctx, reconcileSummaries));
  system.addCommand(reconcile);
  return system;
}

async function systemGc(s: ApiSession): Promise<void> {
  const { body } = await s.api.request<SystemGcResult>('PUT', '/v1/system/gc');
  if (s.out.json) return s.out.document(body);
  const n = (count: number, noun: string): string => `${count} ${noun}${count === 1 ? '' : 's'}`;
  s.out.line(`Collected ${n(body.Allocations.length, 'allocation')}, ${n(body.Evaluations.length, 'evaluation')}, ${n(body.Jobs.length, 'stopped job')}`);
  if (body.Allocations.length) s.out.line(`Allocations: ${body.Allocations.map(shortId).join(' ')}`);
  if (body.Jobs.length) s.out.line(`Jobs: ${body.Jobs.join(' ')}`);
}

async function reconcileSummaries(s: ApiSession): Promise<void> {
  const { index } = await s.api.request<undefined>('PUT', '/v1/system/reconcile/summaries');
  if (s.out.json) return s.out.document({ Index: index });
  s.out.line('Reconciled job summaries');
}
