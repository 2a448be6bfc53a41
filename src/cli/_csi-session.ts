// `berth csi`'s building blocks: the session one command runs in (its
// client, output and call options), the flag helpers the subcommands share,
// and how a volume is shown. Private to src/cli (csi-command.ts and its RPCs).

import { type Command, Option } from 'commander';
import {
  ACCESS_MODES,
  ATTACHMENT_MODES,
  CsiClient,
  CsiError,
  capabilityFromRequest,
  type CallOptions,
  type CapacityRange,
  type CsiVolume,
  type VolumeCapability,
  type VolumeContentSource,
} from '../csi/index.js';
import { createLogger, redactSecretLookingValues, type Logger } from '../lib/index.js';
import { mapLines, Output } from './output.js';
import { UsageError } from './usage-error.js';
import { collect, humanDuration, humanSize, parsePairs } from './values.js';
import type { CommandContext } from './command-context.js';

export const EXAMPLE_ENDPOINT = 'unix:///tmp/csi.sock';

interface GlobalOptions {
  endpoint?: string;
  json?: boolean;
  timeout: number;
  retry?: boolean;
  logLevel: string;
}

/** Options of the commands, as commander fills them. Each command reads its own. */
export interface CommandOptions extends GlobalOptions {
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

export interface Session {
  client: CsiClient;
  out: Output;
  call: CallOptions;
}

export type Run = (session: Session, args: string[], opts: CommandOptions) => Promise<void>;

// ---- building blocks --------------------------------------------------------

export function sub(parent: Command, name: string, description: string, examples: readonly string[]): Command {
  const cmd = parent.command(name).description(description);
  const lines = examples.map((e) => `  $ berth csi --endpoint ${EXAMPLE_ENDPOINT} ${e}`).join('\n');
  cmd.addHelpText('after', `\nExamples:\n${lines}\n\nSee \`berth csi --help\` for the global flags and exit codes.`);
  return cmd;
}

export function capabilityOptions(cmd: Command, opts: { defaults?: boolean } = {}): Command {
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

export function contextOptions(cmd: Command, opts: { publishContext?: boolean } = {}): Command {
  if (opts.publishContext ?? true) cmd.option('--publish-context <key=value>', 'from controller-publish; repeatable', collect);
  cmd.option('--context <key=value>', 'volume context from create-volume; repeatable', collect);
  return secretOption(cmd);
}

export function secretOption(cmd: Command): Command {
  return cmd.option('--secret <key=value>', 'secret sent to the plugin; repeatable; never printed', collect);
}

/** The capability the flags ask for (defaults: single-node-writer, file-system). Throws CsiRequestError. */
export function capabilityOf(opts: CommandOptions): VolumeCapability {
  return capabilityFromRequest({
    accessMode: opts.accessMode ?? 'single-node-writer',
    attachmentMode: opts.attachment ?? 'file-system',
    fsType: opts.fsType,
    mountFlags: opts.mountFlag,
    mountGroup: opts.mountGroup,
  });
}

/** Like capabilityOf, but undefined when no capability flag was given. */
export function optionalCapabilityOf(opts: CommandOptions): VolumeCapability | undefined {
  const given = opts.accessMode || opts.attachment || opts.fsType || opts.mountFlag?.length || opts.mountGroup;
  return given ? capabilityOf(opts) : undefined;
}

export function capacityRangeOf(opts: CommandOptions): CapacityRange | undefined {
  if (opts.size === undefined && opts.limit === undefined) return undefined;
  const range: CapacityRange = {};
  if (opts.size !== undefined) range.requiredBytes = opts.size;
  if (opts.limit !== undefined) range.limitBytes = opts.limit;
  return range;
}

export function optionalPairs(flag: string, entries: string[] | undefined): Record<string, string> | undefined {
  return entries?.length ? parsePairs(flag, entries) : undefined;
}

export function arg(args: readonly string[], i: number): string {
  return args[i] ?? '';
}

export function clientLogger(ctx: CommandContext, level: string): Logger {
  return createLogger({ level, destination: { write: (line: string) => ctx.io.stderr(ctx.redactor.apply(line)) } });
}

/**
 * Wraps a command body: reads the global flags, opens the client, arms the
 * --timeout and SIGINT, and always closes the client. The timer is not
 * unref'd on purpose: it keeps the process alive while a retry backoff waits.
 */
export function action(ctx: CommandContext, run: Run): (...params: unknown[]) => Promise<void> {
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
export async function served<T>(fn: () => Promise<T>): Promise<{ served: true; capabilities: T } | { served: false; reason: string }> {
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
export function volumeView(v: CsiVolume): CsiVolume {
  return { ...v, volumeContext: redactSecretLookingValues(v.volumeContext) };
}

export function sourceText(source: VolumeContentSource | undefined): string | undefined {
  if (!source) return undefined;
  return 'snapshotId' in source ? `snapshot ${source.snapshotId}` : `volume ${source.volumeId}`;
}

export function capacityText(bytes: number): string {
  return bytes ? humanSize(bytes) : 'unknown (the plugin did not say)';
}

export function shortSize(bytes: number): string {
  return bytes ? humanSize(bytes).replace(/ \(.*\)$/, '') : '-';
}

export function printVolume(out: Output, v: CsiVolume): void {
  out.fields([
    ['volume id', v.volumeId],
    ['capacity', capacityText(v.capacityBytes)],
    ['context', mapLines(redactSecretLookingValues(v.volumeContext))],
    ['source', sourceText(v.contentSource)],
    ['topology', v.accessibleTopology.length ? v.accessibleTopology.map((t) => mapLines(t).join(',')) : undefined],
  ]);
}
