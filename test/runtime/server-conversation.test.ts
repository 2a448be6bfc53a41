// The node's conversation with a real Server over real HTTP and a real
// WebSocket: registration with the fingerprint, plugin health pushed at once,
// the server's controller calls answered through a real (fake) plugin on a
// real unix socket, the allocation watch, status reports, a claim and its
// release (ControllerPublish, then node detach through the volume manager and
// ControllerUnpublish), and reconnection after the server restarts.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakePlugin } from '../support/csi-fake/index.js';
import { systemClock, type SecretMap } from '../../src/lib/index.js';
import { Server, type ApiToken } from '../../src/server/index.js';
import type * as Api from '../../src/api/index.js';
import type { CSIPluginListStub, CSIVolume, CSIVolumeCreateResponse } from '../../src/api/index.js';
import type { NodeFingerprint } from '../../src/structs/index.js';
import { volumeRequest } from '../support/csi-api.js';
import { CsiManager } from '../../src/client/csimanager/index.js';
import { PluginRegistry } from '../../src/client/dynamicplugins/index.js';
import {
  AllocWatcher,
  HttpVolumeClaimer,
  NodeConnection,
  NodeRegistration,
  NodeRpcHandler,
  ServerApi,
  ServerConnError,
  StatusReporter,
  type NodeAllocation,
} from '../../src/client/serverconn/index.js';
import { SqliteClientStateStore } from '../../src/client/state/index.js';
import { eventually } from '../support/eventually.js';
import { registration as jobRegistration } from '../support/nomad-jobs.js';

const MGMT = 'mgmt-token-serverconn';
const NODE_TOKEN = 'node-token-serverconn';
const TOKENS: ApiToken[] = [
  { name: 'ops', secret: MGMT, role: 'management' },
  { name: 'agents', secret: NODE_TOKEN, role: 'node' },
];
const NODE_ID = 'node-a';

let dir: string;
let server: Server;
let url: string;
let port: number;
let plugin: FakePlugin;
let store: SqliteClientStateStore;
let registry: PluginRegistry;
let csi: CsiManager;
let api: ServerApi;
let registration: NodeRegistration;
let connection: NodeConnection;
let watcher: AllocWatcher;
let reporter: StatusReporter;
const lists: Array<{ index: number; allocs: NodeAllocation[] }> = [];

async function http<T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T; text: string }> {
  const res = await fetch(url + p, {
    method,
    headers: { authorization: `Bearer ${MGMT}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, text };
}

function fingerprint(): NodeFingerprint {
  const reports = csi.pluginReports();
  return {
    name: 'node-a',
    datacenter: 'dc1',
    httpAddr: '',
    drivers: { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host'] } },
    resources: { cpuMhz: 4000, memoryMb: 4096 },
    attributes: {},
    csiControllerPlugins: reports.controller,
    csiNodePlugins: reports.node,
  };
}

async function startServer(p = 0): Promise<void> {
  server = new Server({ dataDir: path.join(dir, 'server'), tokens: TOKENS, port: p, nodeCallTimeoutMs: 5_000, clock: systemClock });
  ({ url, port } = await server.start());
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'bsc-'));
  await startServer();
  store = SqliteClientStateStore.open(path.join(dir, 'client.db'));
  registry = new PluginRegistry({ store });
  csi = new CsiManager({
    registry,
    store,
    csiRoot: path.join(dir, 'csi'),
    updateNodePlugin: () => registration?.pushFingerprint(),
    emitNodeEvent: () => {},
    retryBackoff: { maxAttempts: Infinity, initialDelayMs: 50, maxDelayMs: 200, multiplier: 2, jitter: 0 },
  });
  await csi.start();
  plugin = new FakePlugin({ socketPath: path.join(dir, 'fake.sock'), nodeId: 'ext-node-a', pluginCapabilities: ['CONTROLLER_SERVICE'] });
  api = new ServerApi({ address: url, token: NODE_TOKEN });
});

after(async () => {
  await watcher?.stop();
  await reporter?.stop();
  await connection?.stop();
  await registration?.stop();
  await csi?.stop();
  registry?.close();
  store?.close();
  await plugin?.stop();
  api?.close();
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the node conversation with a real server', () => {
  it('registers with its fingerprint and pushes plugin health at once, not at the next heartbeat', async () => {
    // Heartbeats an hour apart: only a push can bring the plugin's health to the server in time.
    registration = new NodeRegistration({ api, nodeId: NODE_ID, fingerprint, heartbeatIntervalMs: 3_600_000 });
    registration.start();
    await registration.waitRegistered();
    const first = await http<Api.Node>('GET', `/v1/node/${NODE_ID}`);
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.CSINodePlugins, {});

    // The plugin's task starts after the agent: registered, fingerprinted, reported healthy.
    await plugin.start();
    for (const type of ['csi-controller', 'csi-node'] as const) {
      registry.register({ type, name: 'fake', version: '1.0.0', socketPath: plugin.socketPath, allocId: 'plugin-alloc-1', options: { mountRoot: path.join(dir, 'mnt') } });
    }
    const node = await eventually('the plugin health on the server', async () => {
      const n = (await http<Api.Node>('GET', `/v1/node/${NODE_ID}`)).body;
      return n.CSINodePlugins?.['fake']?.Healthy && n.CSIControllerPlugins?.['fake']?.Healthy ? n : undefined;
    });
    assert.equal(node.CSINodePlugins?.['fake']?.NodeInfo?.ID, 'ext-node-a');
    assert.equal(registration.counts.registrations, 1);
    const plugins = await eventually('the plugin to be derived', async () => {
      const list = (await http<CSIPluginListStub[]>('GET', '/v1/plugins?type=csi')).body;
      return list.find((p) => p.ID === 'fake' && p.ControllersHealthy === 1 && p.NodesHealthy === 1);
    });
    assert.ok(plugins);
  });

  it("answers the server's controller calls over the node connection, with the plugin's errors classified", async () => {
    const handler = new NodeRpcHandler({ csi, store, pluginWaitMs: 2_000 });
    connection = new NodeConnection({ address: url, authHeader: api.authHeader(), nodeId: () => NODE_ID, handle: (req, o) => handler.handle(req, o) });
    connection.start();
    await connection.waitConnected();
    await eventually('the server to see the connection', () => server.connections.connected(NODE_ID));

    const created = await http<CSIVolumeCreateResponse>(
      'PUT',
      '/v1/volume/csi/data/create',
      volumeRequest('data', {
        pluginId: 'fake',
        name: 'data',
        capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }],
        capacityMinBytes: 1024 * 1024,
        mountOptions: { fsType: 'ext4', mountFlags: ['nosuid'] },
        secrets: { password: 'claim-s3cret' },
      }),
    );
    assert.equal(created.status, 200, created.text);
    const externalId = created.body.Volumes?.[0]?.ExternalID ?? '';
    assert.equal(plugin.callsTo('CreateVolume').length, 1, 'CreateVolume reached the plugin through the node');

    // A final code from the plugin comes back as CSI_<CODE>, final.
    plugin.failNext('ControllerPublishVolume', 'FAILED_PRECONDITION', 'attached elsewhere');
    const capability = { accessMode: 'single-node-writer', attachmentMode: 'file-system' } as const;
    await assert.rejects(
      server.connections.call(NODE_ID, 'csi.controller.publish', {
        pluginId: 'fake',
        volumeId: externalId,
        nodeId: 'ext-node-a',
        capability,
        readonly: false,
        secrets: {},
        volumeContext: {},
      }),
      (err: Error & { code?: string; final?: boolean }) => err.code === 'CSI_FAILED_PRECONDITION' && err.final === true,
    );
    // A plugin that does not run here is said so, not hung on.
    await assert.rejects(
      server.connections.call(NODE_ID, 'csi.controller.listVolumes', { pluginId: 'nowhere' }),
      (err: Error & { code?: string }) => err.code === 'CSI_PLUGIN_NOT_FOUND',
    );
    const page = await server.connections.call(NODE_ID, 'csi.controller.listVolumes', { pluginId: 'fake' });
    assert.deepEqual(
      page.entries.map((e) => e.volume.volumeId),
      [externalId],
    );
  });

  it('watches its allocations, claims a volume over HTTP, reports status; the release detaches through the volume manager', async () => {
    reporter = new StatusReporter({ api, nodeId: NODE_ID });
    watcher = new AllocWatcher({ api, nodeId: NODE_ID, waitMs: 30_000, onAllocations: (allocs, index) => void lists.push({ allocs, index }) });
    watcher.start();
    await watcher.waitFirstList();
    assert.deepEqual(lists[0]?.allocs, []);

    const job = await http('PUT', '/v1/jobs', jobRegistration({
        id: 'db',
        groups: [
          {
            name: 'db',
            volumes: { data: { type: 'csi', source: 'data', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
            tasks: [{ name: 'pg', driver: 'exec', volumeMounts: [{ volume: 'data', destination: '/data' }] }],
          },
        ],
    }));
    assert.equal(job.status, 200, job.text);
    // The blocking read wakes with the new allocation and its job.
    const alloc = await eventually('the allocation to reach the node', () => lists.at(-1)?.allocs[0]);
    assert.equal(alloc.job?.id, 'db');
    assert.ok(lists.at(-1)!.index > lists[0]!.index);

    // The claim: ControllerPublish travels server -> node connection -> plugin, its publish context back.
    // The publish context is opaque: even a credential-looking key reaches the node as the plugin gave it.
    plugin.answerNext('ControllerPublishVolume', { publishContext: { device: '/dev/fake0', token: 'pub-t0ken' } });
    const claimer = new HttpVolumeClaimer({ api });
    const claimed = await claimer.claim({ namespace: 'default', volumeId: 'data', allocId: alloc.id, mode: 'write' }, {});
    assert.equal(claimed.volume.pluginId, 'fake');
    assert.equal(claimed.volume.accessMode, 'single-node-writer');
    assert.deepEqual(claimed.publishContext, { device: '/dev/fake0', token: 'pub-t0ken' });
    // What NodeStage/NodePublish need comes with the claim: the volume's secrets and mount flags.
    assert.deepEqual(claimed.volume.secrets?.reveal(), { password: 'claim-s3cret' });
    assert.deepEqual(claimed.volume.mountOptions, { fsType: 'ext4', mountFlags: ['nosuid'] });
    // ...while every read still hides them.
    const read = await http('GET', '/v1/volume/csi/data');
    assert.doesNotMatch(read.text, /claim-s3cret|pub-t0ken/);
    assert.equal(plugin.callsTo('ControllerPublishVolume').at(-1)?.request['nodeId'], 'ext-node-a');

    // A second writer is refused with a code the CSI hook can act on.
    await assert.rejects(claimer.claim({ namespace: 'default', volumeId: 'data', allocId: 'someone-else', mode: 'write' }, {}), (err) => err instanceof ServerConnError && err.code === 'SERVER_REFUSED');

    // The node mounts it (stage + publish records written), and says the allocation runs.
    const vm = csi.volumeManagerFor('fake');
    const usage = { readOnly: false, accessMode: 'single-node-writer', attachmentMode: 'file-system' } as const;
    const { source } = await vm.mountVolume(
      { id: 'data', namespace: 'default', externalId: claimed.volume.externalId, volumeContext: claimed.volume.context },
      alloc.id,
      usage,
      { publishContext: claimed.publishContext, ...(claimed.volume.secrets ? { secrets: claimed.volume.secrets } : {}) },
    );
    assert.ok(source.startsWith(path.join(dir, 'mnt')));
    const staged = plugin.callsTo('NodeStageVolume').at(-1)?.request;
    assert.deepEqual((staged?.['secrets'] as SecretMap | undefined)?.reveal(), { password: 'claim-s3cret' });
    assert.deepEqual(staged?.['publishContext'], { device: '/dev/fake0', token: 'pub-t0ken' });
    const taskStates = { pg: { state: 'running' as const, failed: false, restarts: 0, startedAt: Date.now(), finishedAt: 0, events: [] } };
    reporter.report({ id: alloc.id, clientStatus: 'running', clientDescription: 'tasks are running', taskStates });
    await reporter.flush();
    const running = (await http<Api.Allocation>('GET', `/v1/allocation/${alloc.id}`)).body;
    assert.equal(running.ClientStatus, 'running');
    assert.equal(running.TaskStates?.['pg']?.State, 'running');

    // The allocation completes: the claim watcher asks the node to detach (NodeUnpublish, NodeUnstage) then unpublishes.
    plugin.clearCalls();
    reporter.report({ id: alloc.id, clientStatus: 'complete', clientDescription: 'done', taskStates });
    await eventually('the claim to be released', async () => {
      const v = await http<CSIVolume>('GET', '/v1/volume/csi/data');
      return v.body.BerthClaims.length === 0 ? true : undefined;
    });
    assert.equal(plugin.callsTo('NodeUnpublishVolume').length, 1);
    assert.equal(plugin.callsTo('NodeUnstageVolume').length, 1);
    assert.equal(plugin.callsTo('ControllerUnpublishVolume').length, 1);
    const order = plugin.calls.map((c) => c.rpc).filter((r) => r.startsWith('Node') || r.startsWith('Controller'));
    assert.deepEqual(
      order.filter((r) => r !== 'NodeGetCapabilities' && r !== 'ControllerGetCapabilities'),
      ['NodeUnpublishVolume', 'NodeUnstageVolume', 'ControllerUnpublishVolume'],
    );
    // A second detach for the same allocation finds nothing mounted.
    const again = await server.connections.call(NODE_ID, 'csi.node.detach', {
      pluginId: 'fake',
      volumeId: claimed.volume.externalId,
      namespace: 'default',
      berthVolumeId: 'data',
      allocId: alloc.id,
      accessMode: 'single-node-writer',
      attachmentMode: 'file-system',
    });
    assert.deepEqual(again, { alreadyDone: true });
  });

  it("a node detach that meets the allocation's own teardown answers only once the NodeUnstage is done (rule: NodeUnstage before ControllerUnpublish)", async () => {
    const vm = csi.volumeManagerFor('fake');
    const volume = { id: 'data', namespace: 'default', externalId: (await http<CSIVolume>('GET', '/v1/volume/csi/data')).body.ExternalID };
    const usage = { readOnly: false, accessMode: 'single-node-writer', attachmentMode: 'file-system' } as const;
    await vm.mountVolume(volume, 'alloc-race', usage, {});
    plugin.clearCalls();
    plugin.delayNext('NodeUnstageVolume', 300);
    const order: string[] = [];
    // The allocation's own postrun: NodeUnpublish (record gone), then a slow NodeUnstage.
    const own = vm.unmountVolume(volume, 'alloc-race', usage).then(() => order.push('unstaged'));
    await plugin.waitForCall('NodeUnstageVolume');
    // Meanwhile the server's release asks the node to detach the same allocation.
    const detach = server.connections
      .call(NODE_ID, 'csi.node.detach', {
        pluginId: 'fake',
        volumeId: volume.externalId,
        namespace: 'default',
        berthVolumeId: 'data',
        allocId: 'alloc-race',
        accessMode: 'single-node-writer',
        attachmentMode: 'file-system',
      })
      .then((r) => {
        order.push('detach answered');
        return r;
      });
    await Promise.all([own, detach]);
    assert.deepEqual(order, ['unstaged', 'detach answered']);
    assert.equal(plugin.callsTo('NodeUnstageVolume').length, 1, 'the unstage was not sent twice');
  });

  it('reconnects, heartbeats and keeps watching after the server restarts on the same address', async () => {
    const before = { connects: connection.connects, lists: watcher.lists };
    await server.stop();
    await startServer(port);
    await eventually('the node connection to come back', () => connection.connects > before.connects && server.connections.connected(NODE_ID));
    registration.pushFingerprint();
    await eventually('a heartbeat to the new server', () => registration.counts.heartbeats > 0);
    // The watch resumes: a new job's allocation arrives.
    const job = await http('PUT', '/v1/jobs', jobRegistration({ id: 'web', groups: [{ name: 'web', tasks: [{ name: 'srv', driver: 'exec' }] }] }));
    assert.equal(job.status, 200, job.text);
    await eventually('the new allocation', () => lists.at(-1)?.allocs.find((a) => a.jobId === 'web'));
    assert.ok(watcher.lists > before.lists);
  });
  it('drops a status update the server refuses (an allocation it does not know) without holding back the others', async () => {
    const web = lists.at(-1)?.allocs.find((a) => a.jobId === 'web');
    assert.ok(web);
    const state = { state: 'running' as const, failed: false, restarts: 0, startedAt: Date.now(), finishedAt: 0, events: [] };
    const before = reporter.counts.sent;
    reporter.report({ id: 'no-such-allocation', clientStatus: 'running', clientDescription: '', taskStates: { srv: state } });
    reporter.report({ id: web.id, clientStatus: 'running', clientDescription: 'serving', taskStates: { srv: state } });
    await reporter.flush();
    assert.equal(reporter.counts.sent, before + 1, 'only the known allocation was sent');
    assert.equal((await http<Api.Allocation>('GET', `/v1/allocation/${web.id}`)).body.ClientDescription, 'serving');
  });

  it('registers again, under the same node ID, with a server that forgot the node', async () => {
    const regs = registration.counts.registrations;
    await server.stop();
    // A server with empty state on the same address.
    rmSync(path.join(dir, 'server'), { recursive: true, force: true });
    await startServer(port);
    registration.pushFingerprint();
    await eventually('a new registration', () => registration.counts.registrations > regs);
    const node = await http<Api.Node>('GET', `/v1/node/${NODE_ID}`);
    assert.equal(node.status, 200, node.text);
    assert.equal(node.body.CSINodePlugins?.['fake']?.Healthy, true, 'with its plugins in the fingerprint');
    await eventually('the node connection to come back', () => server.connections.connected(NODE_ID));
  });
});
