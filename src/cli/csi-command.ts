// `berth csi`: talk to one CSI plugin socket by hand, the way a CO would.
// The tool a plugin author reaches for: every RPC has a command, requests are
// checked against the spec before anything is sent, answers are shown as a
// person reads them or as one JSON document, and secrets never show.

import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Command, Option } from 'commander';
import {
  ACCESS_MODES,
  ATTACHMENT_MODES,
  CsiClient,
  CsiError,
  capabilityFromRequest,
  checkValidation,
  type CallOptions,
  type CapacityRange,
  type CsiSnapshot,
  type CsiVolume,
  type ListedVolume,
  type ValidateRequest,
  type VolumeCapability,
  type VolumeContentSource,
} from '../csi/index.js';
import { createLogger, redactSecretLookingValues, type Logger } from '../lib/index.js';
import { describeCapabilities } from './capability-words.js';
import { EXIT_CODES_HELP } from './exit-codes.js';
import { mapLines, Output, type CliIo, type Redactor } from './output.js';
import { UsageError } from './usage-error.js';
import { collect, humanDuration, humanSize, parseCount, parseDuration, parsePairs, parseSecrets, parseSize } from './values.js';

/** What a command run shares with runCli, so that a failure can be worded (see describeFailure). */
export interface RunState {
  /** The exit code a command chose (alloc exec: the remote command's). */
  exitCode?: number;
  endpoint?: string;
  json?: boolean;
  timeout?: string;
  timedOut?: boolean;
}

/** What the commands are built with. */
export interface CommandContext {
  io: CliIo;
  redactor: Redactor;
  /** Fires on SIGINT/SIGTERM (main owns the signal handlers). */
  signal: AbortSignal;
  state: RunState;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const DEFAULT_TIMEOUT = '30s';
const EXAMPLE_ENDPOINT = 'unix:///tmp/csi.sock';

interface GlobalOptions {
  endpoint?: string;
  json?: boolean;
  timeout: number;
  retry?: boolean;
  logLevel: string;
}

/** Options of the commands, as commander fills them. Each command reads its own. */
interface CommandOptions extends GlobalOptions {
  size?: number;
  limit?: number;
  accessMode?: string;
  attachment?: string;
  fsType?: string;
  mountFlag?: string[];
  mountGroup?: string;
  param?: string[];
  secret?: string[];
  context?: string[];
  publishContext?: string[];
  fromSnapshot?: string;
  fromVolume?: string;
  nodeId?: string;
  readonly?: boolean;
  stagingPath?: string;
  targetPath?: string;
  volumePath?: string;
  maxEntries?: number;
  startingToken?: string;
  all?: boolean;
  source?: string;
  snapshotId?: string;
}

interface Session {
  client: CsiClient;
  out: Output;
  call: CallOptions;
}

type Run = (session: Session, args: string[], opts: CommandOptions) => Promise<void>;

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

// ---- building blocks --------------------------------------------------------

function sub(parent: Command, name: string, description: string, examples: readonly string[]): Command {
  const cmd = parent.command(name).description(description);
  const lines = examples.map((e) => `  $ berth csi --endpoint ${EXAMPLE_ENDPOINT} ${e}`).join('\n');
  cmd.addHelpText('after', `\nExamples:\n${lines}\n\nSee \`berth csi --help\` for the global flags and exit codes.`);
  return cmd;
}

function capabilityOptions(cmd: Command, opts: { defaults?: boolean } = {}): Command {
  const defaults = opts.defaults ?? true;
  const access = new Option('--access-mode <mode>', 'how the volume will be used').choices(ACCESS_MODES);
  const attachment = new Option('--attachment <mode>', 'a mounted filesystem or a raw block device').choices(ATTACHMENT_MODES);
  if (defaults) {
    access.default('single-node-writer');
    attachment.default('file-system');
  }
  return cmd
    .addOption(access)
    .addOption(attachment)
    .option('--fs-type <type>', 'filesystem type, e.g. ext4 (file-system only)')
    .option('--mount-flag <flag>', 'mount option; repeatable; never printed', collect)
    .option('--mount-group <group>', 'volume_mount_group (when the plugin has VOLUME_MOUNT_GROUP)');
}

function contextOptions(cmd: Command, opts: { publishContext?: boolean } = {}): Command {
  if (opts.publishContext ?? true) cmd.option('--publish-context <key=value>', 'from controller-publish; repeatable', collect);
  cmd.option('--context <key=value>', 'volume context from create-volume; repeatable', collect);
  return secretOption(cmd);
}

function secretOption(cmd: Command): Command {
  return cmd.option('--secret <key=value>', 'secret sent to the plugin; repeatable; never printed', collect);
}

/** The capability the flags ask for (defaults: single-node-writer, file-system). Throws CsiRequestError. */
function capabilityOf(opts: CommandOptions): VolumeCapability {
  return capabilityFromRequest({
    accessMode: opts.accessMode ?? 'single-node-writer',
    attachmentMode: opts.attachment ?? 'file-system',
    fsType: opts.fsType,
    mountFlags: opts.mountFlag,
    mountGroup: opts.mountGroup,
  });
}

/** Like capabilityOf, but undefined when no capability flag was given. */
function optionalCapabilityOf(opts: CommandOptions): VolumeCapability | undefined {
  const given = opts.accessMode || opts.attachment || opts.fsType || opts.mountFlag?.length || opts.mountGroup;
  return given ? capabilityOf(opts) : undefined;
}

function capacityRangeOf(opts: CommandOptions): CapacityRange | undefined {
  if (opts.size === undefined && opts.limit === undefined) return undefined;
  const range: CapacityRange = {};
  if (opts.size !== undefined) range.requiredBytes = opts.size;
  if (opts.limit !== undefined) range.limitBytes = opts.limit;
  return range;
}

function optionalPairs(flag: string, entries: string[] | undefined): Record<string, string> | undefined {
  return entries?.length ? parsePairs(flag, entries) : undefined;
}

function arg(args: readonly string[], i: number): string {
  return args[i] ?? '';
}

function clientLogger(ctx: CommandContext, level: string): Logger {
  return createLogger({ level, destination: { write: (line: string) => ctx.io.stderr(ctx.redactor.apply(line)) } });
}

/**
 * Wraps a command body: reads the global flags, opens the client, arms the
 * --timeout and SIGINT, and always closes the client. The timer is not
 * unref'd on purpose: it keeps the process alive while a retry backoff waits.
 */
function action(ctx: CommandContext, run: Run): (...params: unknown[]) => Promise<void> {
  return async (...params) => {
    const cmd = params[params.length - 1] as Command;
    const opts = cmd.optsWithGlobals<CommandOptions>();
    ctx.state.json = Boolean(opts.json);
    ctx.state.timeout = humanDuration(opts.timeout);
    const endpoint = opts.endpoint ?? process.env['CSI_ENDPOINT'];
    if (!endpoint) throw new UsageError(`--endpoint is required (or set CSI_ENDPOINT), e.g. --endpoint ${EXAMPLE_ENDPOINT}`);
    ctx.state.endpoint = endpoint;
    const client = new CsiClient({ endpoint, logger: clientLogger(ctx, opts.logLevel) });
    ctx.state.endpoint = client.endpoint;
    const deadline = new AbortController();
    const timer = setTimeout(() => {
      ctx.state.timedOut = true;
      deadline.abort(new Error(`no answer within ${ctx.state.timeout}`));
    }, opts.timeout);
    const call: CallOptions = {
      signal: AbortSignal.any([ctx.signal, deadline.signal]),
      deadlineMs: opts.timeout,
      ...(opts.retry ? {} : { retry: false as const }),
    };
    try {
      await run({ client, out: new Output(ctx.io, ctx.redactor, ctx.state.json), call }, cmd.processedArgs as string[], opts);
    } finally {
      clearTimeout(timer);
      await client.close();
    }
  };
}

/** Runs `fn`; an UNIMPLEMENTED answer becomes "not served" instead of failing the command. */
async function served<T>(fn: () => Promise<T>): Promise<{ served: true; capabilities: T } | { served: false; reason: string }> {
  try {
    return { served: true, capabilities: await fn() };
  } catch (err) {
    if (err instanceof CsiError && err.grpcCodeName === 'UNIMPLEMENTED') {
      return { served: false, reason: `UNIMPLEMENTED${err.details ? `: ${err.details}` : ''}` };
    }
    throw err;
  }
}

/** A volume for printing: context keys that look like credentials are redacted. */
function volumeView(v: CsiVolume): CsiVolume {
  return { ...v, volumeContext: redactSecretLookingValues(v.volumeContext) };
}

function sourceText(source: VolumeContentSource | undefined): string | undefined {
  if (!source) return undefined;
  return 'snapshotId' in source ? `snapshot ${source.snapshotId}` : `volume ${source.volumeId}`;
}

function capacityText(bytes: number): string {
  return bytes ? humanSize(bytes) : 'unknown (the plugin did not say)';
}

function shortSize(bytes: number): string {
  return bytes ? humanSize(bytes).replace(/ \(.*\)$/, '') : '-';
}

function printVolume(out: Output, v: CsiVolume): void {
  out.fields([
    ['volume id', v.volumeId],
    ['capacity', capacityText(v.capacityBytes)],
    ['context', mapLines(redactSecretLookingValues(v.volumeContext))],
    ['source', sourceText(v.contentSource)],
    ['topology', v.accessibleTopology.length ? v.accessibleTopology.map((t) => mapLines(t).join(',')) : undefined],
  ]);
}

// ---- identity -----------------------------------------------------------------

async function info({ client, out, call }: Session): Promise<void> {
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

async function probe({ client, out, call }: Session): Promise<void> {
  const { ready } = await client.probe(call);
  if (out.json) out.document({ ready });
  else out.fields([['ready', ready ? 'yes' : 'no (the plugin is still starting)']]);
}

async function capabilities({ client, out, call }: Session): Promise<void> {
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

async function nodeInfo({ client, out, call }: Session): Promise<void> {
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

async function createVolume({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
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
function alreadyGone(alreadyDone: boolean): string {
  return alreadyDone ? ' (already gone: the plugin answered NOT_FOUND)' : '';
}

async function deleteVolume({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const { alreadyDone } = await client.deleteVolume(volumeId, { ...call, secrets: parseSecrets(opts.secret) });
  if (out.json) out.document({ volumeId, deleted: true, alreadyDone });
  else out.fields([['deleted', volumeId + alreadyGone(alreadyDone)]]);
}

async function controllerPublish({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
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

async function controllerUnpublish({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const { alreadyDone } = await client.controllerUnpublishVolume({ volumeId, nodeId: opts.nodeId, secrets: parseSecrets(opts.secret) }, call);
  if (out.json) out.document({ volumeId, nodeId: opts.nodeId ?? '', unpublished: true, alreadyDone });
  else out.fields([['unpublished', (opts.nodeId ? `${volumeId} from node ${opts.nodeId}` : `${volumeId} from every node`) + alreadyGone(alreadyDone)]]);
}

async function listVolumes({ client, out, call }: Session, _args: string[], opts: CommandOptions): Promise<void> {
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

async function validate({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
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

async function listSnapshots({ client, out, call }: Session, _args: string[], opts: CommandOptions): Promise<void> {
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

async function createSnapshot({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
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

async function deleteSnapshot({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const snapshotId = arg(args, 0);
  const { alreadyDone } = await client.deleteSnapshot(snapshotId, { ...call, secrets: parseSecrets(opts.secret) });
  if (out.json) out.document({ snapshotId, deleted: true, alreadyDone });
  else out.fields([['deleted', snapshotId + alreadyGone(alreadyDone)]]);
}

async function capacity({ client, out, call }: Session, _args: string[], opts: CommandOptions): Promise<void> {
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

async function expand({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
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

async function stage({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
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

async function publish({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
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

async function unpublish({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const targetPath = resolve(opts.targetPath ?? '');
  const { alreadyDone } = await client.nodeUnpublishVolume(volumeId, targetPath, call);
  if (out.json) out.document({ volumeId, targetPath, unpublished: true, alreadyDone });
  else out.fields([['unpublished', `${volumeId} from ${targetPath}${alreadyGone(alreadyDone)}`]]);
}

async function unstage({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
  const volumeId = arg(args, 0);
  const stagingPath = resolve(opts.stagingPath ?? '');
  const { alreadyDone } = await client.nodeUnstageVolume(volumeId, stagingPath, call);
  if (out.json) out.document({ volumeId, stagingPath, unstaged: true, alreadyDone });
  else out.fields([['unstaged', `${volumeId} from ${stagingPath}${alreadyGone(alreadyDone)}`]]);
}

async function stats({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
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

async function nodeExpand({ client, out, call }: Session, args: string[], opts: CommandOptions): Promise<void> {
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
