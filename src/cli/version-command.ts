// `berth version`: the release of this berth (as `nomad version` prints its own).

import { Command } from 'commander';
import type { CommandContext } from './command-context.js';

/** Builds `berth version`; `version` is the package's version string. */
export function versionCommand(ctx: CommandContext, version: string): Command {
  return new Command('version')
    .description('Print the version of berth')
    .option('--json', 'print {"version": ..., "node": ...}')
    .action((opts: { json?: boolean }) => {
      if (opts.json) ctx.io.stdout(`${JSON.stringify({ version, node: process.version }, null, 2)}\n`);
      else ctx.io.stdout(`Berth v${version} (Node.js ${process.version})\n`);
    });
}
