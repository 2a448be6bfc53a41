import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { inspect } from 'node:util';
import { ClientError, Metadata, Status, createChannel, createClient, type Channel } from 'nice-grpc';
import { ManualClock, SecretList, SecretMap } from '../../../src/lib/index.js';
import {
  ControllerDefinition,
  IdentityDefinition,
  NodeDefinition,
  PluginCapability_Service_Type,
  PluginCapability_VolumeExpansion_Type,
  VolumeCapability_AccessMode_Mode,
  type ControllerClient,
  type IdentityClient,
  type NodeClient,
} from '../../../src/gen/csi/v1/csi.js';
import { FakePlugin, type FakePluginOptions } from './index.js';

const mountCapability = {
  mount: { fsType: 'ext4', mountFlags: ['noatime', 'password=hunter2'] },
  accessMode: { mode: VolumeCapability_AccessMode_Mode.SINGLE_NODE_WRITER },
};

function grpcCode(code: Status): (err: unknown) => boolean {
  return (err) => {
    assert.ok(err instanceof ClientError, `expected a ClientError, got ${inspect(err)}`);
    assert.equal(Status[err.code], Status[code]);
    return true;
  };
}

interface Harness {
  dir: string;
  fake: FakePlugin;
  channel: Channel;
  identity: IdentityClient;
  controller: ControllerClient;
  node: NodeClient;
}

function harness(opts: Omit<FakePluginOptions, 'socketPath'> = {}): Harness {
  // Short paths: a unix socket path must fit in 107 bytes.
  const dir = mkdtempSync(path.join(tmpdir(), 'bf-'));
  const fake = new FakePlugin({ ...opts, socketPath: path.join(dir, 'csi.sock') });
  const channel = createChannel(fake.endpoint);
  return {
    dir,
    fake,
    channel,
    identity: createClient(IdentityDefinition, channel),
    controller: createClient(ControllerDefinition, channel),
    node: createClient(NodeDefinition, channel),
  };
}

describe('FakePlugin', () => {
  let h: Harness;

  beforeEach(async () => {
    h = harness();
    await h.fake.start();
  });

  afterEach(async () => {
    h.channel.close();
    await h.fake.stop();
    rmSync(h.dir, { recursive: true, force: true });
  });

  it('answers identity and node info as a plugin with the default options would', async () => {
    assert.ok(existsSync(h.fake.socketPath));
    assert.equal(h.fake.endpoint, `unix://${h.fake.socketPath}`);
    assert.equal(h.fake.running, true);

    const info = await h.identity.getPluginInfo({});
    assert.deepEqual(info, { name: 'fake.csi.berth.dev', vendorVersion: '1.0.0', manifest: {} });

    const caps = await h.identity.getPluginCapabilities({});
    assert.deepEqual(
      caps.capabilities.map((c) => c.service?.type ?? c.volumeExpansion?.type),
      [
        PluginCapability_Service_Type.CONTROLLER_SERVICE,
        PluginCapability_Service_Type.VOLUME_ACCESSIBILITY_CONSTRAINTS,
        PluginCapability_VolumeExpansion_Type.ONLINE,
      ],
    );
    assert.deepEqual(await h.identity.probe({}), { ready: true });

    const nodeInfo = await h.node.nodeGetInfo({});
    assert.equal(nodeInfo.nodeId, 'fake-node-1');
    assert.equal(nodeInfo.maxVolumesPerNode, 0n);
    assert.deepEqual(nodeInfo.accessibleTopology?.segments, { 'topology.fake.csi.berth.dev/zone': 'z1' });

    assert.deepEqual(
      h.fake.calls.map((c) => c.rpc),
      ['GetPluginInfo', 'GetPluginCapabilities', 'Probe', 'NodeGetInfo'],
    );
  });

  it('fails a scripted call once with the scripted code, then serves it normally', async () => {
    h.fake.failNext('NodeStageVolume', 'UNAVAILABLE', 'device busy');
    const stage = { volumeId: 'v1', stagingTargetPath: '/staging/v1', volumeCapability: mountCapability };

    await assert.rejects(h.node.nodeStageVolume(stage), (err) => {
      grpcCode(Status.UNAVAILABLE)(err);
      assert.match((err as ClientError).details, /device busy/);
      return true;
    });
    assert.equal(h.fake.staged.has('v1'), false);

    await h.node.nodeStageVolume(stage);
    assert.equal(h.fake.staged.get('v1'), '/staging/v1');
    assert.equal(h.fake.callsTo('NodeStageVolume').length, 2);
  });

  it('lets go of a hung call as soon as the client aborts it', async () => {
    h.fake.hangNext('NodePublishVolume');
    const ac = new AbortController();
    const publish = { volumeId: 'v1', targetPath: '/target/a', volumeCapability: mountCapability };
    const hung = h.node.nodePublishVolume({ ...publish, stagingTargetPath: '/staging/v1' }, { signal: ac.signal });

    await h.fake.waitForCall('NodePublishVolume');
    assert.equal(h.fake.inFlight, 1);
    ac.abort();
    await assert.rejects(hung, { name: 'AbortError' });
    await h.fake.whenIdle();
    assert.equal(h.fake.inFlight, 0);
    assert.equal(h.fake.published.has('v1'), false, 'a hung call never reaches the model');
  });

  it('records the deadline the caller sent, and ends a hung call when it passes', async () => {
    h.fake.hangNext('Probe');
    // nice-grpc has no deadline option of its own; grpc-timeout is the wire form of a gRPC deadline.
    const metadata = Metadata({ 'grpc-timeout': '200m' });
    await assert.rejects(h.identity.probe({}, { metadata }), grpcCode(Status.DEADLINE_EXCEEDED));
    await h.fake.whenIdle();

    const [call] = h.fake.callsTo('Probe');
    assert.ok(call?.deadline !== undefined && call.deadline > 0 && call.deadline <= 200, `deadline ${call?.deadline}`);
    await h.identity.probe({});
    assert.equal(h.fake.callsTo('Probe')[1]?.deadline, undefined);
  });

  it('crash fails in-flight calls with UNAVAILABLE, removes the socket, and a restart serves the same state', async () => {
    const created = await h.controller.createVolume({
      name: 'db',
      volumeCapabilities: [mountCapability],
      capacityRange: { requiredBytes: 2n * 1024n ** 3n },
    });
    assert.equal(created.volume?.volumeId, 'vol-1');

    h.fake.hangNext('ControllerPublishVolume');
    const inFlight = assert.rejects(
      h.controller.controllerPublishVolume({ volumeId: 'vol-1', nodeId: 'fake-node-1', volumeCapability: mountCapability }),
      grpcCode(Status.UNAVAILABLE),
    );
    await h.fake.waitForCall('ControllerPublishVolume');
    await h.fake.crash();

    await inFlight;
    assert.equal(h.fake.running, false);
    assert.equal(existsSync(h.fake.socketPath), false);
    await assert.rejects(h.identity.probe({}), grpcCode(Status.UNAVAILABLE));
    await h.fake.crash();

    await h.fake.start();
    assert.equal(h.fake.running, true);
    assert.ok(existsSync(h.fake.socketPath));
    // The old channel failed to connect while the socket was gone and now
    // sits in reconnect backoff, as it would with a real plugin: dial anew.
    h.channel.close();
    h.channel = createChannel(h.fake.endpoint);
    const identity = createClient(IdentityDefinition, h.channel);
    const controller = createClient(ControllerDefinition, h.channel);
    assert.deepEqual(await identity.probe({}), { ready: true });
    const listed = await controller.listVolumes({});
    assert.deepEqual(
      listed.entries.map((e) => [e.volume?.volumeId, e.volume?.capacityBytes]),
      [['vol-1', 2n * 1024n ** 3n]],
    );
  });

  it('crashOn brings the whole plugin down on the next call to that RPC', async () => {
    h.fake.crashOn('NodeGetCapabilities');
    await assert.rejects(h.node.nodeGetCapabilities({}), grpcCode(Status.UNAVAILABLE));
    assert.equal(h.fake.running, false);
    assert.equal(existsSync(h.fake.socketPath), false);
  });

  it('never shows a secret or a mount flag when recorded calls are printed', async () => {
    await h.controller.createVolume({
      name: 'db',
      volumeCapabilities: [mountCapability],
      capacityRange: { requiredBytes: 1024n },
      secrets: { password: 'hunter2' },
    });
    await h.node.nodeStageVolume({
      volumeId: 'vol-1',
      stagingTargetPath: '/staging/vol-1',
      volumeCapability: mountCapability,
      secrets: { token: 'hunter2' },
    });

    for (const printed of [JSON.stringify(h.fake.calls), inspect(h.fake.calls, { depth: Infinity }), String(h.fake.calls)]) {
      assert.doesNotMatch(printed, /hunter2/);
    }
    assert.match(JSON.stringify(h.fake.calls), /"requiredBytes":"1024"/);

    const stage = h.fake.callsTo('NodeStageVolume')[0]?.request;
    assert.ok(stage?.secrets instanceof SecretMap);
    assert.deepEqual(stage.secrets.reveal(), { token: 'hunter2' });
    const mount = (stage.volumeCapability as { mount: { mountFlags: unknown } }).mount;
    assert.ok(mount.mountFlags instanceof SecretList);
    assert.deepEqual(mount.mountFlags.reveal(), ['noatime', 'password=hunter2']);
  });

  it('answers ready=false to as many probes as it was told, then ready', async () => {
    h.fake.probeNotReady(2);
    assert.deepEqual(await h.identity.probe({}), { ready: false });
    assert.deepEqual(await h.identity.probe({}), { ready: false });
    assert.deepEqual(await h.identity.probe({}), { ready: true });
  });

  it('answers a scripted response exactly, bypassing the model, for as many calls as told', async () => {
    h.fake.answerNext('NodeGetInfo', { nodeId: 'scripted-node', maxVolumesPerNode: 3 }, 2);
    for (let i = 0; i < 2; i++) {
      const info = await h.node.nodeGetInfo({});
      assert.deepEqual([info.nodeId, info.maxVolumesPerNode, info.accessibleTopology], ['scripted-node', 3n, undefined]);
    }
    assert.equal((await h.node.nodeGetInfo({})).nodeId, 'fake-node-1');
  });

  it('pages ListVolumes and answers ABORTED to a token it never gave out', async () => {
    for (const name of ['a', 'b', 'c']) {
      await h.controller.createVolume({ name, volumeCapabilities: [mountCapability] });
    }
    const first = await h.controller.listVolumes({ maxEntries: 2 });
    assert.deepEqual(
      first.entries.map((e) => e.volume?.volumeId),
      ['vol-1', 'vol-2'],
    );
    assert.notEqual(first.nextToken, '');
    const second = await h.controller.listVolumes({ maxEntries: 2, startingToken: first.nextToken });
    assert.deepEqual(
      second.entries.map((e) => e.volume?.volumeId),
      ['vol-3'],
    );
    assert.equal(second.nextToken, '');

    await assert.rejects(h.controller.listVolumes({ startingToken: 'not-a-token' }), grpcCode(Status.ABORTED));
  });

  it('counts overlapping calls for one volume', async () => {
    h.fake.delayNext('NodeUnpublishVolume', 100, 2);
    await Promise.all([
      h.node.nodeUnpublishVolume({ volumeId: 'v1', targetPath: '/target/a' }),
      h.node.nodeUnpublishVolume({ volumeId: 'v1', targetPath: '/target/b' }),
    ]);
    assert.equal(h.fake.maxConcurrentPerVolume('v1'), 2);
    await h.node.nodeUnpublishVolume({ volumeId: 'v2', targetPath: '/target/c' });
    assert.equal(h.fake.maxConcurrentPerVolume('v2'), 1);
    assert.equal(h.fake.maxConcurrentPerVolume('never-called'), 0);
  });

  it('walks a volume through its whole life, spec-like and idempotent', async () => {
    const create = { name: 'db', volumeCapabilities: [mountCapability], parameters: { tier: 'fast' } };
    const { volume } = await h.controller.createVolume(create);
    assert.equal(volume?.volumeId, 'vol-1');
    assert.equal(volume?.capacityBytes, 1024n ** 3n);
    assert.deepEqual((await h.controller.createVolume(create)).volume, volume);
    await assert.rejects(
      h.controller.createVolume({ ...create, capacityRange: { requiredBytes: 5n * 1024n ** 3n } }),
      grpcCode(Status.ALREADY_EXISTS),
    );

    const attach = { volumeId: 'vol-1', nodeId: 'fake-node-1', volumeCapability: mountCapability };
    await assert.rejects(
      h.controller.controllerPublishVolume({ ...attach, nodeId: 'elsewhere' }),
      grpcCode(Status.NOT_FOUND),
    );
    const { publishContext } = await h.controller.controllerPublishVolume(attach);
    assert.deepEqual(publishContext, { devicePath: '/dev/fake/vol-1' });

    const staging = '/staging/vol-1';
    await assert.rejects(
      h.node.nodeStageVolume({ volumeId: 'vol-1', volumeCapability: mountCapability, publishContext }),
      grpcCode(Status.INVALID_ARGUMENT),
    );
    await h.node.nodeStageVolume({ volumeId: 'vol-1', stagingTargetPath: staging, volumeCapability: mountCapability });
    for (const targetPath of ['/target/a', '/target/b']) {
      await h.node.nodePublishVolume({
        volumeId: 'vol-1',
        stagingTargetPath: staging,
        targetPath,
        volumeCapability: mountCapability,
      });
    }
    assert.deepEqual([...(h.fake.published.get('vol-1') ?? [])], ['/target/a', '/target/b']);
    const stats = await h.node.nodeGetVolumeStats({ volumeId: 'vol-1', volumePath: '/target/a' });
    assert.equal(stats.usage[0]?.total, 1024n ** 3n);
    await assert.rejects(
      h.node.nodeGetVolumeStats({ volumeId: 'vol-1', volumePath: '/target/zzz' }),
      grpcCode(Status.NOT_FOUND),
    );

    for (const targetPath of ['/target/a', '/target/b', '/target/b']) {
      await h.node.nodeUnpublishVolume({ volumeId: 'vol-1', targetPath });
    }
    await h.node.nodeUnstageVolume({ volumeId: 'vol-1', stagingTargetPath: staging });
    await h.node.nodeUnstageVolume({ volumeId: 'vol-1', stagingTargetPath: staging });
    await h.controller.controllerUnpublishVolume({ volumeId: 'vol-1', nodeId: 'fake-node-1' });
    await h.controller.deleteVolume({ volumeId: 'vol-1' });
    await h.controller.deleteVolume({ volumeId: 'vol-1' });
    assert.equal(h.fake.volumes.size, 0);
    assert.equal(h.fake.staged.size + h.fake.published.size + h.fake.controllerPublished.size, 0);
  });

  it('stop lets a delayed call finish before it goes down', async () => {
    h.fake.delayNext('NodeGetInfo', 50);
    const answer = h.node.nodeGetInfo({});
    await h.fake.waitForCall('NodeGetInfo');
    await h.fake.stop();
    assert.equal((await answer).nodeId, 'fake-node-1');
    assert.equal(h.fake.running, false);
    assert.equal(existsSync(h.fake.socketPath), false);
    await h.fake.stop();
  });

  it('rejects waitForCall when the call does not arrive in time', async () => {
    await assert.rejects(h.fake.waitForCall('NodeGetInfo', { timeoutMs: 20 }), { code: 'FAKE_CSI_WAIT_TIMEOUT' });
    const waiting = h.fake.waitForCall('NodeGetInfo', { count: 2 });
    await h.node.nodeGetInfo({});
    await h.node.nodeGetInfo({});
    assert.equal((await waiting).rpc, 'NodeGetInfo');
  });
});

describe('FakePlugin with fewer capabilities', () => {
  it('answers UNIMPLEMENTED to what it does not advertise, and stamps calls with its clock', async () => {
    const clock = new ManualClock(1_000);
    const h = harness({ pluginCapabilities: [], nodeCapabilities: [], clock });
    await h.fake.start();
    try {
      await assert.rejects(
        h.controller.createVolume({ name: 'x', volumeCapabilities: [mountCapability] }),
        grpcCode(Status.UNIMPLEMENTED),
      );
      await assert.rejects(
        h.node.nodeStageVolume({ volumeId: 'v', stagingTargetPath: '/s', volumeCapability: mountCapability }),
        grpcCode(Status.UNIMPLEMENTED),
      );
      // Without STAGE_UNSTAGE_VOLUME, NodePublish needs no staging path.
      await h.node.nodePublishVolume({ volumeId: 'v', targetPath: '/t', volumeCapability: mountCapability });
      assert.deepEqual([...(h.fake.published.get('v') ?? [])], ['/t']);
      const nodeInfo = await h.node.nodeGetInfo({});
      assert.equal(nodeInfo.accessibleTopology, undefined);
      assert.deepEqual(
        h.fake.calls.map((c) => c.at),
        [1_000, 1_000, 1_000, 1_000],
      );
    } finally {
      h.channel.close();
      await h.fake.stop();
      rmSync(h.dir, { recursive: true, force: true });
    }
  });
});
