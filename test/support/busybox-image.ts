// Test kit: the images the docker driver's tests run, made from Debian's
// busybox-static with its applet links (docker import, as the rig's builder
// scripts/docker-images.mjs does), written before the rig's helpers
// (test/support/docker.ts) were on the driver's branch; they can replace it.

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Dockerode from 'dockerode';
import * as tar from 'tar';

/** The local tag busyboxImage makes before pushing. */
export const LOCAL_IMAGE = 'berth-driver-test/busybox:1';

// A small local stand-in for the rig's image builder (test/support/docker.ts): busybox-static with its applet links, PATH in the image config.
export async function importBusybox(docker: Dockerode, repo: string, cmd: string[]): Promise<void> {
  const root = mkdtempSync(path.join(tmpdir(), 'bb-root-'));
  try {
    mkdirSync(path.join(root, 'bin'));
    copyFileSync('/bin/busybox', path.join(root, 'bin/busybox'));
    for (const applet of execFileSync('/bin/busybox', ['--list'], { encoding: 'utf8' }).split('\n').filter(Boolean)) {
      if (applet !== 'busybox') symlinkSync('busybox', path.join(root, 'bin', applet));
    }
    for (const d of ['tmp', 'etc', 'proc', 'sys', 'dev', 'www']) mkdirSync(path.join(root, d));
    writeFileSync(path.join(root, 'etc/passwd'), 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n');
    const archive = tar.create({ cwd: root, portable: true }, readdirSync(root)) as unknown as NodeJS.ReadableStream;
    const res = (await docker.importImage(archive as never, { repo, tag: '1', changes: ['ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin', `CMD ${JSON.stringify(cmd)}`] } as never)) as unknown as NodeJS.ReadableStream;
    await new Promise((resolve, reject) => docker.modem.followProgress(res, (e: Error | null) => (e ? reject(e) : resolve(undefined))));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** The busybox image, pushed to the registry: what tasks name. */
export async function busyboxImage(docker: Dockerode, REGISTRY: string): Promise<string> {
  const image = `${REGISTRY}/berth-driver-test/busybox:1`;
  await importBusybox(docker, 'berth-driver-test/busybox', ['sh']);
  await docker.getImage(LOCAL_IMAGE).tag({ repo: `${REGISTRY}/berth-driver-test/busybox`, tag: '1' });
  const push = (await docker.getImage(image).push({ authconfig: { serveraddress: REGISTRY } } as never)) as unknown as NodeJS.ReadableStream;
  await new Promise((resolve, reject) => docker.modem.followProgress(push, (e: Error | null) => (e ? reject(e) : resolve(undefined))));
  return image;
}

