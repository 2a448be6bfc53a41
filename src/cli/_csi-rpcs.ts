// `berth csi`'s subcommand bodies, one per CSI RPC (identity, controller,
// node). Each gets the session csi-command.ts opened. Private to src/cli.

import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { checkValidation, type CsiSnapshot, type ListedVolume, type ValidateRequest, type VolumeContentSource } from '../csi/index.js';
import { redactSecretLookingValues } from '../lib/index.js';
import { describeCapabilities } from './capability-words.js';
import { mapLines } from './output.js';
import { UsageError } from './usage-error.js';
import { humanSize, parseSecrets } from './values.js';
import {
  arg,
  capabilityOf,
  capacityRangeOf,
  capacityText,
  optionalCapabilityOf,
  optionalPairs,
  printVolume,
  served,
  shortSize,
  volumeView,
  type CommandOptions,
  type Session,
} from './_csi-session.js';

// ---- identity -----------------------------------------------------------------

export async function info({ client, out, call }: Session): Promise<void> {
  const [pluginInfo, caps] = await Promise.all([client.getPluginInfo(call), client.getPluginCapabilities(call)]);
  if (out.json) {
    out.document({ ...pluginInfo, capabilities: caps });
    return;
  }
  out.fields([
    ['name', pluginInfo.name],
    ['vendor version', pluginInfo.vendorVersion],
    ['manifest', mapLines(pluginInfo.manifest)],
    ['services', describeCapabilities('plugin', caps.services)],
    ['volume expansion', describeCapabilities('expansion', caps.volumeExpansion)],
  ]);
}

export async function probe({ client, out, call }: Session): Promise<void> {
  const { ready } = await client.probe(call);
  if (out.json) out.document({ ready });
  else out.fields([['ready', ready ? 'yes' : 'no (the plugin is still starting)']]);
}

export async function capabilities({ client, out, call }: Session): Promise<void> {
  const plugin = await client.getPluginCapabilities(call);
  const notAdvertised = (service: string) => ({ served: false as const, reason: `the plugin does not advertise ${service}` });
  const [controller, node, groupController] = await Promise.all([
    plugin.services.includes('CONTROLLER_SERVICE') ? served(() => client.controllerGetCapabilities(call)) : notAdvertised('CONTROLLER_SERVICE'),
    served(() => client.nodeGetCapabilities(call)),
    plugin.services.includes('GROUP_CONTROLLER_SERVICE')
      ? served(() => client.groupControllerGetCapabilities(call))
      : notAdvertised('GROUP_CONTROLLER_SERVICE'),
  ]);
  if (out.json) {
    out.document({ plugin, controller, node, groupController });
    return;
  }
  const section = (title: string, lines: string[]): void => {
    out.line(title);
    for (const l of lines.length ? lines : ['(none)']) out.line(`  ${l}`);
  };
  section('plugin', describeCapabilities('plugin', plugin.services));
  section('volume expansion', describeCapabilities('expansion', plugin.volumeExpansion));
  section('controller', controller.served ? describeCapabilities('controller', controller.capabilities) : [`not served (${controller.reason})`]);
  section('node', node.served ? describeCapabilities('node', node.capabilities) : [`not served (${node.reason})`]);
  if (groupController.served) section('group controller', describeCapabilities('group', groupController.capabilities));
}

export async function nodeInfo({ client, out, call }: Session): Promise<void> {
  const node = await client.nodeGetInfo(call);
  if (out.json) {
    out.document(node);
    return;
  }
  out.fields([
    ['node id', node.nodeId],
    ['max volumes', node.maxVolumesPerNode ? String(node.maxVolumesPerNode) : 'no limit'],
    ['topology', node.accessibleTopology ? mapLines(node.accessibleTopology) : undefined],
  ]);
}

// ---- controller -----------------------------------------------------------------

export async function createVolume({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  if (opts.fromSnapshot && opts.fromVolume) throw new UsageError('give --from-snapshot or --from-volume, not both');
  let contentSource: VolumeContentSource | undefined;
  if (opts.fromSnapshot) contentSource = { snapshotId: opts.fromSnapshot };
  if (opts.fromVolume) contentSource = { volumeId: opts.fromVolume };
  const capability = capabilityOf(opts);
  const volume = await client.createVolume(
    {
      name: arg(args, 0),
      capacityRange: capacityRangeOf(opts),
      volumeCapabilities: [capability],
      parameters: optionalPairs('--param', opts.param),
      secrets: parseSecrets(opts.secret),
      contentSource,
    },
    call,
  );
  if (out.json) out.document(volumeView(volume));
  else printVolume(out, volume);
}

// NOT_FOUND on a teardown call means there was nothing to undo; say so.
export function alreadyGone(alreadyDone: boolean): string {
  return alreadyDone ? ' (already gone: the plugin answered NOT_FOUND)' : '';
}

export async function deleteVolume({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const { alreadyDone } = await client.deleteVolume(volumeId, { ...call, secrets: parseSecrets(opts.secret) });
  if (out.json) out.document({ volumeId, deleted: true, alreadyDone });
  else out.fields([['deleted', volumeId + alreadyGone(alreadyDone)]]);
}

export async function controllerPublish({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const nodeId = opts.nodeId ?? '';
  const { publishContext } = await client.controllerPublishVolume(
    {
      volumeId,
      nodeId,
      volumeCapability: capabilityOf(opts),
      readonly: Boolean(opts.readonly),
      volumeContext: optionalPairs('--context', opts.context),
      secrets: parseSecrets(opts.secret),
    },
    call,
  );
  const shown = redactSecretLookingValues(publishContext);
  if (out.json) {
    out.document({ volumeId, nodeId, publishContext: shown });
    return;
  }
  out.fields([
    ['published', `${volumeId} to node ${nodeId}`],
    ['publish context', mapLines(shown)],
  ]);
  if (Object.keys(publishContext).length) out.line('(pass the publish context to stage and publish with --publish-context key=value)');
}

export async function controllerUnpublish({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const { alreadyDone } = await client.controllerUnpublishVolume({ volumeId, nodeId: opts.nodeId, secrets: parseSecrets(opts.secret) }, call);
  if (out.json) out.document({ volumeId, nodeId: opts.nodeId ?? '', unpublished: true, alreadyDone });
  else out.fields([['unpublished', (opts.nodeId ? `${volumeId} from node ${opts.nodeId}` : `${volumeId} from every node`) + alreadyGone(alreadyDone)]]);
}

export async function listVolumes({ client, out, call }: Session, _args: string[], opts: CommandOptions): Promise<void> {
  let entries: ListedVolume[];
  let nextToken = '';
  if (opts.all) {
    entries = await client.listAllVolumes({ ...call, pageSize: opts.maxEntries });
  } else {
    ({ entries, nextToken } = await client.listVolumes({ maxEntries: opts.maxEntries, startingToken: opts.startingToken }, call));
  }
  if (out.json) {
    out.document({ entries: entries.map((e) => ({ ...e, volume: volumeView(e.volume) })), nextToken });
    return;
  }
  out.table(
    ['VOLUME ID', 'CAPACITY', 'PUBLISHED ON', 'CONDITION'],
    entries.map((e) => [
      e.volume.volumeId,
      shortSize(e.volume.capacityBytes),
      e.publishedNodeIds?.join(',') || '-',
      e.condition ? (e.condition.abnormal ? `abnormal: ${e.condition.message}` : 'ok') : '-',
    ]),
  );
  if (nextToken) out.line(`\nmore volumes: --starting-token ${nextToken}`);
}

export async function validate({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const capability = capabilityOf(opts);
  const req: ValidateRequest = {
    volumeId: arg(args, 0),
    volumeCapabilities: [capability],
    volumeContext: optionalPairs('--context', opts.context),
    parameters: optionalPairs('--param', opts.param),
    secrets: parseSecrets(opts.secret),
  };
  const answer = await client.validateVolumeCapabilities(req, call);
  const verdict = checkValidation(req, answer);
  const reason = verdict.validated ? undefined : verdict.reason;
  if (out.json) {
    out.document({ volumeId: req.volumeId, volumeCapability: capability, validated: verdict.validated, reason, message: answer.message });
    return;
  }
  out.fields([
    ['validated', verdict.validated ? 'yes' : 'no'],
    ['capability', capability.toString()],
    ['reason', reason],
    ['message', answer.message || undefined],
  ]);
}

export async function listSnapshots({ client, out, call }: Session, _args: string[], opts: CommandOptions): Promise<void> {
  const filter = { sourceVolumeId: opts.source, snapshotId: opts.snapshotId, secrets: parseSecrets(opts.secret) };
  let entries: CsiSnapshot[];
  let nextToken = '';
  if (opts.all) {
    entries = await client.listAllSnapshots({ ...filter, maxEntries: opts.maxEntries }, call);
  } else {
    ({ entries, nextToken } = await client.listSnapshots({ ...filter, maxEntries: opts.maxEntries, startingToken: opts.startingToken }, call));
  }
  if (out.json) {
    out.document({ entries, nextToken });
    return;
  }
  out.table(
    ['SNAPSHOT ID', 'SOURCE VOLUME', 'SIZE', 'READY', 'CREATED'],
    entries.map((s) => [
      s.snapshotId,
      s.sourceVolumeId,
      shortSize(s.sizeBytes),
      s.readyToUse ? 'yes' : 'no',
      s.creationTime === undefined ? '-' : new Date(s.creationTime).toISOString(),
    ]),
  );
  if (nextToken) out.line(`\nmore snapshots: --starting-token ${nextToken}`);
}

export async function createSnapshot({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const snapshot = await client.createSnapshot(
    { name: arg(args, 0), sourceVolumeId: opts.source ?? '', parameters: optionalPairs('--param', opts.param), secrets: parseSecrets(opts.secret) },
    call,
  );
  if (out.json) {
    out.document(snapshot);
    return;
  }
  out.fields([
    ['snapshot id', snapshot.snapshotId],
    ['source volume', snapshot.sourceVolumeId],
    ['size', capacityText(snapshot.sizeBytes)],
    ['ready', snapshot.readyToUse ? 'yes' : 'no (still being cut)'],
    ['created', snapshot.creationTime === undefined ? undefined : new Date(snapshot.creationTime).toISOString()],
  ]);
}

export async function deleteSnapshot({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const snapshotId = arg(args, 0);
  const { alreadyDone } = await client.deleteSnapshot(snapshotId, { ...call, secrets: parseSecrets(opts.secret) });
  if (out.json) out.document({ snapshotId, deleted: true, alreadyDone });
  else out.fields([['deleted', snapshotId + alreadyGone(alreadyDone)]]);
}

export async function capacity({ client, out, call }: Session, _args: string[], opts: CommandOptions): Promise<void> {
  const capability = optionalCapabilityOf(opts);
  const answer = await client.getCapacity(
    { volumeCapabilities: capability ? [capability] : undefined, parameters: optionalPairs('--param', opts.param) },
    call,
  );
  if (out.json) {
    out.document(answer);
    return;
  }
  out.fields([
    ['available', humanSize(answer.availableCapacity)],
    ['largest volume', answer.maximumVolumeSize === undefined ? undefined : humanSize(answer.maximumVolumeSize)],
    ['smallest volume', answer.minimumVolumeSize === undefined ? undefined : humanSize(answer.minimumVolumeSize)],
  ]);
}

export async function expand({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const result = await client.controllerExpandVolume(
    { volumeId, capacityRange: capacityRangeOf(opts) ?? {}, secrets: parseSecrets(opts.secret) },
    call,
  );
  if (out.json) {
    out.document({ volumeId, ...result });
    return;
  }
  out.fields([
    ['volume id', volumeId],
    ['capacity', capacityText(result.capacityBytes)],
    ['node expansion', result.nodeExpansionRequired ? 'required: run node-expand where the volume is published' : 'not needed'],
  ]);
}

// ---- node -------------------------------------------------------------------------

export async function stage({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const stagingPath = resolve(opts.stagingPath ?? '');
  const volumeCapability = capabilityOf(opts);
  const publishContext = optionalPairs('--publish-context', opts.publishContext);
  const volumeContext = optionalPairs('--context', opts.context);
  const secrets = parseSecrets(opts.secret);
  // The CO creates the staging directory (docs/csi-rules.md, Paths).
  await mkdir(stagingPath, { recursive: true });
  await client.nodeStageVolume({ volumeId, stagingTargetPath: stagingPath, volumeCapability, publishContext, volumeContext, secrets }, call);
  if (out.json) out.document({ volumeId, stagingPath, volumeCapability, staged: true });
  else out.fields([['staged', `${volumeId} at ${stagingPath}`], ['capability', volumeCapability.toString()]]);
}

export async function publish({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const targetPath = resolve(opts.targetPath ?? '');
  const stagingPath = opts.stagingPath ? resolve(opts.stagingPath) : undefined;
  const volumeCapability = capabilityOf(opts);
  const publishContext = optionalPairs('--publish-context', opts.publishContext);
  const volumeContext = optionalPairs('--context', opts.context);
  const secrets = parseSecrets(opts.secret);
  // The CO creates the target's parent; the plugin creates the target itself.
  await mkdir(dirname(targetPath), { recursive: true });
  await client.nodePublishVolume(
    {
      volumeId,
      targetPath,
      stagingTargetPath: stagingPath,
      readonly: Boolean(opts.readonly),
      volumeCapability,
      publishContext,
      volumeContext,
      secrets,
    },
    call,
  );
  if (out.json) {
    out.document({ volumeId, targetPath, stagingPath, readonly: Boolean(opts.readonly), volumeCapability, published: true });
    return;
  }
  out.fields([
    ['published', `${volumeId} at ${targetPath}${opts.readonly ? ' (read-only)' : ''}`],
    ['capability', volumeCapability.toString()],
  ]);
}

export async function unpublish({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const targetPath = resolve(opts.targetPath ?? '');
  const { alreadyDone } = await client.nodeUnpublishVolume(volumeId, targetPath, call);
  if (out.json) out.document({ volumeId, targetPath, unpublished: true, alreadyDone });
  else out.fields([['unpublished', `${volumeId} from ${targetPath}${alreadyGone(alreadyDone)}`]]);
}

export async function unstage({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const stagingPath = resolve(opts.stagingPath ?? '');
  const { alreadyDone } = await client.nodeUnstageVolume(volumeId, stagingPath, call);
  if (out.json) out.document({ volumeId, stagingPath, unstaged: true, alreadyDone });
  else out.fields([['unstaged', `${volumeId} from ${stagingPath}${alreadyGone(alreadyDone)}`]]);
}

export async function stats({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const volumePath = resolve(opts.volumePath ?? '');
  const result = await client.nodeGetVolumeStats(volumeId, volumePath, {
    ...call,
    stagingTargetPath: opts.stagingPath ? resolve(opts.stagingPath) : undefined,
  });
  if (out.json) {
    out.document({ volumeId, volumePath, ...result });
    return;
  }
  const amount = (unit: string, n: number): string => (unit === 'BYTES' ? shortSize(n) : String(n));
  out.table(
    ['UNIT', 'TOTAL', 'USED', 'AVAILABLE'],
    result.usage.map((u) => [u.unit, amount(u.unit, u.total), amount(u.unit, u.used), amount(u.unit, u.available)]),
  );
  if (result.condition) out.line(`\ncondition  ${result.condition.abnormal ? 'abnormal' : 'ok'}${result.condition.message ? `: ${result.condition.message}` : ''}`);
}

export async function nodeExpand({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const volumePath = resolve(opts.volumePath ?? '');
  const result = await client.nodeExpandVolume(
    {
      volumeId,
      volumePath,
      stagingTargetPath: opts.stagingPath ? resolve(opts.stagingPath) : undefined,
      capacityRange: capacityRangeOf(opts),
      secrets: parseSecrets(opts.secret),
    },
    call,
  );
  if (out.json) out.document({ volumeId, volumePath, ...result });
  else out.fields([['volume id', volumeId], ['capacity', capacityText(result.capacityBytes)]]);
}
