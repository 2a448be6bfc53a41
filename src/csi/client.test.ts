import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, afterEach, before, describe, it } from 'node:test';
import { AbortedError, createLogger, SecretMap, type Clock } from '../lib/index.js';
import { VolumeCapability } from './capability.js';
import { CsiClient, parseEndpoint } from './client.js';
import { CsiEndpointError, CsiError, CsiProtocolError, CsiRequestError, GRPC_CODES, type GrpcCodeName } from './errors.js';
import { FakePlugin } from '../../test/support/csi-fake/index.js';
import { RPC_POLICIES } from './policy.js';
import { eventually } from '../../test/support/eventually.js';

const cap = VolumeCapability.mount('single-node-writer', { fsType: 'ext4', mountFlags: ['password=hunter2'] });

/** A clock whose sleeps return at once, recording how long they would have been. */
function instantClock(): Clock & { delays: number[] } {
  const delays: number[] = [];
  return { delays, now: () => 0, sleep: async (ms) => void delays.push(ms) };
}

describe('CsiClient against a fake plugin on a real socket', () => {
  let dir: string;
  let fake: FakePlugin;
  let client: CsiClient;
  let clock: ReturnType<typeof instantClock>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bc-'));
    fake = new FakePlugin({ socketPath: join(dir, 'csi.sock') });
    await fake.start();
  });

  after(async () => {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const fresh = (): CsiClient => {
    clock = instantClock();
    client = new CsiClient({ endpoint: fake.endpoint, clock });
    return client;
  };

  afterEach(async () => {
    await client?.close();
    if (!fake.running) await fake.start();
    fake.reset();
  });

  it('fingerprints the plugin: info, capabilities, node info and topology', async () => {
    const fp = await fresh().fingerprint();
    assert.equal(fp.info.name, 'fake.csi.berth.dev');
    assert.equal(fp.info.vendorVersion, '1.0.0');
    assert.deepEqual(fp.capabilities.services, ['CONTROLLER_SERVICE', 'VOLUME_ACCESSIBILITY_CONSTRAINTS']);
    assert.ok(fp.controller?.capabilities.includes('PUBLISH_UNPUBLISH_VOLUME'));
    assert.ok(fp.node?.capabilities.includes('STAGE_UNSTAGE_VOLUME'));
    assert.equal(fp.node?.info.nodeId, 'fake-node-1');
    assert.deepEqual(fp.node?.info.accessibleTopology, { 'topology.fake.csi.berth.dev/zone': 'z1' });
  });

  it('reads Probe the spec way: unset ready is ready, false is starting, an error is unhealthy', async () => {
    fresh();
    fake.answerNext('Probe', {});
    assert.deepEqual(await client.probe(), { ready: true });
    fake.probeNotReady(1);
    assert.deepEqual(await client.probe(), { ready: false });
    fake.failNext('Probe', 'FAILED_PRECONDITION', 'disk gone');
    await assert.rejects(client.probe(), (e: unknown) => e instanceof CsiError && e.grpcCodeName === 'FAILED_PRECONDITION');
    assert.equal(fake.callsTo('Probe').length, 3, 'a failed probe is not retried by the client');
  });

  describe('every gRPC code gets its classification and retry behaviour', () => {
    const codes = Object.keys(GRPC_CODES).filter((c) => c !== 'OK') as GrpcCodeName[];
    for (const code of codes) {
      const retried = RPC_POLICIES.NodeStageVolume.retryOn.has(code);
      it(`NodeStageVolume answering ${code} is ${retried ? 'retried and then succeeds' : 'surfaced at once'}`, async () => {
        fresh();
        fake.failNext('NodeStageVolume', code, `scripted ${code}`);
        const stage = client.nodeStageVolume({ volumeId: 'v1', stagingTargetPath: '/staging/v1', volumeCapability: cap });
        if (retried) {
          await stage;
          assert.equal(fake.callsTo('NodeStageVolume').length, 2);
          assert.equal(clock.delays.length, 1, 'one backoff wait between the attempts');
        } else {
          const err = await stage.then(() => assert.fail('should reject'), (e: unknown) => e);
          assert.ok(err instanceof CsiError);
          assert.equal(err.grpcCodeName, code);
          assert.equal(err.rpc, 'NodeStageVolume');
          assert.match(err.message, new RegExp(`scripted ${code}`));
          assert.equal(fake.callsTo('NodeStageVolume').length, 1);
        }
      });
    }
  });

  it('gives up after the policy attempts, leaving the step uncertain', async () => {
    fresh();
    fake.failNext('NodePublishVolume', 'UNAVAILABLE', 'busy', Infinity);
    const err = await client
      .nodePublishVolume({ volumeId: 'v1', targetPath: '/t/v1', volumeCapability: cap, readonly: false })
      .then(() => assert.fail('should reject'), (e: unknown) => e);
    assert.ok(err instanceof CsiError && err.uncertain && err.grpcCodeName === 'UNAVAILABLE');
    assert.equal(fake.callsTo('NodePublishVolume').length, RPC_POLICIES.NodePublishVolume.backoff.maxAttempts);
    assert.deepEqual(clock.delays.length, RPC_POLICIES.NodePublishVolume.backoff.maxAttempts - 1);
    assert.ok(clock.delays.every((d, i) => i === 0 || d >= clock.delays[i - 1]! * 0.5), 'delays grow');
  });

  it('never retries UNIMPLEMENTED, even when a policy asks it to', async () => {
    client = new CsiClient({
      endpoint: fake.endpoint,
      clock: instantClock(),
      policies: { NodeGetVolumeStats: { retryOn: new Set(['UNIMPLEMENTED', 'UNAVAILABLE']) } },
    });
    fake.failNext('NodeGetVolumeStats', 'UNIMPLEMENTED', 'no stats', 5);
    await assert.rejects(client.nodeGetVolumeStats('v1', '/t/v1'), (e: unknown) => e instanceof CsiError && e.grpcCodeName === 'UNIMPLEMENTED');
    assert.equal(fake.callsTo('NodeGetVolumeStats').length, 1);
  });

  it('treats NOT_FOUND on unpublish, unstage and delete as done, but not on stage', async () => {
    fresh();
    fake.failNext('NodeUnpublishVolume', 'NOT_FOUND', 'gone');
    fake.failNext('NodeUnstageVolume', 'NOT_FOUND', 'gone');
    fake.failNext('ControllerUnpublishVolume', 'NOT_FOUND', 'gone');
    fake.failNext('DeleteVolume', 'NOT_FOUND', 'gone');
    assert.deepEqual(await client.nodeUnpublishVolume('v1', '/t/v1'), { alreadyDone: true });
    assert.deepEqual(await client.nodeUnstageVolume('v1', '/s/v1'), { alreadyDone: true });
    assert.deepEqual(await client.controllerUnpublishVolume({ volumeId: 'v1', nodeId: 'fake-node-1' }), { alreadyDone: true });
    assert.deepEqual(await client.deleteVolume('v1'), { alreadyDone: true });
    assert.deepEqual(await client.deleteVolume('v1'), { alreadyDone: false }, 'the fake answers OK for an unknown volume');
    fake.failNext('NodeStageVolume', 'NOT_FOUND', 'no such volume');
    await assert.rejects(
      client.nodeStageVolume({ volumeId: 'v1', stagingTargetPath: '/s/v1', volumeCapability: cap }),
      (e: unknown) => e instanceof CsiError && e.final && !e.alreadyDone,
    );
  });

  it('a hung plugin hits the deadline while other calls, on this and another connection, go on', async () => {
    fresh();
    const other = new FakePlugin({ socketPath: join(dir, 'other.sock'), name: 'other.csi.berth.dev' });
    await other.start();
    const otherClient = new CsiClient({ endpoint: other.endpoint });
    try {
      fake.hangNext('NodeStageVolume');
      const hung = client.nodeStageVolume(
        { volumeId: 'v-hung', stagingTargetPath: '/s/v-hung', volumeCapability: cap },
        { deadlineMs: 300, retry: false },
      );
      await fake.waitForCall('NodeStageVolume');
      assert.equal((await otherClient.getPluginInfo()).name, 'other.csi.berth.dev');
      await client.nodeStageVolume({ volumeId: 'v-other', stagingTargetPath: '/s/v-other', volumeCapability: cap });
      const err = await hung.then(() => assert.fail('should time out'), (e: unknown) => e);
      assert.ok(err instanceof CsiError);
      assert.equal(err.grpcCodeName, 'DEADLINE_EXCEEDED');
      assert.ok(err.uncertain, 'a timed-out stage may have happened');
    } finally {
      await otherClient.close();
      await other.stop();
    }
  });

  it('sends its deadline to the plugin', async () => {
    fresh();
    await client.nodeStageVolume({ volumeId: 'v1', stagingTargetPath: '/s/v1', volumeCapability: cap }, { deadlineMs: 7_000 });
    const call = fake.callsTo('NodeStageVolume')[0];
    assert.ok(call?.deadline !== undefined && call.deadline > 0 && call.deadline <= 7_000, `deadline ${call?.deadline}`);
  });

  it('reaches a plugin that crashed and came back on a new socket, without the caller doing anything', async () => {
    fresh();
    assert.equal((await client.getPluginInfo()).name, 'fake.csi.berth.dev');
    await fake.crash();
    await assert.rejects(client.probe({ retry: false }), (e: unknown) => e instanceof CsiError && e.grpcCodeName === 'UNAVAILABLE');
    await fake.start();
    assert.deepEqual(await client.probe({ retry: false }), { ready: true });
  });

  it('a retried call rides over a plugin restart', async () => {
    // The backoff wait lasts until the test has restarted the plugin.
    let restarted!: () => void;
    const gate = new Promise<void>((r) => (restarted = r));
    client = new CsiClient({ endpoint: fake.endpoint, clock: { now: () => 0, sleep: () => gate } });
    await client.getPluginInfo();
    fake.crashOn('NodeGetInfo');
    const info = client.nodeGetInfo();
    await fake.waitForCall('NodeGetInfo');
    await eventually('the crashed fake to stop serving', () => !fake.running, { intervalMs: 1 });
    await fake.start();
    restarted();
    assert.equal((await info).nodeId, 'fake-node-1');
    assert.equal(fake.callsTo('NodeGetInfo').length, 2);
  });

  it('a call cancelled in flight is uncertain; one cancelled before sending never reaches the plugin', async () => {
    fresh();
    fake.hangNext('NodeStageVolume');
    const ac = new AbortController();
    const staging = client.nodeStageVolume({ volumeId: 'v1', stagingTargetPath: '/s/v1', volumeCapability: cap }, { signal: ac.signal });
    await fake.waitForCall('NodeStageVolume');
    ac.abort();
    const err = await staging.then(() => assert.fail('should reject'), (e: unknown) => e);
    assert.ok(err instanceof CsiError && err.grpcCodeName === 'CANCELLED' && err.uncertain);

    const before = fake.calls.length;
    await assert.rejects(client.probe({ signal: AbortSignal.abort() }), AbortedError);
    assert.equal(fake.calls.length, before);
  });

  it('keeps secrets and mount flags out of logs, errors and printed requests, yet sends them', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _e, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    client = new CsiClient({ endpoint: fake.endpoint, clock: instantClock(), logger: createLogger({ destination: sink, level: 'trace' }) });
    const secrets = new SecretMap({ password: 'hunter2' });
    fake.failNext('NodeStageVolume', 'UNAVAILABLE', 'flaky');
    await client.nodeStageVolume({ volumeId: 'v1', stagingTargetPath: '/s/v1', volumeCapability: cap, secrets });
    fake.failNext('NodePublishVolume', 'INVALID_ARGUMENT', 'bad');
    const err = await client
      .nodePublishVolume({ volumeId: 'v1', targetPath: '/t/v1', volumeCapability: cap, readonly: false, secrets })
      .then(() => assert.fail('should reject'), (e: unknown) => e as Error);

    const received = fake.callsTo('NodeStageVolume').at(-1)!.request;
    assert.deepEqual((received['secrets'] as SecretMap).reveal(), { password: 'hunter2' });
    const printed = [lines.join(''), err.message, String(err.stack), JSON.stringify(fake.calls), JSON.stringify({ cap, secrets })].join('\n');
    assert.ok(lines.length > 0, 'the client logged its retry');
    assert.ok(!printed.includes('hunter2'), printed);
  });

  it('refuses requests the spec calls invalid before they reach the plugin', async () => {
    fresh();
    const cases: Array<[string, () => Promise<unknown>, string]> = [
      ['300-byte volume id', () => client.nodeUnstageVolume('x'.repeat(300), '/s/x'), 'volume_id'],
      ['empty volume id', () => client.deleteVolume(''), 'volume_id'],
      ['129-byte name', () => client.createVolume({ name: 'n'.repeat(129), volumeCapabilities: [cap] }), 'name'],
      ['no capabilities', () => client.createVolume({ name: 'n', volumeCapabilities: [] }), 'volume_capabilities'],
      ['limit below required', () => client.createVolume({ name: 'n', volumeCapabilities: [cap], capacityRange: { requiredBytes: 10, limitBytes: 5 } }), 'capacity_range'],
      ['relative staging path on unstage', () => client.nodeUnstageVolume('v', 'rel/path'), 'staging_target_path'],
      ['no target path on unpublish', () => client.nodeUnpublishVolume('v', ''), 'target_path'],
      ['relative staging path', () => client.nodeStageVolume({ volumeId: 'v', stagingTargetPath: 'rel/path', volumeCapability: cap }), 'staging_target_path'],
      ['secrets over 4 KiB', () => client.deleteVolume('v', { secrets: new SecretMap({ k: 'x'.repeat(5000) }) }), 'secrets'],
      ['node id over 256 bytes', () => client.controllerPublishVolume({ volumeId: 'v', nodeId: 'n'.repeat(257), volumeCapability: cap, readonly: false }), 'node_id'],
      ['mount flags over 4 KiB', () => client.nodePublishVolume({ volumeId: 'v', targetPath: '/t', readonly: false, volumeCapability: VolumeCapability.mount('single-node-writer', { mountFlags: ['f'.repeat(5000)] }) }), 'volume_capability.mount.mount_flags'],
    ];
    for (const [name, call, field] of cases) {
      await assert.rejects(call(), (e: unknown) => e instanceof CsiRequestError && e.field === field && e.code === 'CSI_BAD_REQUEST', name);
    }
    assert.equal(fake.calls.length, 0);
    const secretErr = await client.deleteVolume('v', { secrets: new SecretMap({ k: 'hunter2'.repeat(700) }) }).catch((e: Error) => e);
    assert.ok(!String(secretErr).includes('hunter2'));
  });

  it('fingerprints a controller-only plugin as serving no Node', async () => {
    fresh();
    fake.failNext('NodeGetCapabilities', 'UNIMPLEMENTED', 'controller only');
    fake.failNext('NodeGetInfo', 'UNIMPLEMENTED', 'controller only');
    const fp = await client.fingerprint();
    assert.equal(fp.node, undefined);
    assert.ok(fp.controller?.capabilities.includes('CREATE_DELETE_VOLUME'));
  });

  it('reports a plugin that answers nonsense as out of spec', async () => {
    fresh();
    fake.answerNext('NodeGetInfo', { nodeId: '' });
    await assert.rejects(client.nodeGetInfo(), (e: unknown) => e instanceof CsiProtocolError && /node_id is empty/.test(e.message));
    fake.answerNext('GetPluginInfo', { name: 'x'.repeat(64), vendorVersion: '1' });
    await assert.rejects(client.getPluginInfo(), CsiProtocolError);
    fake.answerNext('CreateVolume', { volume: { volumeId: '' } });
    await assert.rejects(client.createVolume({ name: 'v', volumeCapabilities: [cap] }), CsiProtocolError);
  });

  it('creates, publishes, lists and deletes volumes in Berth types', async () => {
    fresh();
    const vol = await client.createVolume({ name: 'data', volumeCapabilities: [cap], capacityRange: { requiredBytes: 5 * 2 ** 30 } });
    assert.equal(vol.capacityBytes, 5 * 2 ** 30);
    const again = await client.createVolume({ name: 'data', volumeCapabilities: [cap], capacityRange: { requiredBytes: 5 * 2 ** 30 } });
    assert.equal(again.volumeId, vol.volumeId);
    const { publishContext } = await client.controllerPublishVolume({ volumeId: vol.volumeId, nodeId: 'fake-node-1', volumeCapability: cap, readonly: false });
    assert.deepEqual(publishContext, { devicePath: `/dev/fake/${vol.volumeId}` });
    const verdict = await client.validate({ volumeId: vol.volumeId, volumeCapabilities: [cap] });
    assert.deepEqual(verdict, { validated: true });
    await client.createVolume({ name: 'more', volumeCapabilities: [cap] });
    await client.createVolume({ name: 'most', volumeCapabilities: [cap] });
    const all = await client.listAllVolumes({ pageSize: 2 });
    assert.deepEqual(all.map((e) => e.volume.volumeId).sort(), [...fake.volumes.keys()].sort());
    await client.controllerUnpublishVolume({ volumeId: vol.volumeId, nodeId: 'fake-node-1' });
    await client.deleteVolume(vol.volumeId);
    assert.ok(!fake.volumes.has(vol.volumeId));
  });

  it('restarts a paged listing from the top when the plugin rejects its token', async () => {
    fresh();
    for (const name of ['a', 'b', 'c']) await client.createVolume({ name, volumeCapabilities: [cap] });
    let pages = 0;
    const first = await client.listVolumes({ maxEntries: 1 });
    assert.ok(first.nextToken);
    fake.failNext('ListVolumes', 'ABORTED', 'stale token');
    const all = await client.listAllVolumes({ pageSize: 1 });
    pages = fake.callsTo('ListVolumes').length;
    assert.equal(all.length, 3);
    assert.equal(pages, 1 + 1 + 3, 'the aborted page, then a full listing');
  });

  it('closes cleanly, twice, and refuses calls afterwards', async () => {
    fresh();
    await client.probe();
    await client.close();
    await client.close();
    await assert.rejects(client.probe(), /closed/);
  });
});

describe('parseEndpoint', () => {
  it('accepts unix socket addresses and explains the rest', () => {
    assert.equal(parseEndpoint('unix:///run/csi.sock'), '/run/csi.sock');
    assert.equal(parseEndpoint('/run/csi.sock'), '/run/csi.sock');
    assert.throws(() => parseEndpoint('tcp://1.2.3.4:5'), CsiEndpointError);
    assert.throws(() => parseEndpoint('unix://relative.sock'), /absolute/);
    assert.throws(() => parseEndpoint(`unix:///${'d'.repeat(120)}.sock`), /at most 107/);
  });
});
