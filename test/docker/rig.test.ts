// The docker rig itself (scripts/docker-rig.mjs, test/support/docker.ts):
// before any container scenario is believed, the three things they lean on
// work on this host — a privileged container runs (the sandbox lacks
// capabilities runc asks for; the rig's runtime wrapper drops them), a mount
// made inside a container under an `:rshared` bind appears on the host (what
// a CSI node plugin in a container does for every volume it publishes), and
// an image pushed to the rig's registry is pulled back by name. And Berth's
// hostpath plugin image serves CSI on the socket in its `/csi` bind, its
// stage and publish mounts reaching the host.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { berth, cleanEnv } from '../support/agent-run.js';
import {
  containerLogs, dockerApi, dockerCall, dockerRig, dockerSkip, forgetLocalImage, testImage, waitForContainerOutput, type TestDocker,
} from '../support/docker.js';

const skip = dockerSkip();

/** Creates and starts a container; resolves with its ID. */
async function run(rig: TestDocker, body: Record<string, unknown>): Promise<string> {
  const { Id } = await dockerApi<{ Id: string }>(rig, 'POST', '/containers/create', body);
  await dockerApi(rig, 'POST', `/containers/${Id}/start`);
  return Id;
}

/** Waits for the container to exit (POST /wait blocks until it does); resolves with its exit code. */
async function waitExit(rig: TestDocker, id: string): Promise<number> {
  const { StatusCode } = await dockerApi<{ StatusCode: number }>(rig, 'POST', `/containers/${id}/wait`);
  return StatusCode;
}

test('a privileged container runs with every capability the host has and can mount', { skip }, async () => {
  const rig = await dockerRig();
  const image = await testImage(rig, 'busybox');
  const id = await run(rig, {
    Image: image,
    Cmd: ['sh', '-c', 'grep CapEff /proc/self/status && mkdir /m && mount -t tmpfs none /m && echo mounted'],
    HostConfig: { Privileged: true },
  });
  try {
    const code = await waitExit(rig, id);
    const { stdout, stderr } = await containerLogs(rig, id);
    assert.equal(code, 0, `privileged container failed: ${stderr}`);
    assert.match(stdout, /mounted/);
    // CAP_SYS_ADMIN (bit 21) is there: a real privileged container, not a default one.
    const capEff = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(stdout)![1]}`);
    assert.notEqual(capEff & (1n << 21n), 0n, stdout);
  } finally {
    await dockerApi(rig, 'DELETE', `/containers/${id}?force=1`);
  }
});

test('a mount made inside a container under an :rshared bind appears on the host', { skip }, async () => {
  const rig = await dockerRig();
  const image = await testImage(rig, 'busybox');
  const source = join(rig.sharedDir, `propagation-${process.pid}`);
  mkdirSync(source, { recursive: true });
  const id = await run(rig, {
    Image: image,
    Cmd: ['sh', '-c', 'mkdir -p /csi/vol && mount -t tmpfs none /csi/vol && echo from-container > /csi/vol/file && echo ready && sleep 600'],
    HostConfig: { Privileged: true, Mounts: [{ Type: 'bind', Source: source, Target: '/csi', BindOptions: { Propagation: 'rshared' } }] },
  });
  try {
    // The container prints "ready" after the write; follow its log, then look from the host.
    await waitForContainerOutput(rig, id, /ready/);
    assert.equal(readFileSync(join(source, 'vol', 'file'), 'utf8'), 'from-container\n');
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8');
    assert.ok(mounts.includes(` ${join(source, 'vol')} `), 'the tmpfs is a mount in the host namespace');
  } finally {
    await dockerApi(rig, 'DELETE', `/containers/${id}?force=1`);
    spawnSync('umount', ['-l', join(source, 'vol')]);
    rmSync(source, { recursive: true, force: true });
  }
  assert.equal(existsSync(source), false);
});

test('an image pushed to the rig registry is pulled back by its registry name', { skip }, async () => {
  const rig = await dockerRig();
  const image = await testImage(rig, 'busybox');
  assert.ok(image.startsWith(`${rig.registry}/`), image);
  // The registry lists it (Distribution's catalog API, plain HTTP on loopback).
  const catalog = await (await fetch(`http://${rig.registry}/v2/_catalog`)).json() as { repositories: string[] };
  assert.ok(catalog.repositories.includes('busybox'), JSON.stringify(catalog));
  await forgetLocalImage(rig, image);
  assert.equal((await dockerCall(rig, 'GET', `/images/${encodeURIComponent(image)}/json`)).status, 404);
  // POST /images/create streams progress and ends when the pull is done.
  const [name, tag] = [image.slice(0, image.lastIndexOf(':')), image.slice(image.lastIndexOf(':') + 1)];
  const progress = await dockerApi<string>(rig, 'POST', `/images/create?fromImage=${encodeURIComponent(name)}&tag=${tag}`);
  assert.match(String(progress), /Status: (Downloaded newer image|Image is up to date)/);
  const id = await run(rig, { Image: image, Cmd: ['sh', '-c', 'echo $PATH'] });
  try {
    assert.equal(await waitExit(rig, id), 0);
    assert.equal((await containerLogs(rig, id)).stdout.trim(), '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin');
  } finally {
    await dockerApi(rig, 'DELETE', `/containers/${id}?force=1`);
  }
});

test('the Berth plugin image serves CSI on its socket, and its mounts reach the host', { skip }, async () => {
  const rig = await dockerRig();
  const image = await testImage(rig, 'plugin');
  const source = join(rig.sharedDir, `plugin-${process.pid}`);
  mkdirSync(source, { recursive: true });
  const id = await run(rig, {
    Image: image,
    Cmd: ['--endpoint=unix:///csi/csi.sock', '--node-id=rig-test', '--data-dir=/var/lib/berth/hostpath'],
    HostConfig: {
      Privileged: true,
      Mounts: [
        { Type: 'bind', Source: source, Target: '/csi', BindOptions: { Propagation: 'rshared' } },
        { Type: 'bind', Source: '/dev', Target: '/dev' },
      ],
    },
  });
  const csi = (...args: string[]) => berth(['csi', '--endpoint', `unix://${join(source, 'csi.sock')}`, '--json', ...args], { env: cleanEnv() });
  try {
    await waitForContainerOutput(rig, id, /hostpath plugin started/);
    const probe = await csi('probe');
    assert.equal(probe.code, 0, probe.stderr);
    const created = await csi('create-volume', 'v1');
    assert.equal(created.code, 0, created.stderr);
    const volumeId = (JSON.parse(created.stdout) as { volumeId: string }).volumeId;
    // Stage and publish from inside the container (the paths are the plugin's), then look from the host.
    const inside = async (...args: string[]): Promise<void> => {
      const exec = await dockerApi<{ Id: string }>(rig, 'POST', `/containers/${id}/exec`, {
        Cmd: ['node', '/opt/berth/bin/berth.js', 'csi', '--endpoint', 'unix:///csi/csi.sock', ...args], AttachStdout: true, AttachStderr: true,
      });
      await dockerApi(rig, 'POST', `/exec/${exec.Id}/start`, { Detach: false });
      const { ExitCode } = await dockerApi<{ ExitCode: number }>(rig, 'GET', `/exec/${exec.Id}/json`);
      assert.equal(ExitCode, 0, `berth csi ${args.join(' ')} in the plugin container`);
    };
    await inside('stage', volumeId, '--staging-path', '/csi/staging/v1', '--access-mode', 'single-node-writer');
    await inside('publish', volumeId, '--staging-path', '/csi/staging/v1', '--target-path', '/csi/per-alloc/a1/v1', '--access-mode', 'single-node-writer');
    writeFileSync(join(source, 'per-alloc', 'a1', 'v1', 'from-host.txt'), 'hello\n');
    assert.ok(readFileSync('/proc/self/mountinfo', 'utf8').includes(` ${join(source, 'per-alloc', 'a1', 'v1')} `), 'the publish mount is on the host');
    await inside('unpublish', volumeId, '--target-path', '/csi/per-alloc/a1/v1');
    await inside('unstage', volumeId, '--staging-path', '/csi/staging/v1');
    assert.ok(!readFileSync('/proc/self/mountinfo', 'utf8').includes(source), 'unpublish and unstage removed the mounts from the host too');
  } finally {
    await dockerApi(rig, 'DELETE', `/containers/${id}?force=1`);
    for (const m of readFileSync('/proc/self/mountinfo', 'utf8').split('\n').map((l) => l.split(' ')[4] ?? '').filter((p) => p.startsWith(source)).reverse()) {
      spawnSync('umount', ['-l', m]);
    }
    rmSync(source, { recursive: true, force: true });
  }
});
