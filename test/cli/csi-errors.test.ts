// `berth csi` against a fake plugin that is told how to fail: what a plugin
// author sees on stdout, stderr and in the exit code for each kind of failure,
// and that secrets never show while the plugin still receives them.

import assert from 'node:assert/strict';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, beforeEach, describe, it } from 'node:test';
import { FakePlugin } from '../support/csi-fake/index.js';
import type { SecretList, SecretMap } from '../../src/lib/index.js';
import { berth, json, shortTempDir, startBerth, type BerthResult } from './_berth.js';

const SECRET = 'hunter2';

let dir: string;
let fake: FakePlugin;
let endpoint: string;

const csi = (...args: string[]): Promise<BerthResult> => berth(['csi', '--endpoint', endpoint, ...args]);

function assertNoSecret(result: BerthResult): void {
  assert.ok(!result.stdout.includes(SECRET), `stdout shows the secret:\n${result.stdout}`);
  assert.ok(!result.stderr.includes(SECRET), `stderr shows the secret:\n${result.stderr}`);
}

before(async () => {
  dir = await shortTempDir('bcli-');
  fake = new FakePlugin({ socketPath: join(dir, 'csi.sock') });
  await fake.start();
  endpoint = fake.endpoint;
});

after(async () => {
  await fake?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  fake.clearScript();
  fake.clearCalls();
});

describe('berth csi against a plugin that answers with an error', () => {
  it('exits 1 and names the RPC and gRPC code on stderr when the volume is not found', async () => {
    fake.failNext('NodeStageVolume', 'NOT_FOUND', 'volume vol-x does not exist');
    const result = await csi('stage', 'vol-x', '--staging-path', join(dir, 'staging', 'vol-x'));
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /^error: NodeStageVolume failed: NOT_FOUND: volume vol-x does not exist$/m);
    assert.equal(result.stdout, '');
  });

  it('succeeds on teardown of something already gone, and says so', async () => {
    fake.failNext('NodeUnpublishVolume', 'NOT_FOUND', 'no such volume');
    const human = await csi('unpublish', 'vol-x', '--target-path', join(dir, 'target', 'vol-x'));
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /already gone: the plugin answered NOT_FOUND/);
    fake.failNext('NodeUnpublishVolume', 'NOT_FOUND', 'no such volume');
    const doc = json<{ alreadyDone: boolean }>(await csi('--json', 'unpublish', 'vol-x', '--target-path', join(dir, 'target', 'vol-x')));
    assert.equal(doc.alreadyDone, true);
  });

  it('prints a JSON error object on stdout with --json', async () => {
    fake.failNext('ValidateVolumeCapabilities', 'NOT_FOUND', 'volume vol-x does not exist');
    const result = await csi('--json', 'validate', 'vol-x');
    assert.equal(result.code, 1, result.stderr);
    const { error } = json<{ error: Record<string, unknown> }>(result);
    assert.equal(error['code'], 'CSI_NOT_FOUND');
    assert.equal(error['grpcCode'], 'NOT_FOUND');
    assert.equal(error['rpc'], 'ValidateVolumeCapabilities');
    assert.match(String(error['message']), /volume vol-x does not exist/);
    assert.match(result.stderr, /error: ValidateVolumeCapabilities failed: NOT_FOUND/);
  });

  it('shows a service that answers UNIMPLEMENTED as "not served" without failing', async () => {
    fake.failNext('NodeGetCapabilities', 'UNIMPLEMENTED', 'no node service here');
    const human = await csi('capabilities');
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /^node\n {2}not served \(UNIMPLEMENTED: no node service here\)$/m);
    assert.match(human.stdout, /CREATE_DELETE_VOLUME/);

    fake.failNext('NodeGetCapabilities', 'UNIMPLEMENTED');
    const doc = json<{ node: { served: boolean }; controller: { served: boolean; capabilities: string[] } }>(await csi('--json', 'capabilities'));
    assert.equal(doc.node.served, false);
    assert.ok(doc.controller.capabilities.includes('LIST_VOLUMES'));
  });

  it('exits 4 when the plugin answers out of spec', async () => {
    fake.answerNext('GetPluginInfo', { name: '', vendorVersion: '1.0.0' });
    const result = await csi('info');
    assert.equal(result.code, 4, result.stderr);
    assert.match(result.stderr, /^error: GetPluginInfo: plugin answered out of spec: name is empty$/m);
  });
});

describe('berth csi when the plugin cannot be reached', () => {
  it('exits 3 and asks whether the plugin is running', async () => {
    const missing = `unix://${join(dir, 'nobody.sock')}`;
    const result = await berth(['csi', '--endpoint', missing, 'info']);
    assert.equal(result.code, 3, result.stderr);
    assert.match(result.stderr, /^error: GetPluginInfo failed: UNAVAILABLE/m);
    assert.ok(result.stderr.includes(`is the plugin running at ${missing}?`), result.stderr);

    const doc = json<{ error: Record<string, unknown> }>(await berth(['csi', '--json', '--endpoint', missing, 'probe']));
    assert.equal(doc.error['grpcCode'], 'UNAVAILABLE');
    assert.equal(doc.error['exitCode'], 3);
  });

  it('exits 3 when the plugin does not answer within --timeout', async () => {
    fake.hangNext('Probe');
    const result = await csi('--timeout', '300ms', 'probe');
    assert.equal(result.code, 3, result.stderr);
    assert.match(result.stderr, /no answer within 300ms; is the plugin running at unix:\/\//);
  });

  it('exits 130 when interrupted while waiting for the plugin', async () => {
    fake.hangNext('Probe');
    const proc = startBerth(['csi', '--endpoint', endpoint, 'probe']);
    await fake.waitForCall('Probe', { timeoutMs: 10_000 });
    proc.child.kill('SIGINT');
    const result = await proc.exited;
    assert.equal(result.code, 130, result.stderr);
  });
});

describe('berth csi refuses bad usage before sending anything', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['a malformed size', ['create-volume', 'v1', '--size', '12XB'], /argument '12XB' is invalid/],
    ['an unknown flag', ['create-volume', 'v1', '--sise', '1GiB'], /unknown option '--sise'/],
    ['a missing argument', ['create-volume'], /missing required argument 'name'/],
    ['a missing required flag', ['stage', 'v1'], /required option '--staging-path <path>' not specified/],
    ['an unknown command', ['create-volumes', 'v1'], /unknown command 'create-volumes'/],
    ['a malformed duration', ['--timeout', '30', 'probe'], /argument '30' is invalid/],
    ['a request the spec forbids', ['create-volume', 'v'.repeat(129)], /invalid request: name is 129 bytes/],
    ['a block volume with a filesystem', ['stage', 'v1', '--staging-path', '/tmp/x', '--attachment', 'block-device', '--fs-type', 'ext4'], /block-device volume takes no fs_type/],
    ['a pair without "="', ['create-volume', 'v1', '--param', 'tier'], /--param takes key=value/],
  ];
  for (const [what, args, message] of cases) {
    it(`exits 2 on ${what}`, async () => {
      const result = await csi(...args);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
      assert.deepEqual(
        fake.calls.map((c) => c.rpc),
        [],
      );
    });
  }

  it('exits 2 on an endpoint that is not a unix socket', async () => {
    const result = await berth(['csi', '--endpoint', 'tcp://127.0.0.1:9000', 'info']);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /not a unix socket address/);
  });

  it('prints its help with examples and the exit codes', async () => {
    const result = await berth(['csi', '--help']);
    assert.equal(result.code, 0);
    assert.match(result.stdout, /Exit codes:\n {2}0 {4}success/);
    assert.match(result.stdout, /Examples:/);
  });
});

describe('berth csi keeps secrets and mount flags out of its output', () => {
  const flags = ['--secret', `password=${SECRET}`, '--mount-flag', `password=${SECRET}`];

  for (const mode of ['human', 'json'] as const) {
    it(`sends them to the plugin but never prints them (${mode})`, async () => {
      const result = await csi(...(mode === 'json' ? ['--json'] : []), 'create-volume', `secret-vol-${mode}`, '--size', '1MiB', ...flags);
      assert.equal(result.code, 0, result.stderr);
      assertNoSecret(result);
      if (mode === 'json') assert.match(json(result)['volumeId'] as string, /.+/);

      const [call] = fake.callsTo('CreateVolume');
      assert.ok(call);
      assert.equal((call.request['secrets'] as SecretMap).reveal()['password'], SECRET);
      const [capability] = call.request['volumeCapabilities'] as Array<{ mount: { mountFlags: SecretList } }>;
      assert.deepEqual(capability?.mount.mountFlags.reveal(), [`password=${SECRET}`]);
    });

    it(`redacts them when stage echoes the request (${mode})`, async () => {
      const staging = join(dir, 'staging', `s-${mode}`);
      const result = await csi(...(mode === 'json' ? ['--json'] : []), 'stage', `vol-s-${mode}`, '--staging-path', staging, ...flags);
      assert.equal(result.code, 0, result.stderr);
      assertNoSecret(result);
      if (mode === 'json') assert.deepEqual((json(result)['volumeCapability'] as { mountFlags: string[] }).mountFlags, ['[REDACTED]']);
      const [call] = fake.callsTo('NodeStageVolume');
      assert.equal((call?.request['secrets'] as SecretMap).reveal()['password'], SECRET);
    });

    it(`scrubs them from a plugin error that echoes them (${mode})`, async () => {
      fake.failNext('NodePublishVolume', 'INVALID_ARGUMENT', `mount -o password=${SECRET} failed`);
      const target = join(dir, 'targets', `t-${mode}`);
      const result = await csi(...(mode === 'json' ? ['--json'] : []), 'publish', 'vol-s', '--target-path', target, ...flags);
      assert.equal(result.code, 1, result.stderr);
      assertNoSecret(result);
      assert.match(result.stderr, /INVALID_ARGUMENT: mount -o \[REDACTED\] failed/);
    });
  }

  it('never quotes a malformed secret in the usage error', async () => {
    const result = await csi('create-volume', 'v1', '--secret', SECRET);
    assert.equal(result.code, 2);
    assertNoSecret(result);
    assert.match(result.stderr, /--secret takes key=value/);
    assert.equal(fake.calls.length, 0);
  });
});
