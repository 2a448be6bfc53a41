// `berth volume claim list|delete` and the plugin's own view of a volume
// for `volume status --verbose` (ListVolumes with its published nodes).

import { Command } from 'commander';
import type { ListedVolume } from '../csi/index.js';
import type { VolumeClaim } from '../structs/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { UsageError } from './usage-error.js';

type ListedClaim = VolumeClaim & { jobId: string; allocClientStatus: string; allocDesiredStatus: string };

/** Adds `claim list` and `claim delete` to `berth volume`. */
export function addVolumeClaimCommands(volume: Command, ctx: CommandContext): void {
  const claim = new Command('claim').description("List volumes' claims, or release one");
  volume.addCommand(claim);
  apiCommand(
    claim
      .command('list')
      .description('List claims: which allocation holds which volume on which node, and in what state')
      .option('--job <id>', 'only the claims of this job')
      .option('--volume <id>', 'only the claims of this volume'),
    ['volume claim list', 'volume claim list -job web', 'volume claim list -volume shared-data --json'],
  ).action(apiAction(ctx, claimList));
  apiCommand(
    claim
      .command('delete')
      .description("Release one claim (NodeUnpublish, NodeUnstage, ControllerUnpublish) and wait until it is gone; refused while its allocation runs, unless -force stops it")
      .argument('<volume>', 'volume ID or a unique prefix')
      .argument('<alloc>', 'the ID (or a unique prefix) of the allocation holding the claim')
      .option('--force', 'stop the allocation first if it still runs'),
    ['volume claim delete shared-data 3f2a', 'volume claim delete -force shared-data 3f2a'],
  ).action(apiAction(ctx, claimDelete));
}

async function claimList(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const { body } = await s.api.get<ListedClaim[]>('/v1/volumes/claims', {
    namespace: s.namespace,
    job: opts['job'] as string | undefined,
    volume: opts['volume'] as string | undefined,
  });
  if (s.out.json) return s.out.document(body);
  s.out.table(
    ['Volume ID', 'Alloc ID', 'Job ID', 'Node ID', 'Mode', 'State', 'Controller Publish', 'Alloc Status', 'Since'],
    body.map((c) => [c.volumeId, shortId(c.allocId), c.jobId || '-', shortId(c.nodeId), c.mode, s.style.status(c.state), c.controllerPublish, c.allocClientStatus, timestamp(c.claimTime)]),
  );
}

async function claimDelete(s: ApiSession, [volArg, allocArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const volumeId = await s.api.resolve(KINDS.volume, volArg as string, { namespace: s.namespace });
  const { body: claims } = await s.api.get<ListedClaim[]>('/v1/volumes/claims', { namespace: s.namespace, volume: volumeId });
  const matches = claims.filter((c) => c.allocId.startsWith(allocArg as string));
  if (matches.length !== 1) {
    const which = matches.length === 0 ? 'no claim' : `${matches.length} claims`;
    throw new UsageError(`volume ${volumeId} has ${which} by an allocation starting with "${allocArg}"; \`berth volume claim list -volume ${volumeId}\` lists them`);
  }
  const c = matches[0] as ListedClaim;
  const { body } = await s.api.request<{ stoppedAllocation?: string }>(
    'DELETE',
    `/v1/volume/csi/${encodeURIComponent(volumeId)}/claim/${encodeURIComponent(c.allocId)}`,
    { query: { namespace: s.namespace, ...(opts['force'] ? { force: 'true' } : {}) } },
  );
  if (s.out.json) return s.out.document(body);
  if (body.stoppedAllocation) s.out.line(`Stopped allocation "${shortId(body.stoppedAllocation)}"`);
  s.out.line(`Released the claim of allocation "${shortId(c.allocId)}" on volume "${volumeId}" (node ${shortId(c.nodeId)})`);
}

/**
 * `volume status --verbose`: the plugin's own ListVolumes entry for the
 * volume and the nodes it says the volume is published to. Prints why when
 * the plugin cannot list volumes.
 */
export async function printPluginView(s: ApiSession, volume: { pluginId: string; externalId: string }): Promise<void> {
  s.out.line();
  s.out.line(s.style.bold('Plugin View (ListVolumes)'));
  let listed: ListedVolume[];
  try {
    listed = (await s.api.get<ListedVolume[]>(`/v1/plugin/csi/${encodeURIComponent(volume.pluginId)}/volumes`)).body;
  } catch (err) {
    s.out.line(`unavailable: ${err instanceof Error ? err.message : String(err)}`);
    return;
  }
  const mine = listed.find((l) => l.volume.volumeId === volume.externalId);
  if (!mine) {
    s.out.line(`plugin ${volume.pluginId} does not list volume ${volume.externalId}`);
    return;
  }
  s.out.fields([
    ['Volume ID', mine.volume.volumeId],
    ['Capacity', String(mine.volume.capacityBytes ?? 0)],
    ['Published Nodes', mine.publishedNodeIds ? (mine.publishedNodeIds.length ? mine.publishedNodeIds : 'none') : 'not reported (no LIST_VOLUMES_PUBLISHED_NODES)'],
    ['Condition', mine.condition ? `${mine.condition.abnormal ? 'abnormal' : 'healthy'}${mine.condition.message ? `: ${mine.condition.message}` : ''}` : undefined],
  ]);
}
