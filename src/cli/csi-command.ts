// `berth csi`: talk to one CSI plugin socket by hand, the way a CO would.
// The tool a plugin author reaches for: every RPC has a command, requests are
// checked against the spec before anything is sent, answers are shown as a
// person reads them or as one JSON document, and secrets never show.

import { Command, Option } from 'commander';
import { EXIT_CODES_HELP } from './exit-codes.js';
import { collect, parseCount, parseDuration, parseSize } from './values.js';
import type { CommandContext } from './command-context.js';
import { action, capabilityOptions, contextOptions, EXAMPLE_ENDPOINT, secretOption, sub, type Run } from './_csi-session.js';
import {
  info,
  probe,
  capabilities,
  nodeInfo,
  createVolume,
  deleteVolume,
  controllerPublish,
  controllerUnpublish,
  listVolumes,
  validate,
  listSnapshots,
  createSnapshot,
  deleteSnapshot,
  capacity,
  expand,
  stage,
  publish,
  unpublish,
  unstage,
  stats,
  nodeExpand,
} from './_csi-rpcs.js';

export type { CommandContext, RunState } from './command-context.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const DEFAULT_TIMEOUT = '30s';

/**
 * Builds `berth csi` and its subcommands. Actions throw; runCli turns the
 * error into the exit code. Nothing is sent before every flag was checked.
 */
export function csiCommand(ctx: CommandContext): Command {
  const csi = new Command('csi')
    .description('Call a CSI plugin directly, one RPC at a time (for plugin authors and debugging)')
    .option('--endpoint <endpoint>', 'the plugin socket, unix:///abs/path.sock (default: $CSI_ENDPOINT)')
    .option('--json', 'print one JSON document on stdout instead of text')
    .addOption(
      new Option('--timeout <duration>', 'deadline of the call, e.g. 30s, 2m, 500ms').default(parseDuration(DEFAULT_TIMEOUT), DEFAULT_TIMEOUT).argParser(parseDuration),
    )
    .option('--retry', "retry UNAVAILABLE/ABORTED answers with the RPC's backoff (default: one attempt)")
    .addOption(new Option('--log-level <level>', 'client log level (JSON lines on stderr)').choices(LOG_LEVELS).default('warn'));
  csi.addHelpText(
    'after',
    `
Mount flags and secrets are never printed, in text, JSON or error messages.

${EXIT_CODES_HELP}

Examples:
  $ berth csi --endpoint ${EXAMPLE_ENDPOINT} info
  $ berth csi --endpoint ${EXAMPLE_ENDPOINT} capabilities --json
  $ CSI_ENDPOINT=${EXAMPLE_ENDPOINT} berth csi create-volume data --size 1GiB`,
  );

  const act = (run: Run) => action(ctx, run);

  sub(csi, 'info', 'Show who the plugin is (GetPluginInfo) and what it serves (GetPluginCapabilities)', ['info']).action(act(info));
  sub(csi, 'probe', 'Ask whether the plugin is ready (Probe)', ['probe']).action(act(probe));
  sub(csi, 'capabilities', 'List plugin, controller and node capabilities', ['capabilities']).action(act(capabilities));
  sub(csi, 'node-info', 'Show the node as the plugin sees it (NodeGetInfo)', ['node-info']).action(act(nodeInfo));

  secretOption(
    capabilityOptions(
      sub(csi, 'create-volume', 'Create a volume (CreateVolume)', [
        'create-volume data --size 1GiB',
        'create-volume db --size 10G --limit 20G --param tier=fast --secret token=s3cr3t',
        'create-volume copy --from-snapshot snap-1',
      ])
        .argument('<name>', 'the volume name; the plugin creates it once per name')
        .option('--size <size>', 'at least this big: 1GiB, 500MiB, 10G or bytes', parseSize)
        .option('--limit <size>', 'at most this big', parseSize)
        .option('--param <key=value>', 'plugin parameter; repeatable', collect)
        .option('--from-snapshot <id>', 'fill the volume from a snapshot')
        .option('--from-volume <id>', 'clone another volume'),
    ),
  ).action(act(createVolume));

  secretOption(
    sub(csi, 'delete-volume', 'Delete a volume (DeleteVolume; an unknown volume counts as deleted)', ['delete-volume vol-1']).argument(
      '<volume-id>',
    ),
  ).action(act(deleteVolume));

  contextOptions(
    capabilityOptions(
      sub(csi, 'controller-publish', 'Attach a volume to a node (ControllerPublishVolume)', ['controller-publish vol-1 --node-id node-a'])
        .argument('<volume-id>')
        .requiredOption('--node-id <id>', "the plugin's node ID (see node-info)")
        .option('--readonly', 'attach read-only'),
    ),
    { publishContext: false },
  ).action(act(controllerPublish));

  secretOption(
    sub(csi, 'controller-unpublish', 'Detach a volume from a node (ControllerUnpublishVolume)', ['controller-unpublish vol-1 --node-id node-a'])
      .argument('<volume-id>')
      .option('--node-id <id>', 'the node to detach from (default: every node)'),
  ).action(act(controllerUnpublish));

  contextOptions(
    capabilityOptions(
      sub(csi, 'stage', 'Stage a volume on this node (NodeStageVolume); creates the staging directory', [
        'stage vol-1 --staging-path /var/lib/berth/staging/vol-1',
        'stage vol-1 --staging-path /mnt/st --fs-type ext4 --mount-flag noatime --publish-context devicePath=/dev/sdb',
      ])
        .argument('<volume-id>')
        .requiredOption('--staging-path <path>', 'the staging directory (created if missing)'),
    ),
  ).action(act(stage));

  contextOptions(
    capabilityOptions(
      sub(csi, 'publish', "Publish a volume at a target path (NodePublishVolume); creates the target's parent", [
        'publish vol-1 --target-path /srv/app/data --staging-path /var/lib/berth/staging/vol-1',
        'publish vol-1 --target-path /srv/ro --readonly --access-mode single-node-reader-only',
      ])
        .argument('<volume-id>')
        .requiredOption('--target-path <path>', 'where the volume appears; the plugin creates it, berth creates its parent')
        .option('--staging-path <path>', 'the staging path used by stage (when the plugin stages)')
        .option('--readonly', 'publish read-only'),
    ),
  ).action(act(publish));

  sub(csi, 'unpublish', 'Unpublish a volume from a target path (NodeUnpublishVolume)', ['unpublish vol-1 --target-path /srv/app/data'])
    .argument('<volume-id>')
    .requiredOption('--target-path <path>', 'the target path given to publish')
    .action(act(unpublish));

  sub(csi, 'unstage', 'Unstage a volume from this node (NodeUnstageVolume)', ['unstage vol-1 --staging-path /var/lib/berth/staging/vol-1'])
    .argument('<volume-id>')
    .requiredOption('--staging-path <path>', 'the staging path given to stage')
    .action(act(unstage));

  sub(csi, 'list-volumes', 'List volumes (ListVolumes)', ['list-volumes', 'list-volumes --max-entries 10', 'list-volumes --all --json'])
    .option('--max-entries <n>', 'page size (0: the plugin decides)', parseCount)
    .option('--starting-token <token>', 'continue from a previous page')
    .option('--all', 'fetch every page')
    .action(act(listVolumes));

  contextOptions(
    capabilityOptions(
      sub(csi, 'validate', 'Ask whether a volume supports a capability (ValidateVolumeCapabilities)', [
        'validate vol-1 --access-mode multi-node-multi-writer',
        'validate vol-1 --attachment block-device',
      ])
        .argument('<volume-id>')
        .option('--param <key=value>', 'parameters the volume was created with; repeatable', collect),
    ),
    { publishContext: false },
  ).action(act(validate));

  sub(csi, 'stats', 'Show volume usage (NodeGetVolumeStats)', ['stats vol-1 --volume-path /srv/app/data'])
    .argument('<volume-id>')
    .requiredOption('--volume-path <path>', 'a path the volume is published or staged at')
    .option('--staging-path <path>', 'the staging path, when the plugin stages')
    .action(act(stats));

  secretOption(
    sub(csi, 'list-snapshots', 'List snapshots (ListSnapshots)', ['list-snapshots', 'list-snapshots --source vol-1'])
      .option('--source <volume-id>', 'only snapshots of this volume')
      .option('--snapshot-id <id>', 'only this snapshot')
      .option('--max-entries <n>', 'page size (0: the plugin decides)', parseCount)
      .option('--starting-token <token>', 'continue from a previous page')
      .option('--all', 'fetch every page'),
  ).action(act(listSnapshots));

  secretOption(
    sub(csi, 'create-snapshot', 'Snapshot a volume (CreateSnapshot)', ['create-snapshot nightly --source vol-1'])
      .argument('<name>', 'the snapshot name; the plugin creates it once per name')
      .requiredOption('--source <volume-id>', 'the volume to snapshot')
      .option('--param <key=value>', 'plugin parameter; repeatable', collect),
  ).action(act(createSnapshot));

  secretOption(
    sub(csi, 'delete-snapshot', 'Delete a snapshot (DeleteSnapshot; an unknown snapshot counts as deleted)', ['delete-snapshot snap-1']).argument(
      '<snapshot-id>',
    ),
  ).action(act(deleteSnapshot));

  capabilityOptions(
    sub(csi, 'capacity', 'Show the free capacity (GetCapacity)', ['capacity', 'capacity --access-mode single-node-writer --param tier=fast']).option(
      '--param <key=value>',
      'plugin parameter; repeatable',
      collect,
    ),
    { defaults: false },
  ).action(act(capacity));

  secretOption(
    sub(csi, 'expand', 'Grow a volume (ControllerExpandVolume)', ['expand vol-1 --size 2GiB'])
      .argument('<volume-id>')
      .requiredOption('--size <size>', 'at least this big', parseSize)
      .option('--limit <size>', 'at most this big', parseSize),
  ).action(act(expand));

  secretOption(
    sub(csi, 'node-expand', 'Grow the filesystem of a published volume (NodeExpandVolume)', ['node-expand vol-1 --volume-path /srv/app/data --size 2GiB'])
      .argument('<volume-id>')
      .requiredOption('--volume-path <path>', 'where the volume is published')
      .option('--staging-path <path>', 'the staging path, when the plugin stages')
      .option('--size <size>', 'the new size', parseSize),
  ).action(act(nodeExpand));

  return csi;
}
