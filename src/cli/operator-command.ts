// `berth operator snapshot save|restore`: backup and restore of a server's
// state, offline, straight against its store (the SQLite file in a data
// dir, or an etcd prefix), in Berth's own snapshot format. A snapshot saved
// from one kind of store restores into the other: that is how a single
// server's SQLite state moves into etcd. `operator scheduler` and `operator
// metrics` go through the API (operator-api-commands.ts).

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Command } from 'commander';
import type * as ServerModule from '../server/index.js';
import type { CommandContext } from './command-context.js';
import { addOperatorApiCommands } from './operator-api-commands.js';
import { Output } from './output.js';
import { UsageError } from './usage-error.js';

// The stores (SQLite, etcd, gRPC) load only when this command runs.
const loadServer = (): Promise<typeof ServerModule> => import('../server/index.js');

interface StoreFlags {
  dataDir?: string;
  etcdEndpoints?: string;
  etcdPrefix?: string;
  json?: boolean;
}

const ETCD_URL = /^https?:\/\/[^\s/]+$/;

/** Builds `berth operator`. */
export function operatorCommand(ctx: CommandContext): Command {
  const operator = new Command('operator').description("Cluster operations: backup and restore of the server state, the scheduler's configuration, metrics");
  const snapshot = new Command('snapshot').description("Save the server state to a file, or restore it from one");
  const storeOptions = (cmd: Command): Command =>
    cmd
      .option('--data-dir <dir>', "a server's data dir: its state is <dir>/server/state.db (SQLite)")
      .option('--etcd-endpoints <urls>', 'the state is in etcd at these comma-separated client URLs')
      .option('--etcd-prefix <prefix>', 'the etcd key prefix of the state', '/berth')
      .option('--json', 'print the summary as JSON');
  snapshot.addCommand(
    storeOptions(new Command('save').description('Save a consistent snapshot of the state (one index) to FILE (mode 0600: it holds volume secrets)').argument('<file>'))
      .action(async (file: string, flags: StoreFlags) => {
        const out = new Output(ctx.io, ctx.redactor, Boolean(flags.json));
        ctx.state.json = Boolean(flags.json);
        const { saveSnapshot } = await loadServer();
        const { store, where } = await openStore(flags, false);
        try {
          const summary = await saveSnapshot(store, path.resolve(file));
          if (out.json) out.document({ file: path.resolve(file), from: where, ...summary });
          else out.line(`Saved ${summary.rows} rows at index ${summary.index} from ${where} to ${file}`);
        } finally {
          store.close();
        }
      }),
  );
  snapshot.addCommand(
    storeOptions(new Command('restore').description('Restore FILE into an empty state store (a fresh data dir or etcd prefix, no server running on it)').argument('<file>'))
      .action(async (file: string, flags: StoreFlags) => {
        const out = new Output(ctx.io, ctx.redactor, Boolean(flags.json));
        ctx.state.json = Boolean(flags.json);
        const { restoreSnapshot } = await loadServer();
        const { store, where } = await openStore(flags, true);
        try {
          const summary = await restoreSnapshot(store, path.resolve(file));
          if (out.json) out.document({ file: path.resolve(file), into: where, ...summary });
          else out.line(`Restored ${summary.rows} rows from ${file} into ${where}; its index is now ${summary.index}`);
        } finally {
          store.close();
        }
      }),
  );
  snapshot.addHelpText(
    'after',
    `
Both work offline, straight against the store: stop the servers before a
restore. A restore refuses a store that already holds state. The file holds
every row with its secrets (mode 0600) and no event history; restored rows
get new indexes from the store they go into.

Examples:
  $ berth operator snapshot save backup.snap --data-dir /var/lib/berth
  $ berth operator snapshot save backup.snap --etcd-endpoints http://10.0.0.1:2379
  $ berth operator snapshot restore backup.snap --etcd-endpoints http://10.0.0.1:2379,http://10.0.0.2:2379

Moving a single server's state into etcd: stop it, save with --data-dir,
restore with --etcd-endpoints, then start the servers with the etcd store.

Exit codes:
  0    saved or restored
  1    the file is not a valid snapshot, the target is not empty, or the
       store failed (STORE_UNAVAILABLE: etcd unreachable or without quorum)
  2    bad usage (no store or two stores named)`,
  );
  operator.addCommand(snapshot);
  addOperatorApiCommands(operator, ctx);
  return operator;
}

async function openStore(flags: StoreFlags, forRestore: boolean): Promise<{ store: ServerModule.StateStore; where: string }> {
  const { SqliteStateStore, openEtcdStateStore } = await loadServer();
  if (flags.dataDir && flags.etcdEndpoints) throw new UsageError('name one store: --data-dir or --etcd-endpoints');
  if (flags.dataDir) {
    const dir = path.resolve(flags.dataDir, 'server');
    if (forRestore) mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'state.db');
    return { store: SqliteStateStore.open(file), where: file };
  }
  if (flags.etcdEndpoints) {
    const endpoints = flags.etcdEndpoints.split(',').map((e) => e.trim()).filter(Boolean);
    const bad = endpoints.find((e) => !ETCD_URL.test(e));
    if (endpoints.length === 0 || bad !== undefined) throw new UsageError(`--etcd-endpoints takes comma-separated etcd client URLs such as http://127.0.0.1:2379${bad ? `, got "${bad}"` : ''}`);
    const prefix = flags.etcdPrefix ?? '/berth';
    return { store: await openEtcdStateStore({ endpoints, prefix }), where: `etcd ${endpoints.join(',')} (prefix ${prefix})` };
  }
  throw new UsageError('name the store: --data-dir <dir> (SQLite) or --etcd-endpoints <urls>');
}
