// Volume health and drift where a fault must be injected: a real Server over
// real HTTP, the node agent's real parts (CSI manager, volume manager,
// node connection, the volume stats collector) and a FakePlugin on a real
// unix socket that can be told to call a volume abnormal, to keep a
// publication after ControllerUnpublish, or to fail one.
// - an abnormal condition from the node plugin reaches `volume status`, the
//   event stream, /v1/metrics and the allocation's task events (the collector's
//   onCondition), and so does its recovery;
// - a controller's ControllerGetVolume condition is asked for a volume
//   published nowhere;
// - a publication the controller keeps after release, and a claim left
//   without its allocation, are found by `volume doctor` with the right
//   repair, `--fix` repairs them and the books are equal again; the drift
//   loop reports them as an event and a metric meanwhile.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FakePlugin } from '../support/csi-fake/index.js';
import { berth, cleanEnv } from '../support/agent-run.js';
import { eventually } from '../support/eventually.js';
import { registration as jobRegistration } from '../support/nomad-jobs.js';
import { systemClock } from '../../src/lib/index.js';
import { Server, type ApiToken } from '../../src/server/index.js';
import type { CSIPluginListStub, CSIVolume, CSIVolumeCreateResponse, DriftReport, VolumeConditionEvent, VolumeUsageHistory } from '../../src/api/index.js';
import type { NodeFingerprint, VolumeStatsReport } from '../../src/structs/index.js';
import { volumeRequest } from '../support/csi-api.js';
import { CsiManager } from '../../src/client/csimanager/index.js';
import { PluginRegistry } from '../../src/client/dynamicplugins/index.js';
import { AllocWatcher, HttpVolumeClaimer, NodeConnection, NodeRegistration, NodeRpcHandler, ServerApi, type NodeAllocation } from '../../src/client/serverconn/index.js';
import { SqliteClientStateStore } from '../../src/client/state/index.js';
import { RecordedVolumes } from '../../src/client/volumes/index.js';
import { VolumeStatsCollector } from '../../src/client/volumestats/index.js';

const MGMT = 'mgmt-token-volhealth';
const NODE_TOKEN = 'node-token-volhealth';
const TOKENS: ApiToken[] = [
  { name: 'ops', secret: MGMT, role: 'management' },
  { name: 'agents', secret: NODE_TOKEN, role: 'node' },
];
const NODE_ID = 'node-h';
const usage = { readOnly: false, accessMode: 'single-node-writer', attachmentMode: 'file-system' } as const;


let dir: string;
let server: Server;
let url: string;
let plugin: FakePlugin;
let store: SqliteClientStateStore;
let registry: PluginRegistry;
let csi: CsiManager;
let api: ServerApi;
let registration: NodeRegistration;
let connection: NodeConnection;
let watcher: AllocWatcher;
let collector: VolumeStatsCollector;
const conditionEvents: Array<{ report: VolumeStatsReport; previous: unknown }> = [];
const lists: NodeAllocation[][] = [];
let alloc: NodeAllocation;
let dataExt = '';
let idleExt = '';

async function http<T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T; text: string }> {
  const res = await fetch(url + p, {
    method,
    headers: { authorization: `Bearer ${MGMT}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, text };
}

const volume = async (id: string): Promise<CSIVolume> => (await http<CSIVolume>('GET', `/v1/volume/csi/${id}`)).body;
const cli = (args: string[]) => berth(args, { env: cleanEnv({ BERTH_ADDR: url, BERTH_TOKEN: MGMT }) });
const metrics = async (): Promise<string> => (await fetch(`${url}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${MGMT}` } })).text();

function fingerprint(): NodeFingerprint {
  const reports = csi.pluginReports();
  return {
    name: NODE_ID,
    datacenter: 'dc1',
    httpAddr: '',
    drivers: { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host'] } },
    resources: { cpuMhz: 4000, memoryMb: 4096 },
    attributes: {},
    csiControllerPlugins: reports.controller,
    csiNodePlugins: reports.node,
  };
}

before(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'bvf-'));
  server = new Server({
    dataDir: path.join(dir, 'server'),
    tokens: TOKENS,
    nodeCallTimeoutMs: 5_000,
    clock: systemClock,
    // Short loops: the test waits on their reports instead of calling them by hand.
    volumeHealth: { controllerIntervalMs: 300, driftIntervalMs: 500 },
  });
  ({ url } = await server.start());
  store = SqliteClientStateStore.open(path.join(dir, 'client.db'));
  registry = new PluginRegistry({ store });
  csi = new CsiManager({ registry, store, csiRoot: path.join(dir, 'csi'), updateNodePlugin: () => registration?.pushFingerprint(), emitNodeEvent: () => {} });
  await csi.start();
  plugin = new FakePlugin({
    socketPath: path.join(dir, 'fake.sock'),
    nodeId: 'ext-node-h',
    pluginCapabilities: ['CONTROLLER_SERVICE'],
    controllerCapabilities: ['CREATE_DELETE_VOLUME', 'PUBLISH_UNPUBLISH_VOLUME', 'LIST_VOLUMES', 'LIST_VOLUMES_PUBLISHED_NODES', 'GET_VOLUME', 'VOLUME_CONDITION'],
    nodeCapabilities: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS', 'VOLUME_CONDITION'],
  });
  await plugin.start();
  api = new ServerApi({ address: url, token: NODE_TOKEN });
  registration = new NodeRegistration({ api, nodeId: NODE_ID, fingerprint, heartbeatIntervalMs: 3_600_000 });
  registration.start();
  await registration.waitRegistered();
  for (const type of ['csi-controller', 'csi-node'] as const) {
    registry.register({ type, name: 'fake', version: '1.0.0', socketPath: plugin.socketPath, allocId: 'plugin-alloc', options: { mountRoot: path.join(dir, 'mnt') } });
  }
  const handler = new NodeRpcHandler({ csi, store, pluginWaitMs: 2_000 });
  connection = new NodeConnection({ address: url, authHeader: api.authHeader(), nodeId: () => NODE_ID, handle: (req, o) => handler.handle(req, o) });
  connection.start();
  await connection.waitConnected();
  await eventually('the plugin to be healthy on the server', async () => {
    const list = (await http<CSIPluginListStub[]>('GET', '/v1/plugins?type=csi')).body;
    return list.find((p) => p.ID === 'fake' && p.ControllersHealthy === 1 && p.NodesHealthy === 1);
  });
  await eventually('the server to see the connection', () => server.connections.connected(NODE_ID));
  collector = new VolumeStatsCollector({
    recorded: new RecordedVolumes(store),
    csi,
    send: async (reports, signal) => {
      await api.reportVolumeStats(NODE_ID, reports, { signal });
    },
    onCondition: (report, previous) => conditionEvents.push({ report, previous }),
    intervalMs: 200,
    scanIntervalMs: 100,
  });
  await collector.start();

  for (const id of ['data', 'idle']) {
    const created = await http<CSIVolumeCreateResponse>(
      'PUT',
      `/v1/volume/csi/${id}/create`,
      volumeRequest(id, { pluginId: 'fake', name: id, capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }], capacityMinBytes: 64 * 1024 * 1024 }),
    );
    assert.equal(created.status, 200, created.text);
    if (id === 'data') dataExt = created.body.Volumes?.[0]?.ExternalID ?? '';
    else idleExt = created.body.Volumes?.[0]?.ExternalID ?? '';
  }
  // A job using `data`, its allocation claimed and mounted as the CSI hook would.
  watcher = new AllocWatcher({ api, nodeId: NODE_ID, waitMs: 30_000, onAllocations: (allocs) => void lists.push(allocs) });
  watcher.start();
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
  alloc = await eventually('the allocation to reach the node', () => lists.at(-1)?.[0]);
  const claimed = await new HttpVolumeClaimer({ api }).claim({ namespace: 'default', volumeId: 'data', allocId: alloc.id, mode: 'write' }, {});
  await csi.volumeManagerFor('fake').mountVolume({ id: 'data', namespace: 'default', externalId: claimed.volume.externalId }, alloc.id, usage, { publishContext: claimed.publishContext });
});

after(async () => {
  await collector?.stop();
  await watcher?.stop();
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

describe('volume health and drift with an injected fault', () => {
  it('the node reports usage of the published volume, on an interval', async () => {
    const v = await eventually('a usage report', async () => {
      const r = await volume('data');
      return r.BerthUsage.length ? r : undefined;
    });
    assert.equal(v.BerthUsage[0]?.NodeID, NODE_ID);
    assert.equal(v.BerthUsage[0]?.Bytes?.Total, 64 * 1024 * 1024);
    assert.deepEqual(v.BerthCondition && [v.BerthCondition.Abnormal, v.BerthCondition.Message], [false, 'healthy']);
    const calls = plugin.callsTo('NodeGetVolumeStats').length;
    await eventually('more calls, on the interval', () => plugin.callsTo('NodeGetVolumeStats').length >= calls + 2);
    assert.equal(plugin.maxConcurrentPerVolume(dataExt) <= 1, true, 'never two calls in flight for one volume');
    const history = (await http<VolumeUsageHistory>('GET', '/v1/volume/csi/data/usage')).body;
    assert.ok(history.Samples.length >= 2);
  });

  it('an abnormal condition from the plugin reaches volume status, the event stream, /v1/metrics and the task events; so does its recovery', async () => {
    const from = server.store.latestIndex();
    plugin.setVolumeCondition(dataExt, { abnormal: true, message: 'disk reports I/O errors' });
    const v = await eventually('the abnormal condition on the server', async () => {
      const r = await volume('data');
      return r.BerthCondition?.Abnormal ? r : undefined;
    });
    assert.equal(v.BerthCondition?.Message, 'disk reports I/O errors');
    assert.deepEqual(v.BerthCondition?.Sources.map((s) => [s.Source, s.NodeID, s.Abnormal]), [['node', NODE_ID, true]]);

    const status = await cli(['volume', 'status', 'data']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /Condition\s+abnormal: disk reports I\/O errors \(node node-h, /);

    const stream = await http<never>('GET', `/v1/event/stream?topic=volume-condition&index=${from + 1}&until=now`);
    type ConditionEvent = { Topic: string; Type: string; Payload: { VolumeCondition: VolumeConditionEvent } };
    const events = stream.text.split('\n').filter((l) => l.startsWith('{"')).flatMap((l) => (JSON.parse(l) as { Events: ConditionEvent[] }).Events);
    assert.ok(
      events.some((e) => e.Topic === 'volume-condition' && e.Payload.VolumeCondition.VolumeID === 'data' && e.Payload.VolumeCondition.Abnormal && e.Payload.VolumeCondition.Message === 'disk reports I/O errors'),
      stream.text,
    );

    assert.match(await metrics(), /^berth_volume_abnormal\{namespace="default",volume="data",plugin="fake"\} 1$/m);
    const told = await eventually('the task event of the allocation', () => conditionEvents.find((e) => e.report.condition?.abnormal));
    assert.deepEqual(told.report.allocIds, [alloc.id]);

    plugin.setVolumeCondition(dataExt, undefined);
    await eventually('the volume normal again', async () => ((await volume('data')).BerthCondition?.Abnormal === false ? true : undefined));
    await eventually('the recovery told to the allocation', () => conditionEvents.find((e) => e.report.condition?.abnormal === false));
    assert.match(await metrics(), /^berth_volume_abnormal\{namespace="default",volume="data",plugin="fake"\} 0$/m);
  });

  it('the leader asks the controller (ControllerGetVolume) about a volume published nowhere', async () => {
    plugin.clearCalls();
    plugin.setVolumeCondition(idleExt, { abnormal: true, message: 'replica lost' });
    const v = await eventually('the controller condition', async () => {
      const r = await volume('idle');
      return r.BerthCondition?.Abnormal ? r : undefined;
    });
    assert.deepEqual(v.BerthCondition?.Sources.map((s) => [s.Source, s.Message]), [['controller', 'replica lost']]);
    assert.deepEqual(v.BerthUsage, [], 'no node has it, so no usage');
    const asked = plugin.callsTo('ControllerGetVolume').map((c) => c.request['volumeId']);
    assert.ok(asked.length > 0 && asked.every((id) => id === idleExt), `the published volume is left to its node; asked about ${asked.join(', ')}`);
    plugin.setVolumeCondition(idleExt, undefined);
  });

  it('finds a publication the controller keeps after the release; --fix unpublishes it and the books are equal again', async () => {
    // The controller answers ControllerUnpublish but keeps the volume attached to the node.
    plugin.answerNext('ControllerUnpublishVolume', {});
    const update = await api.updateAllocations(NODE_ID, [{ id: alloc.id, clientStatus: 'complete', clientDescription: 'done', taskStates: {} }]);
    assert.ok(update.index > 0);
    await eventually('the claim to be released', async () => ((await volume('data')).BerthClaims.length === 0 ? true : undefined));
    assert.deepEqual([...(plugin.controllerPublished.get(dataExt) ?? [])], ['ext-node-h'], 'the fake still reports it published');

    const found = (await http<DriftReport>('GET', '/v1/volumes/doctor')).body;
    assert.deepEqual(
      found.Findings.map((f) => [f.Kind, f.VolumeID, f.NodeID, f.ExternalNodeID, f.Fixable]),
      [['stale-controller-publication', 'data', NODE_ID, 'ext-node-h', true]],
    );
    assert.match(found.Findings[0]!.Repair, /^berth volume doctor --fix data/);
    assert.deepEqual(found.Errors, []);
    // The drift loop reports it too: the API the UI badge reads, and the metric.
    await eventually('the drift loop to report it', async () =>
      (await http<DriftReport>('GET', '/v1/volumes/drift')).body.Findings.some((f) => f.Kind === 'stale-controller-publication') ? true : undefined,
    );
    await eventually('the drift metric', async () => (/^berth_volume_drift\{kind="stale-controller-publication"\} 1$/m.test(await metrics()) ? true : undefined));

    const cliOut = await cli(['volume', 'doctor', 'data']);
    assert.equal(cliOut.code, 1, `differences found: exit 1\n${cliOut.stderr}`);
    assert.match(cliOut.stdout, /stale-controller-publication\n\s+the controller of fake still reports volume data published to node node-h, where Berth holds no claim of it\n\s+repair: berth volume doctor --fix data/);

    const fixed = await cli(['volume', 'doctor', '--fix', '--json']);
    assert.equal(fixed.code, 0, fixed.stderr);
    const report = JSON.parse(fixed.stdout) as DriftReport;
    assert.equal(report.Fixed.length, 1);
    assert.equal(plugin.controllerPublished.get(dataExt)?.size ?? 0, 0, 'ControllerUnpublish was sent and done');
    assert.deepEqual((await http<DriftReport>('GET', '/v1/volumes/doctor')).body.Findings, []);
    await eventually('the drift loop to see the books equal', async () => ((await http<DriftReport>('GET', '/v1/volumes/drift')).body.Findings.length === 0 ? true : undefined));
  });

  it('finds a claim left without its allocation whose release is stuck; --fix releases it once the controller answers', async () => {
    // A claim row of an allocation that does not exist, published by the controller; its release fails at ControllerUnpublish.
    plugin.failNext('ControllerUnpublishVolume', 'INTERNAL', 'storage array busy', 1000);
    await server.store.write((txn) =>
      txn.put('claims', {
        namespace: 'default',
        volumeId: 'idle',
        allocId: 'ghost-alloc',
        pluginId: 'fake',
        externalVolumeId: idleExt,
        nodeId: NODE_ID,
        externalNodeId: 'ext-node-h',
        mode: 'write',
        accessMode: 'single-node-writer',
        attachmentMode: 'file-system',
        state: 'taken',
        controllerPublish: 'published',
        publishContext: {},
        releaseReason: '',
        releaseAttempts: 0,
        lastError: '',
        claimTime: Date.now(),
      }),
    );
    await eventually('the release to fail once', async () => ((await volume('idle')).BerthClaims[0]?.ReleaseAttempts ?? 0) >= 1 ? true : undefined);
    const found = await eventually('the doctor to report the claim', async () => {
      const r = (await http<DriftReport>('GET', '/v1/volumes/doctor?volume=idle')).body;
      return r.Findings.length ? r : undefined;
    });
    assert.deepEqual(found.Findings.map((f) => [f.Kind, f.VolumeID, f.AllocID, f.NodeID]), [['claim-without-allocation', 'idle', 'ghost-alloc', NODE_ID]]);
    assert.match(found.Findings[0]!.Message, /allocation ghost-alloc no longer exists; its release is stuck at node-detached \(.*storage array busy/);
    assert.equal(found.Findings[0]!.Repair, `berth volume detach idle ${NODE_ID}`);

    // A repair that fails (the controller still refuses): exit 2.
    const failing = await cli(['volume', 'doctor', '--fix', 'idle']);
    assert.equal(failing.code, 2, `a repair failed: exit 2\n${failing.stdout}${failing.stderr}`);
    assert.match(failing.stdout, /\[fix failed\]/);

    plugin.clearScript();
    const fixed = (await http<DriftReport>('POST', '/v1/volumes/doctor?volume=idle')).body;
    assert.deepEqual(fixed.FixFailed, []);
    assert.deepEqual((await volume('idle')).BerthClaims, [], 'the claim is gone (released by --fix, or by the claim watcher first)');
    assert.deepEqual((await http<DriftReport>('GET', '/v1/volumes/doctor')).body.Findings, [], 'the books are equal');
  });

  it('refuses a malformed stats report, naming the field', async () => {
    const res = await fetch(`${url}/v1/node/${NODE_ID}/volume-stats`, {
      method: 'POST',
      headers: { authorization: `Bearer ${NODE_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reports: [{ namespace: 'default', volumeId: 'data', pluginId: 'fake', reportedAt: 1, bytes: { used: -1, total: 1, available: 1 } }] }),
    });
    assert.equal(res.status, 400);
    assert.match(await res.text(), /reports\[0\]\.bytes must have non-negative available, total and used/);
  });
});
