// `berth plugin <name>`: runs a CSI plugin that ships with Berth in the
// foreground, the way a CO starts any plugin task (CSI_ENDPOINT, one socket).

import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Command, Option } from 'commander';
import type * as CsiModule from '../csi/index.js';
import { BerthError, createLogger, describeError } from '../lib/index.js';
import type * as HostpathModule from '../csi-plugins/index.js';
import { addPluginStatus } from './plugin-status-command.js';
import type { CommandContext } from './csi-command.js';
import { PLUGIN_EXIT_CODES_HELP } from './exit-codes.js';
import { UsageError } from './usage-error.js';
import { parseCount, parseSize } from './values.js';

// `plugin status` talks to the API; only `plugin hostpath` loads the plugin
// (and with it gRPC and the CSI protobuf code).
const loadHostpath = (): Promise<typeof HostpathModule> => import('../csi-plugins/index.js');
const loadCsi = (): Promise<typeof CsiModule> => import('../csi/index.js');
/** HOSTPATH_PLUGIN_NAME, written out so that help need not load the plugin (a test keeps them equal). */
export const HOSTPATH_NAME_IN_HELP = 'hostpath.csi.berth.dev';

const MODES = ['monolith', 'controller', 'node'] as const;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
// NodeGetInfo.node_id limit (CSI spec, Size Limits).
const MAX_NODE_ID_BYTES = 256;

interface HostpathOptions {
  endpoint?: string;
  nodeId: string;
  dataDir: string;
  nodeStateDir?: string;
  mode: (typeof MODES)[number];
  publishUnpublish: boolean;
  maxVolumes?: number;
  capacity?: number;
  logLevel: string;
}

/** Builds `berth plugin` and its subcommands. */
export function pluginCommand(ctx: CommandContext): Command {
  const plugin = new Command('plugin').description('Show the CSI plugins of the cluster, or run one that ships with Berth');
  addPluginStatus(plugin, ctx);

  plugin
    .command('hostpath')
    .description(`Serve the hostpath CSI plugin (${HOSTPATH_NAME_IN_HELP}): volumes are directories under --data-dir`)
    .option('--endpoint <endpoint>', 'socket to serve on, unix:///abs/path.sock (default: $CSI_ENDPOINT)')
    .requiredOption('--node-id <id>', 'the node ID the plugin reports in NodeGetInfo')
    .requiredOption('--data-dir <dir>', 'where volumes and the plugin state live (created if missing)')
    .option('--node-state-dir <dir>', "where this node's records live instead of --data-dir (each node its own when nodes share --data-dir)")
    .addOption(new Option('--mode <mode>', 'which CSI services to serve').choices(MODES).default('monolith'))
    .option('--no-publish-unpublish', 'do not advertise PUBLISH_UNPUBLISH_VOLUME (no controller-publish step)')
    .option('--max-volumes <n>', 'max_volumes_per_node reported by NodeGetInfo and enforced by controller publish (0: no limit)', parseCount)
    .option('--capacity <size>', 'total capacity offered, e.g. 10GiB', parseSize)
    .addOption(new Option('--log-level <level>', 'log level (JSON lines on stderr)').choices(LOG_LEVELS).default('info'))
    .addHelpText(
      'after',
      `
Runs until SIGINT or SIGTERM, then stops serving and exits 0. Logs are JSON
lines on stderr; nothing is written to stdout.

${PLUGIN_EXIT_CODES_HELP}

Examples:
  $ berth plugin hostpath --endpoint unix:///run/berth/hostpath.sock --node-id node-a --data-dir /var/lib/berth/hostpath
  $ CSI_ENDPOINT=unix:///tmp/hp.sock berth plugin hostpath --node-id n1 --data-dir /tmp/hp --mode node --max-volumes 8`,
    )
    .action(async (opts: HostpathOptions) => runHostpath(ctx, opts));

  return plugin;
}

async function runHostpath(ctx: CommandContext, opts: HostpathOptions): Promise<void> {
  const endpoint = opts.endpoint ?? process.env['CSI_ENDPOINT'];
  if (!endpoint) throw new UsageError('--endpoint is required (or set CSI_ENDPOINT), e.g. --endpoint unix:///run/berth/hostpath.sock');
  const [{ HostpathPlugin }, { parseEndpoint }] = await Promise.all([loadHostpath(), loadCsi()]);
  const socketPath = parseEndpoint(endpoint);
  if (opts.nodeId.trim() === '') throw new UsageError('--node-id must not be empty');
  if (Buffer.byteLength(opts.nodeId) > MAX_NODE_ID_BYTES) throw new UsageError(`--node-id is longer than ${MAX_NODE_ID_BYTES} bytes`);
  const dataDir = resolve(opts.dataDir);

  // Volumes may hold anything a workload writes: only root looks inside.
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await mkdir(dirname(socketPath), { recursive: true });

  const logger = createLogger({
    level: opts.logLevel,
    destination: { write: (line: string) => ctx.io.stderr(ctx.redactor.apply(line)) },
  });
  let plugin: InstanceType<typeof HostpathPlugin>;
  try {
    plugin = new HostpathPlugin({
      endpoint: `unix://${socketPath}`,
      nodeId: opts.nodeId,
      dataDir,
      ...(opts.nodeStateDir === undefined ? {} : { nodeStateDir: resolve(opts.nodeStateDir) }),
      mode: opts.mode,
      publishUnpublish: opts.publishUnpublish,
      ...(opts.maxVolumes === undefined ? {} : { maxVolumesPerNode: opts.maxVolumes }),
      ...(opts.capacity === undefined ? {} : { capacityBytes: opts.capacity }),
      logger,
    });
  } catch (err) {
    // The flags were checked above; whatever the plugin still refuses is usage too.
    if (err instanceof BerthError && err.code === 'HOSTPATH_INVALID_OPTIONS') throw new UsageError(err.message);
    throw err;
  }
  try {
    await plugin.start();
  } catch (err) {
    await plugin.stop();
    throw err;
  }

  await untilAborted(ctx.signal);
  logger.child({ component: 'cli' }).info({ reason: describeError(ctx.signal.reason) }, 'stopping hostpath plugin');
  await plugin.stop();
}

function untilAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((done) => signal.addEventListener('abort', () => done(), { once: true }));
}
