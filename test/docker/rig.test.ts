// The docker rig itself (scripts/docker-rig.mjs, test/support/docker.ts):
// before any container scenario is believed, the three things they lean on
// work on this host — a privileged container runs (the sandbox lacks
// capabilities runc asks for; the rig's runtime wrapper drops them), a mount
// made inside a container under an `:rshared` bind appears on the host (what
// a CSI node plugin in a container does for every volume it publishes), and
// an image pushed to the rig's registry is pulled back by name.

import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
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
