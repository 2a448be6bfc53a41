// Test harness shared by the volume manager's unit tests: a FakePlugin on a
// real unix socket, a real SQLite client state file, a mount root in a
// temporary directory, and a logger whose lines the test can read.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { CsiClient, type NodeCapability } from '../../src/csi/index.js';
import { FakePlugin, type FakePluginOptions } from './csi-fake/index.js';
import { createLogger, type BackoffPolicy, type Clock } from '../../src/lib/index.js';
import { SqliteClientStateStore } from '../../src/client/state/index.js';
import { VolumeManager, type VolumeManagerOptions } from '../../src/client/volumes/index.js';
import type { VolumeUsage } from '../../src/client/volumes/index.js';

export const RW: VolumeUsage = { readOnly: false, attachmentMode: 'file-system', accessMode: 'single-node-writer' };
export const MULTI: VolumeUsage = { readOnly: false, attachmentMode: 'file-system', accessMode: 'multi-node-multi-writer' };

/** Fast retries, so tests that exhaust them stay quick (they never assert timings). */
export const QUICK_BACKOFF: Partial<BackoffPolicy> = { maxAttempts: 3, initialDelayMs: 5, maxDelayMs: 20, jitter: 0 };

export class FakeHarness {
  readonly dir: string;
  readonly mountRoot: string;
  readonly statePath: string;
  readonly fake: FakePlugin;
  readonly logLines: string[] = [];
  store: SqliteClientStateStore;
  client: CsiClient;
  readonly #managers: VolumeManager[] = [];
  readonly #clients: CsiClient[] = [];

  constructor(opts: Omit<FakePluginOptions, 'socketPath'> = {}) {
    // Short paths: a unix socket path must fit in 107 bytes.
    this.dir = mkdtempSync(path.join(tmpdir(), 'bv-'));
    this.mountRoot = path.join(this.dir, 'mnt');
    this.statePath = path.join(this.dir, 'state', 'client.db');
    this.fake = new FakePlugin({ ...opts, socketPath: path.join(this.dir, 'csi.sock') });
    this.store = SqliteClientStateStore.open(this.statePath);
    this.client = this.newClient();
  }

  newClient(): CsiClient {
    const c = new CsiClient({ endpoint: this.fake.endpoint });
    this.#clients.push(c);
    return c;
  }

  get capabilities(): NodeCapability[] {
    return ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'EXPAND_VOLUME'];
  }

  /** A started volume manager over this harness's store and plugin. */
  async manager(opts: Partial<VolumeManagerOptions> & { clock?: Clock } = {}): Promise<VolumeManager> {
    const logger = createLogger({
      level: 'debug',
      destination: new Writable({
        write: (chunk: Buffer, _enc, cb) => {
          this.logLines.push(chunk.toString());
          cb();
        },
      }),
    });
    const vm = new VolumeManager({
      pluginId: 'fake',
      getClient: () => this.client,
      store: this.store,
      mountRoot: this.mountRoot,
      getCapabilities: () => this.capabilities,
      logger,
      backoff: QUICK_BACKOFF,
      ...opts,
    });
    this.#managers.push(vm);
    await vm.start();
    return vm;
  }

  /** Closes and reopens the state file, as a restarted agent would. */
  reopenStore(): void {
    this.store.close();
    this.store = SqliteClientStateStore.open(this.statePath);
  }

  async close(): Promise<void> {
    for (const vm of this.#managers) await vm.stop();
    for (const c of this.#clients) await c.close();
    await this.fake.stop();
    this.store.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
