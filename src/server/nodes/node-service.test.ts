import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakePlugin } from '../../../test/support/csi-fake/index.js';
import { ManualClock } from '../../lib/index.js';
import { parseJobSpec, withNodeInstances, type Allocation, type Job } from '../../structs/index.js';
import { FakeNodeAgent } from '../../../test/support/node-agent-fake/index.js';
import { NodeConnections } from '../noderpc/index.js';
import { PluginService } from '../plugins/index.js';
import { rowKey, SqliteStateStore, StateStoreError, type RowInput } from '../state/index.js';
import { NodeError, NodeService } from './index.js';

/** `store` with its writes going through `wrap` (which calls `write` to make the store's own write), the rest as it is. */
function withWrite(store: SqliteStateStore, wrap: (write: () => ReturnType<SqliteStateStore['write']>) => ReturnType<SqliteStateStore['write']>): SqliteStateStore {
  return new Proxy(store, {
    get(target, key) {
      if (key === 'write') return (...args: Parameters<SqliteStateStore['write']>) => wrap(() => target.write(...args));
      const v: unknown = Reflect.get(target, key, target);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

describe('nodes and plugins', () => {
  let dir: string;
  let pluginA: FakePlugin;
  let pluginB: FakePlugin;
  const connections = new NodeConnections();
  let agentA: FakeNodeAgent;
  let agentB: FakeNodeAgent;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'berth-nodes-'));
    pluginA = new FakePlugin({ socketPath: join(dir, 'a.sock'), nodeId: 'ext-a', maxVolumesPerNode: 3 });
    pluginB = new FakePlugin({ socketPath: join(dir, 'b.sock'), nodeId: 'ext-b' });
    await Promise.all([pluginA.start(), pluginB.start()]);
    agentA = new FakeNodeAgent({ nodeId: 'node-a', connections, plugins: { fake: pluginA.endpoint } });
    // node-b runs only the node part of the plugin.
    agentB = new FakeNodeAgent({ nodeId: 'node-b', connections, plugins: { fake: pluginB.endpoint }, roles: { fake: ['node'] } });
  });
  after(async () => {
    await Promise.all([agentA.close(), agentB.close()]);
    await Promise.all([pluginA.stop(), pluginB.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it('derives plugins from what nodes report: instances by node, health, external node IDs, max volumes', async () => {
    const store = SqliteStateStore.open(join(dir, 'derive.db'));
    try {
      const nodes = new NodeService({ store, clock: new ManualClock(1000) });
      const plugins = new PluginService({ store });
      await nodes.register(await agentA.fingerprint(), { id: 'node-a' });
      await nodes.register(await agentB.fingerprint(), { id: 'node-b' });
      const p = plugins.get('fake')!;
      assert.equal(p.provider, 'fake.csi.berth.dev');
      assert.equal(p.version, '1.0.0');
      assert.equal(p.controllerRequired, true, 'the fake controller advertises PUBLISH_UNPUBLISH_VOLUME');
      assert.deepEqual(Object.keys(p.controllers), ['node-a']);
      assert.deepEqual(Object.keys(p.nodes).sort(), ['node-a', 'node-b']);
      assert.equal(p.controllersHealthy, 1);
      assert.equal(p.nodesHealthy, 2);
      assert.equal(p.nodes['node-a']!.externalNodeId, 'ext-a');
      assert.equal(p.nodes['node-a']!.maxVolumes, 3);
      assert.equal(p.nodes['node-b']!.externalNodeId, 'ext-b');

      // A heartbeat that reports the node plugin unhealthy changes the counts.
      await nodes.heartbeat('node-b', await agentB.fingerprint({ unhealthy: ['fake'] }));
      const q = plugins.get('fake')!;
      assert.equal(q.nodesHealthy, 1);
      assert.equal(q.nodes['node-b']!.healthy, false);
      assert.match(q.nodes['node-b']!.healthReason, /probe failed/);
    } finally {
      store.close();
    }
  });

  it('writes nothing for a heartbeat that changes nothing, and refuses heartbeats of unknown nodes', async () => {
    const store = SqliteStateStore.open(join(dir, 'quiet.db'));
    try {
      const clock = new ManualClock(1000);
      const nodes = new NodeService({ store, clock });
      const fp = await agentA.fingerprint();
      await nodes.register(fp, { id: 'node-a' });
      const index = store.latestIndex();
      await clock.advance(5000);
      await nodes.heartbeat('node-a', { ...fp, csiNodePlugins: { fake: { ...fp.csiNodePlugins['fake']!, updatedAt: 6000 } } });
      await nodes.heartbeat('node-a');
      assert.equal(store.latestIndex(), index, 'no write');
      assert.equal(nodes.get('node-a')!.lastHeartbeat, 6000, 'the latest heartbeat still shows');
      await assert.rejects(() => nodes.heartbeat('nobody'), (e: unknown) => e instanceof NodeError && e.code === 'NOT_FOUND');
      await assert.rejects(() => nodes.register({ ...fp, name: '' }), (e: unknown) => e instanceof NodeError && e.code === 'INVALID');
    } finally {
      store.close();
    }
  });

  it('keeps the plugin row as it was through registrations that change no plugin report, and counts a node that brings the plugin', async () => {
    const store = SqliteStateStore.open(join(dir, 'plugin-quiet.db'));
    try {
      const nodes = new NodeService({ store, clock: new ManualClock(1000) });
      const fp = await agentA.fingerprint();
      await nodes.register(fp, { id: 'node-a' });
      const pluginIndex = store.snapshot().get('plugins', rowKey('fake'))!.modifyIndex;
      // The agent restarts and registers the same plugins; a node without plugins joins.
      await nodes.register(fp, { id: 'node-a' });
      await nodes.register({ ...fp, name: 'plain', csiControllerPlugins: {}, csiNodePlugins: {} }, { id: 'node-plain' });
      assert.equal(store.snapshot().get('plugins', rowKey('fake'))!.modifyIndex, pluginIndex, 'the plugin row was not rewritten');
      assert.equal(nodes.list().length, 2);
      // A node that brings the plugin is counted at once.
      await nodes.register({ ...(await agentB.fingerprint()), name: 'b' }, { id: 'node-b' });
      assert.deepEqual(Object.keys(new PluginService({ store }).get('fake')!.nodes).sort(), ['node-a', 'node-b']);
    } finally {
      store.close();
    }
  });

  it('marks a node down when it misses its heartbeat TTL, its plugin instances unhealthy, and brings it back on a heartbeat', async () => {
    const store = SqliteStateStore.open(join(dir, 'ttl.db'));
    const clock = new ManualClock(0);
    const nodes = new NodeService({ store, clock, heartbeatTtlMs: 10_000, heartbeatGraceMs: 0 });
    try {
      await nodes.register(await agentA.fingerprint(), { id: 'node-a' });
      await nodes.register(await agentB.fingerprint(), { id: 'node-b' });
      await nodes.start();
      await clock.waitForSleepers(1);
      await clock.advance(6000);
      await nodes.heartbeat('node-b');
      await clock.advance(6000);
      assert.equal(nodes.get('node-a')!.status, 'down');
      assert.match(nodes.get('node-a')!.statusDescription, /missed heartbeats/);
      assert.equal(nodes.get('node-b')!.status, 'ready', 'node-b heartbeated in time');
      const p = withNodeInstances(store.snapshot().get('plugins', rowKey('fake'))!, store.snapshot().list('nodes'));
      assert.equal(p.controllersHealthy, 0, 'the only controller was on the down node');
      assert.equal(p.nodes['node-a']!.healthy, false);
      assert.match(p.nodes['node-a']!.healthReason, /down/);

      await nodes.heartbeat('node-a');
      assert.equal(nodes.get('node-a')!.status, 'ready');
      assert.equal(store.snapshot().get('plugins', rowKey('fake'))!.controllersHealthy, 1);
    } finally {
      await nodes.stop();
      await nodes.stop();
      store.close();
    }
  });

  it('marks a node down only once its heartbeat is later than its TTL and the grace after it (Nomad\'s heartbeat_grace, 10 s by default)', async () => {
    const store = SqliteStateStore.open(join(dir, 'grace.db'));
    const clock = new ManualClock(0);
    const nodes = new NodeService({ store, clock, heartbeatTtlMs: 10_000 });
    try {
      const reg = await nodes.register(await agentA.fingerprint(), { id: 'node-a' });
      assert.equal(nodes.heartbeatTtlMs, 10_000, 'the node is told its TTL, not the grace');
      assert.equal(reg.status, 'ready');
      await nodes.start();
      await clock.waitForSleepers(1);
      await clock.advance(15_000);
      assert.equal(nodes.get('node-a')!.status, 'ready', 'a heartbeat 5 s late is within the grace');
      // It comes late, and the clock starts again from it.
      await nodes.heartbeat('node-a');
      await clock.advance(19_000);
      assert.equal(nodes.get('node-a')!.status, 'ready');
      await clock.advance(2_000);
      await clock.waitForSleepers(1);
      assert.equal(nodes.get('node-a')!.status, 'down');
      assert.match(nodes.get('node-a')!.statusDescription, /missed heartbeats for 2\d s/);
    } finally {
      await nodes.stop();
      store.close();
    }
  });

  it('gives every node a fresh deadline, instead of marking it down, when the server itself stalled past the TTL', async () => {
    const store = SqliteStateStore.open(join(dir, 'stall.db'));
    const clock = new ManualClock(0);
    const nodes = new NodeService({ store, clock, heartbeatTtlMs: 10_000, heartbeatGraceMs: 0 });
    try {
      await nodes.register(await agentA.fingerprint(), { id: 'node-a' });
      await nodes.start();
      await clock.waitForSleepers(1);
      // The server was frozen for 45 s: its TTL check wakes 35 s late; the node's silence was the server's.
      await clock.jump(45_000);
      await clock.waitForSleepers(1);
      assert.equal(nodes.get('node-a')!.status, 'ready');
      // From then on the node has its full TTL, and is marked down when it stays silent past it.
      await clock.advance(11_000);
      await clock.waitForSleepers(1);
      assert.equal(nodes.get('node-a')!.status, 'down');
    } finally {
      await nodes.stop();
      store.close();
    }
  });

  it('gives every node a fresh deadline of twice its TTL when the server has just started (a new leader), however old its last heartbeat', async () => {
    const store = SqliteStateStore.open(join(dir, 'fresh.db'));
    const clock = new ManualClock(0);
    try {
      await new NodeService({ store, clock, heartbeatTtlMs: 10_000, heartbeatGraceMs: 0 }).register(await agentA.fingerprint(), { id: 'node-a' });
      // A server starts (or is elected) an hour later over the same state.
      await clock.jump(3_600_000);
      const nodes = new NodeService({ store, clock, heartbeatTtlMs: 10_000, heartbeatGraceMs: 0 });
      await nodes.start();
      await clock.waitForSleepers(1);
      await clock.advance(19_000);
      assert.equal(nodes.get('node-a')!.status, 'ready', 'within its failover TTL (twice the TTL)');
      assert.equal(nodes.get('node-a')!.lastHeartbeat, 0, 'the last heartbeat shown is the one recorded, not the start');
      await clock.advance(2_000);
      await clock.waitForSleepers(1);
      assert.equal(nodes.get('node-a')!.status, 'down');
      await nodes.stop();
    } finally {
      store.close();
    }
  });

  it('forgets a node whose registration the store refused: the TTL watcher writes nothing while every registered node heartbeats, and still marks a silent one down', async () => {
    const sqlite = SqliteStateStore.open(join(dir, 'refused.db'));
    // The store as a leader stepping down sees it: one registration refused, every write counted.
    let refuse = false;
    let writes = 0;
    const store = withWrite(sqlite, (write) => {
      writes++;
      if (refuse) return Promise.reject(new StateStoreError('STORE_FENCED', 'this server lost its right to write'));
      return write();
    });
    const clock = new ManualClock(0);
    const nodes = new NodeService({ store, clock, heartbeatTtlMs: 10_000, heartbeatGraceMs: 0 });
    try {
      await nodes.register(await agentA.fingerprint(), { id: 'node-a' });
      await nodes.register(await agentB.fingerprint(), { id: 'node-b' });
      refuse = true;
      await assert.rejects(nodes.register({ ...(await agentB.fingerprint()), name: 'x' }, { id: 'node-x' }), { code: 'STORE_FENCED' });
      refuse = false;
      assert.equal(nodes.lastHeartbeat('node-x'), undefined, 'the server never heard of node-x as registered');
      await nodes.start();
      await clock.waitForSleepers(1);
      // 30 s of heartbeats every 3 s from both nodes: nothing overdue, nothing to write.
      writes = 0;
      for (let i = 0; i < 10; i++) {
        await clock.advance(3_000);
        await nodes.heartbeat('node-a');
        await nodes.heartbeat('node-b');
      }
      assert.equal(writes, 0, 'no write while no registered node is overdue');
      // node-b goes silent: marked down once its TTL passes.
      for (let i = 0; i < 4; i++) {
        await clock.advance(3_000);
        await nodes.heartbeat('node-a');
      }
      await clock.waitForSleepers(1);
      assert.equal(nodes.get('node-b')!.status, 'down');
      assert.equal(nodes.get('node-a')!.status, 'ready');
      assert.equal(nodes.get('node-x'), undefined);
    } finally {
      await nodes.stop();
      sqlite.close();
    }
  });

  it('starts a new node\'s TTL when its registration is committed, not while the write waits behind others (a registration storm)', async () => {
    const sqlite = SqliteStateStore.open(join(dir, 'queued.db'));
    // The store as a leader busy with a storm of registrations sees it: a write waits for the group commits ahead of it.
    let hold: Promise<void> | undefined;
    const store = withWrite(sqlite, async (write) => {
      await hold;
      return write();
    });
    const clock = new ManualClock(0);
    const nodes = new NodeService({ store, clock, heartbeatTtlMs: 10_000, heartbeatGraceMs: 0 });
    try {
      let release!: () => void;
      hold = new Promise<void>((r) => (release = r));
      const registering = nodes.register(await agentA.fingerprint(), { id: 'node-a' });
      // The registration waits 9 s in the queue; the node gets its answer only then and heartbeats a third of a TTL later.
      await clock.advance(9_000);
      release();
      await registering;
      await clock.advance(5_000);
      assert.deepEqual(await nodes.expire(), [], 'node-a is within its TTL counted from its registration\'s answer');
      assert.equal(nodes.get('node-a')!.status, 'ready');
      // Silent for a whole TTL after its answer: down.
      await clock.advance(5_001);
      assert.deepEqual(await nodes.expire(), ['node-a']);
      assert.equal(nodes.get('node-a')!.status, 'down');
    } finally {
      await nodes.stop();
      sqlite.close();
    }
  });

  it('gives nodes a longer TTL as the cluster grows, so that their heartbeats stay under the rate the leader aims at', async () => {
    const store = SqliteStateStore.open(join(dir, 'scaled.db'));
    const clock = new ManualClock(0);
    // Half a heartbeat a second in all: two nodes heartbeating every third of their TTL need 12 s.
    const nodes = new NodeService({ store, clock, heartbeatTtlMs: 10_000, heartbeatGraceMs: 0, maxHeartbeatsPerSecond: 0.5 });
    try {
      await nodes.register(await agentA.fingerprint(), { id: 'node-a' });
      assert.equal(nodes.heartbeatTtlMs, 10_000, 'one node: the configured TTL');
      await nodes.register(await agentB.fingerprint(), { id: 'node-b' });
      assert.equal(nodes.heartbeatTtlMs, 12_000, 'two nodes: 3 x 2 / 0.5 s');
      await nodes.start();
      await clock.waitForSleepers(1);
      await clock.advance(5_000);
      await nodes.heartbeat('node-a');
      // node-b was given 12 s at its registration; node-a 12 s at its heartbeat (t = 5 s).
      await clock.advance(6_500);
      await clock.waitForSleepers(1);
      assert.equal(nodes.get('node-b')!.status, 'ready', 'node-b within the 12 s it was given');
      await clock.advance(1_000);
      await clock.waitForSleepers(1);
      assert.equal(nodes.get('node-b')!.status, 'down', 'node-b silent past its 12 s');
      assert.equal(nodes.get('node-a')!.status, 'ready');
      await clock.advance(5_000);
      await clock.waitForSleepers(1);
      assert.equal(nodes.get('node-a')!.status, 'down', 'node-a silent 12 s after its heartbeat');
    } finally {
      await nodes.stop();
      store.close();
    }
  });

  it('counts expected instances from the jobs that run a plugin, lists its allocations, and removes a plugin with nothing left', async () => {
    const store = SqliteStateStore.open(join(dir, 'expected.db'));
    const plugins = new PluginService({ store });
    const nodes = new NodeService({ store, clock: new ManualClock(0) });
    try {
      await plugins.start();
      const job = (id: string, type: 'service' | 'system', pluginType: 'controller' | 'node', count: number): RowInput<'jobs'> => {
        const spec = parseJobSpec({
          id,
          type,
          groups: [
            { name: 'g', count, tasks: [{ name: 't', driver: 'exec', csiPlugin: { id: 'shared', type: pluginType, mountDir: '/csi' } }] },
          ],
        });
        return { ...spec, stop: false, status: 'running', version: 1, groupVersions: { g: 1 }, submitTime: 0 } satisfies Omit<Job, 'createIndex' | 'modifyIndex'>;
      };
      const alloc = (id: string, jobId: string, nodeId: string): RowInput<'allocations'> =>
        ({
          id,
          namespace: 'default',
          jobId,
          jobVersion: 1,
          taskGroup: 'g',
          nodeId,
          desiredStatus: 'run',
          desiredDescription: '',
          clientStatus: 'running',
          clientDescription: '',
          taskStates: {},
          rescheduleAttempts: 0,
          createTime: 0,
          modifyTime: 0,
        }) satisfies Omit<Allocation, 'createIndex' | 'modifyIndex'>;

      const seen = store.snapshot().tableIndex('plugins');
      store.writeNow((txn) => {
        txn.put('jobs', job('controllers', 'service', 'controller', 2));
        txn.put('jobs', job('nodes', 'system', 'node', 1));
        txn.put('allocations', alloc('c1', 'controllers', 'node-a'));
        txn.put('allocations', alloc('n1', 'nodes', 'node-a'));
        txn.put('allocations', alloc('n2', 'nodes', 'node-b'));
        txn.put('allocations', alloc('n3', 'nodes', 'node-c'));
      });
      await store.blockUntil(['plugins'], seen);
      const p = plugins.get('shared')!;
      assert.equal(p.controllersExpected, 2);
      assert.equal(p.nodesExpected, 3, 'a system job expects one per live allocation');
      assert.deepEqual(p.allocations.map((a) => a.allocId).sort(), ['c1', 'n1', 'n2', 'n3']);
      assert.equal(p.nodesHealthy, 0);

      const before = store.snapshot().tableIndex('plugins');
      store.writeNow((txn) => {
        txn.put('allocations', { ...alloc('n3', 'nodes', 'node-c'), desiredStatus: 'stop', clientStatus: 'complete' });
      });
      await store.blockUntil(['plugins'], before);
      assert.equal(plugins.get('shared')!.nodesExpected, 2);

      const last = store.snapshot().tableIndex('plugins');
      store.writeNow((txn) => {
        for (const id of ['c1', 'n1', 'n2', 'n3']) txn.delete('allocations', rowKey(id));
        txn.delete('jobs', rowKey('default', 'controllers'));
        txn.delete('jobs', rowKey('default', 'nodes'));
      });
      await store.blockUntil(['plugins'], last);
      assert.equal(plugins.get('shared'), undefined, 'nothing left: removed');

      // Plugins reported only by nodes go away with the nodes' reports.
      await nodes.register(await agentB.fingerprint(), { id: 'node-b' });
      assert.ok(plugins.get('fake'));
      await nodes.register({ ...(await agentB.fingerprint()), csiNodePlugins: {} }, { id: 'node-b' });
      assert.equal(plugins.get('fake'), undefined);
    } finally {
      await plugins.stop();
      store.close();
    }
  });
});
