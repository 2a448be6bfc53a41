// A small cluster for the volume tests and the claims benchmark: a real
// SQLite store, node and plugin services, fake CSI plugins on real sockets
// and fake node agents answering server-to-node calls through real
// CsiClients. `restart()` drops the services and opens new ones over the
// same file, as a server restart does. Test and benchmark use only.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakePlugin, type FakePluginOptions } from './csi-fake/index.js';
import { ManualClock, silentLogger, type Logger } from '../../src/lib/index.js';
import type { AllocClientStatus } from '../../src/structs/index.js';
import { FakeNodeAgent } from './node-agent-fake/index.js';
import { NodeConnections } from '../../src/server/noderpc/index.js';
import { NodeService } from '../../src/server/nodes/index.js';
import { rowKey, SqliteStateStore, type TableName } from '../../src/server/state/index.js';
import { ClaimWatcher, ControllerRouter, VolumeService } from '../../src/server/volumes/index.js';
import { testAllocation } from './server-rows.js';

export interface ClusterNode {
  id: string;
  /** The node plugin's NodeGetInfo.node_id (also what its fake controller accepts). */
  externalId: string;
  roles: ReadonlyArray<'controller' | 'node'>;
  plugin?: Partial<FakePluginOptions>;
}

export class Cluster {
  readonly dir: string;
  readonly path: string;
  readonly clock = new ManualClock(1_000_000);
  readonly fakes = new Map<string, FakePlugin>();
  agents = new Map<string, FakeNodeAgent>();
  store!: SqliteStateStore;
  connections!: NodeConnections;
  nodes!: NodeService;
  router!: ControllerRouter;
  volumes!: VolumeService;
  watcher!: ClaimWatcher;
  readonly #spec: ClusterNode[];
  readonly #pluginId: string;
  readonly #logger: Logger;

  private constructor(spec: ClusterNode[], pluginId: string, logger: Logger) {
    this.dir = mkdtempSync(join(tmpdir(), 'berth-vol-'));
    this.path = join(this.dir, 'state.db');
    this.#spec = spec;
    this.#pluginId = pluginId;
    this.#logger = logger;
  }

  /** Starts a fake plugin per node and registers the nodes; the watcher is not started. */
  static async start(spec: ClusterNode[], opts: { pluginId?: string; logger?: Logger } = {}): Promise<Cluster> {
    const c = new Cluster(spec, opts.pluginId ?? 'fake', opts.logger ?? silentLogger());
    for (const n of spec) {
      const fake = new FakePlugin({ socketPath: join(c.dir, `${n.id}.sock`), nodeId: n.externalId, ...n.plugin });
      await fake.start();
      c.fakes.set(n.id, fake);
    }
    await c.#open();
    for (const n of spec) await c.nodes.register(await c.agents.get(n.id)!.fingerprint(), { id: n.id });
    return c;
  }

  get pluginId(): string {
    return this.#pluginId;
  }

  async #open(): Promise<void> {
    this.store = SqliteStateStore.open(this.path, { logger: this.#logger });
    this.connections = new NodeConnections({ logger: this.#logger });
    this.nodes = new NodeService({ store: this.store, clock: this.clock, logger: this.#logger });
    this.router = new ControllerRouter({ store: this.store, connections: this.connections, logger: this.#logger, callTimeoutMs: 5000 });
    this.volumes = new VolumeService({
      store: this.store,
      connections: this.connections,
      router: this.router,
      clock: this.clock,
      logger: this.#logger,
      callTimeoutMs: 5000,
    });
    this.watcher = new ClaimWatcher({ store: this.store, volumes: this.volumes, clock: this.clock, logger: this.#logger, random: () => 0 });
    this.agents = new Map();
    for (const n of this.#spec) {
      const agent = new FakeNodeAgent({
        nodeId: n.id,
        connections: this.connections,
        plugins: { [this.#pluginId]: this.fakes.get(n.id)!.endpoint },
        roles: { [this.#pluginId]: n.roles },
      });
      agent.connect();
      this.agents.set(n.id, agent);
    }
  }

  /** Drops every service as a crash would (in-flight work is cut off), then opens new ones over the same file. */
  async restart(): Promise<void> {
    await this.#drop();
    await this.#open();
  }

  async #drop(): Promise<void> {
    await this.watcher.stop();
    this.store.close();
    // Its reserve file is written in the background and may still be under way: close() removes the dir next.
    await this.store.headroomAtOpen();
    this.connections.closeAll();
    for (const a of this.agents.values()) await a.close();
  }

  agent(nodeId: string): FakeNodeAgent {
    return this.agents.get(nodeId)!;
  }

  fake(nodeId: string): FakePlugin {
    return this.fakes.get(nodeId)!;
  }

  /** Writes an allocation row (as the scheduler would). */
  async alloc(id: string, nodeId: string, clientStatus: AllocClientStatus = 'running'): Promise<void> {
    await this.store.write((txn) => {
      const cur = txn.get('allocations', rowKey(id));
      txn.put('allocations', testAllocation(id, nodeId, { desiredStatus: cur?.desiredStatus ?? 'run', clientStatus }));
    });
  }

  /** Resolves once `check` holds, re-checking after every write to `tables`; fails after 5 s. */
  async until(check: () => boolean, tables: TableName[] = ['claims'], what = 'condition'): Promise<void> {
    const deadline = AbortSignal.timeout(5000);
    let seen = this.store.latestIndex();
    while (!check()) {
      if (deadline.aborted) throw new Error(`timed out waiting for ${what}`);
      seen = await this.store.blockUntil(tables, seen, { timeoutMs: 200 });
    }
  }

  /** The claim row (with secrets-free fields), if any. */
  claimRow(volumeId: string, allocId: string) {
    return this.store.snapshot().get('claims', rowKey('default', volumeId, allocId));
  }

  async close(): Promise<void> {
    await this.#drop().catch(() => undefined);
    for (const f of this.fakes.values()) await f.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
