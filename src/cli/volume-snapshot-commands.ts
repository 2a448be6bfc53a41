// `berth volume snapshot create|delete|list`, over Nomad's
// `/v1/volumes/snapshot` (src/api/csi.ts): snapshots as the plugin's
// controller holds them.

import { Command } from 'commander';
import type { CSIPlugin, CSISnapshotCreateRequest, CSISnapshotCreateResponse, CSISnapshotListResponse } from '../api/index.js';
import { KINDS } from './api-client.js';
import { apiAction, apiCommand, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { humanSize } from './values.js';

/** Adds `snapshot create|delete|list` to `berth volume`. */
export function addVolumeSnapshotCommands(volume: Command, ctx: CommandContext): void {
  const act = (run: Parameters<typeof apiAction>[1]) => apiAction(ctx, run);
  const snapshot = new Command('snapshot').description('Create, list and delete snapshots of volumes');
  volume.addCommand(snapshot);
  apiCommand(
    snapshot.command('create').description('Snapshot a volume (CreateSnapshot)').argument('<volume>', 'volume ID or a unique prefix').argument('<name>', 'snapshot name'),
    ['volume snapshot create shared-data nightly'],
  ).action(act(snapshotCreate));
  apiCommand(
    snapshot
      .command('delete')
      .description('Delete a snapshot (DeleteSnapshot)')
      .argument('<snapshot-id>', "the plugin's snapshot ID")
      .requiredOption('--plugin <id>', 'the plugin that holds the snapshot'),
    ['volume snapshot delete --plugin hostpath snap-0f3c'],
  ).action(act(snapshotDelete));
  apiCommand(
    snapshot
      .command('list')
      .description('List snapshots a plugin holds (ListSnapshots)')
      .requiredOption('--plugin <id>', 'the plugin to ask')
      .option('--volume <id>', 'only snapshots of this volume'),
    ['volume snapshot list --plugin hostpath', 'volume snapshot list --plugin hostpath --volume shared-data --json'],
  ).action(act(snapshotList));
}

async function snapshotCreate(s: ApiSession, [volArg, name]: string[]): Promise<void> {
  const id = await s.api.resolve(KINDS.volume, volArg as string, { namespace: s.namespace });
  const request: CSISnapshotCreateRequest = { Snapshots: [{ SourceVolumeID: id, Name: name as string }] };
  const { body } = await s.api.request<CSISnapshotCreateResponse>('PUT', '/v1/volumes/snapshot', { query: { namespace: s.namespace }, body: request });
  if (s.out.json) return s.out.document(body);
  for (const snap of body.Snapshots ?? []) {
    s.out.line(`==> Snapshot "${snap.ID}" of volume "${id}" created${snap.IsReady ? '' : ' (not yet ready to use)'}`);
  }
}

async function snapshotDelete(s: ApiSession, [snapshotId]: string[], opts: Record<string, unknown>): Promise<void> {
  const pluginId = opts['plugin'] as string;
  await s.api.request('DELETE', '/v1/volumes/snapshot', { query: { plugin_id: pluginId, snapshot_id: snapshotId } });
  if (s.out.json) return s.out.document({ deleted: snapshotId, pluginId });
  // A plugin that cannot list snapshots cannot say whether the ID existed: the server could not check it first.
  const plugin = await s.api.get<CSIPlugin>(KINDS.plugin.getPath(pluginId)).catch(() => undefined);
  const verified = Object.values(plugin?.body.Controllers ?? {}).some((c) => c.ControllerInfo?.SupportsListSnapshots);
  const unverified = plugin && !verified ? ` (plugin ${pluginId} cannot list snapshots, so it could not confirm the ID existed)` : '';
  s.out.line(`==> Snapshot "${snapshotId}" of plugin ${pluginId} deleted${unverified}`);
}

async function snapshotList(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const volume = opts['volume'] as string | undefined;
  const volumeId = volume ? await s.api.resolve(KINDS.volume, volume, { namespace: s.namespace }) : undefined;
  const { body } = await s.api.get<CSISnapshotListResponse>('/v1/volumes/snapshot', {
    plugin_id: opts['plugin'] as string,
    namespace: s.namespace,
    ...(volumeId ? { volume_id: volumeId } : {}),
  });
  if (s.out.json) return s.out.document(body);
  s.out.table(
    ['Snapshot ID', 'Volume ID', 'External Volume ID', 'Size', 'Created', 'Ready'],
    (body.Snapshots ?? []).map((x) => [
      x.ID,
      x.SourceVolumeID || '-',
      x.ExternalSourceVolumeID,
      x.SizeBytes ? humanSize(x.SizeBytes) : '-',
      timestamp(x.CreateTime * 1000),
      String(x.IsReady),
    ]),
  );
}
