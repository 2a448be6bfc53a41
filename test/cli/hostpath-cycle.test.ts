// A plugin author's first session: `berth plugin hostpath` runs as a real
// child process, and `berth csi --json` drives a volume through its whole life
// (create, attach, stage, publish, use, unpublish, unstage, detach, delete)
// with real bind mounts, checked in /proc/self/mountinfo.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { HOSTPATH_PLUGIN_NAME } from '../../src/csi-plugins/index.js';
import { berth, json, shortTempDir, startBerth, waitForSocket, type BerthProcess, type BerthResult } from './_berth.js';

const NODE_ID = 'cli-test-node';

let dir: string;
let dataDir: string;
let endpoint: string;
let plugin: BerthProcess | undefined;

/** Mount points listed in /proc/self/mountinfo (field 5, octal escapes undone). */
async function mountPoints(): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  return info
    .split('\n')
    .filter(Boolean)
    .map((line) => (line.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8))));
}

async function isMounted(path: string): Promise<boolean> {
  return (await mountPoints()).includes(path);
}

/** Every file named `name` under `root`, found by walking it. */
async function findFiles(root: string, name: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(root, { withFileTypes: true })) {
    const path = join(root, entry.name);
    if (entry.isDirectory()) found.push(...(await findFiles(path, name)));
    else if (entry.isFile() && entry.name === name) found.push(path);
  }
  return found;
}

async function csiJson<T = Record<string, unknown>>(...args: string[]): Promise<T> {
  const result: BerthResult = await berth(['csi', '--endpoint', endpoint, '--json', ...args]);
  assert.equal(result.code, 0, `berth csi ${args.join(' ')} exited ${result.code}:\n${result.stderr}`);
  return json<T>(result);
}

before(async () => {
  dir = await shortTempDir('bhp-');
  dataDir = join(dir, 'data'); // does not exist yet: the plugin command creates it
  endpoint = `unix://${join(dir, 'csi.sock')}`;
  plugin = startBerth(['plugin', 'hostpath', '--endpoint', endpoint, '--node-id', NODE_ID, '--data-dir', dataDir, '--log-level', 'warn']);
  await waitForSocket(join(dir, 'csi.sock'), plugin);
});

after(async () => {
  // Whatever failed above, leave no mount and no process behind.
  const leftovers = (await mountPoints()).filter((p) => dir && p.startsWith(`${dir}/`)).reverse();
  for (const mount of leftovers) await promisify(execFile)('umount', ['-l', mount]).catch(() => undefined);
  if (plugin && plugin.child.exitCode === null && plugin.child.signalCode === null) {
    plugin.child.kill('SIGKILL');
    await plugin.exited.catch(() => undefined);
  }
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('berth plugin hostpath driven by berth csi', () => {
  it('introduces itself', async () => {
    const info = await csiJson<{ name: string; capabilities: { services: string[] } }>('info');
    assert.equal(info.name, HOSTPATH_PLUGIN_NAME);
    assert.ok(info.capabilities.services.includes('CONTROLLER_SERVICE'));
    const node = await csiJson<{ nodeId: string }>('node-info');
    assert.equal(node.nodeId, NODE_ID);
    assert.ok((await stat(dataDir)).isDirectory(), 'the data directory was created');
  });

  it('takes a volume through create, stage, publish, use, unpublish, unstage and delete', async () => {
    const caps = await csiJson<{ controller: { capabilities?: string[] }; node: { capabilities?: string[] } }>('capabilities');
    const attaches = caps.controller.capabilities?.includes('PUBLISH_UNPUBLISH_VOLUME') ?? false;
    const stages = caps.node.capabilities?.includes('STAGE_UNSTAGE_VOLUME') ?? false;

    const volume = await csiJson<{ volumeId: string; capacityBytes: number }>('create-volume', 'cycle-vol', '--size', '16MiB');
    assert.ok(volume.volumeId);
    const id = volume.volumeId;

    const contextFlags: string[] = [];
    if (attaches) {
      const published = await csiJson<{ publishContext: Record<string, string> }>('controller-publish', id, '--node-id', NODE_ID);
      for (const [k, v] of Object.entries(published.publishContext)) contextFlags.push('--publish-context', `${k}=${v}`);
    }

    const staging = join(dir, 'staging', 'cycle-vol');
    if (stages) {
      await csiJson('stage', id, '--staging-path', staging, ...contextFlags);
      assert.ok(await isMounted(staging), 'the staging path is a mount point after stage');
    }

    const target = join(dir, 'pods', 'app', 'data');
    await csiJson('publish', id, '--target-path', target, ...(stages ? ['--staging-path', staging] : []), ...contextFlags);
    assert.ok(await isMounted(target), 'the target path is a mount point after publish');

    await writeFile(join(target, 'hello.txt'), 'written through the target\n');
    const [copy, ...others] = await findFiles(dataDir, 'hello.txt');
    assert.ok(copy, 'the file written through the target lands in the volume under the data directory');
    assert.deepEqual(others, []);
    assert.equal(await readFile(copy, 'utf8'), 'written through the target\n');

    if (caps.node.capabilities?.includes('GET_VOLUME_STATS')) {
      const stats = await csiJson<{ usage: Array<{ unit: string }> }>('stats', id, '--volume-path', target);
      assert.ok(stats.usage.some((u) => u.unit === 'BYTES'));
    }

    await csiJson('unpublish', id, '--target-path', target);
    assert.equal(await isMounted(target), false, 'the target is unmounted after unpublish');
    if (stages) {
      await csiJson('unstage', id, '--staging-path', staging);
      assert.equal(await isMounted(staging), false, 'the staging path is unmounted after unstage');
    }
    assert.equal(await readFile(copy, 'utf8'), 'written through the target\n', 'the data outlives the mounts');

    if (attaches) await csiJson('controller-unpublish', id, '--node-id', NODE_ID);
    const deleted = await csiJson<{ deleted: boolean }>('delete-volume', id);
    assert.equal(deleted.deleted, true);
    assert.deepEqual(await findFiles(dataDir, 'hello.txt'), [], 'the volume is gone after delete-volume');
    const listed = await csiJson<{ entries: unknown[] }>('list-volumes');
    assert.deepEqual(listed.entries, []);
  });

  it('stops serving on SIGTERM and exits 0', async () => {
    assert.ok(plugin);
    plugin.child.kill('SIGTERM');
    const result = await plugin.exited;
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '', 'the plugin writes logs to stderr only');
    const unreachable = await berth(['csi', '--endpoint', endpoint, 'probe']);
    assert.equal(unreachable.code, 3);
  });
});

describe('berth plugin hostpath refuses bad flags', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['no --node-id', ['--endpoint', 'unix:///tmp/x.sock', '--data-dir', '/tmp/x'], /required option '--node-id <id>' not specified/],
    ['no --endpoint', ['--node-id', 'n1', '--data-dir', '/tmp/x'], /--endpoint is required/],
    ['a tcp endpoint', ['--endpoint', 'tcp://127.0.0.1:1', '--node-id', 'n1', '--data-dir', '/tmp/x'], /not a unix socket address/],
    ['an unknown mode', ['--endpoint', 'unix:///tmp/x.sock', '--node-id', 'n1', '--data-dir', '/tmp/x', '--mode', 'both'], /argument 'both' is invalid/],
    ['a malformed --max-volumes', ['--endpoint', 'unix:///tmp/x.sock', '--node-id', 'n1', '--data-dir', '/tmp/x', '--max-volumes', 'lots'], /argument 'lots' is invalid/],
  ];
  for (const [what, args, message] of cases) {
    it(`exits 2 with ${what}`, async () => {
      const result = await berth(['plugin', 'hostpath', ...args]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, message);
    });
  }
});
