// `berth volume claim list|delete`, over Berth's claim routes
// (`/v1/volumes/csi/claims`, `DELETE /v1/volume/csi/:id/claim/:alloc`;
// shapes in src/api/csi-berth.ts): Nomad keeps claims out of its API.

import { Command } from 'commander';
import type { VolumeClaimDeleteResponse, VolumeClaimListStub } from '../api/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { goTimestamp } from './plugin-status-command.js';
import { UsageError } from './usage-error.js';

const CLAIMS_PATH = '/v1/volumes/csi/claims';

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
  const { body } = await s.api.get<VolumeClaimListStub[]>(CLAIMS_PATH, {
    namespace: s.namespace,
    job: opts['job'] as string | undefined,
    volume: opts['volume'] as string | undefined,
  });
  if (s.out.json) return s.out.document(body);
  s.out.table(
    ['Volume ID', 'Alloc ID', 'Job ID', 'Node ID', 'Mode', 'State', 'Controller Publish', 'Alloc Status', 'Since'],
    body.map((c) => [
      c.VolumeID,
      shortId(c.AllocationID),
      c.JobID || '-',
      shortId(c.NodeID),
      c.Mode,
      s.style.status(c.State),
      c.ControllerPublish,
      c.AllocClientStatus,
      goTimestamp(c.ClaimTime),
    ]),
  );
  // A release an operator forced, or one the node finished in its plugin's place, says so.
  for (const c of body) {
    if (c.BerthReleaseForced) s.out.line(`Claim of allocation ${shortId(c.AllocationID)} on volume ${c.VolumeID}: release forced by an operator`);
    if (c.BerthReleaseOverride) s.out.line(`Claim of allocation ${shortId(c.AllocationID)} on volume ${c.VolumeID}: ${c.BerthReleaseOverride}`);
  }
}

async function claimDelete(s: ApiSession, [volArg, allocArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const volumeId = await s.api.resolve(KINDS.volume, volArg as string, { namespace: s.namespace });
  const { body: claims } = await s.api.get<VolumeClaimListStub[]>(CLAIMS_PATH, { namespace: s.namespace, volume: volumeId });
  const matches = claims.filter((c) => c.AllocationID.startsWith(allocArg as string));
  if (matches.length !== 1) {
    const which = matches.length === 0 ? 'no claim' : `${matches.length} claims`;
    throw new UsageError(`volume ${volumeId} has ${which} by an allocation starting with "${allocArg}"; \`berth volume claim list -volume ${volumeId}\` lists them`);
  }
  const c = matches[0] as VolumeClaimListStub;
  const { body } = await s.api.request<VolumeClaimDeleteResponse>(
    'DELETE',
    `${KINDS.volume.getPath(volumeId)}/claim/${encodeURIComponent(c.AllocationID)}`,
    { query: { namespace: s.namespace, ...(opts['force'] ? { force: 'true' } : {}) } },
  );
  if (s.out.json) return s.out.document(body);
  if (body.StoppedAllocation) s.out.line(`Stopped allocation "${shortId(body.StoppedAllocation)}"`);
  s.out.line(`Released the claim of allocation "${shortId(c.AllocationID)}" on volume "${volumeId}" (node ${shortId(c.NodeID)})`);
}
