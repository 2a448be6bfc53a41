// What the plugin supervisor gives a CSI plugin task before it starts, by
// the isolation of its driver: a container (docker, `fsIsolation: image`)
// gets the plugin's socket directory at `mount_dir`, the mount root with
// bidirectional propagation, the host's /dev for node plugins and
// CSI_ENDPOINT as it sees it; a raw_exec task gets the host paths. Real
// binds (the mount root is made a shared mount), undone after.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { silentLogger, systemClock } from '../../lib/index.js';
import { PluginRegistry } from '../dynamicplugins/index.js';
import { SqliteClientStateStore } from '../state/index.js';
import { makeAlloc, makeJob } from '../../../test/support/client-allocrunner.js';
import { TaskEnvBuilder, taskEnvDirs } from '../taskenv/index.js';
import type { RunnerDriver, TaskMount } from './driver-port.js';
import { PluginSupervisorHook } from './plugin-supervisor-hook.js';

const root = mkdtempSync(path.join(tmpdir(), 'bps-'));
const store = SqliteClientStateStore.open(path.join(root, 'client.db'));
const registry = new PluginRegistry({ store });
after(() => {
  registry.close();
  store.close();
  for (const m of spawnSync('findmnt', ['-rn', '-o', 'TARGET'], { encoding: 'utf8' }).stdout.split('\n').filter((t) => t.startsWith(root)).reverse()) spawnSync('umount', [m]);
  rmSync(root, { recursive: true, force: true });
});

const driver = (fsIsolation: 'none' | 'chroot' | 'image'): RunnerDriver => ({
  name: fsIsolation === 'image' ? 'docker' : 'raw_exec',
  capabilities: { fsIsolation, networkModes: ['host'], mountConfigs: 'any' },
  startTask: async () => ({}),
  recoverTask: async () => undefined,
  waitTask: async () => ({ exitCode: 0, signal: null }),
  stopTask: async () => undefined,
  destroyTask: async () => undefined,
});

/** The mounts and env prestart gives a plugin task of a driver with `fsIsolation`. */
async function prestart(fsIsolation: 'none' | 'chroot' | 'image', csiPlugin: { id: string; type: 'controller' | 'node' | 'monolith'; mountDir?: string; stagePublishBaseDir?: string }): Promise<{ hook: PluginSupervisorHook; mounts: TaskMount[]; env: Record<string, string> }> {
  const job = makeJob({
    id: 'plugin',
    groups: [{ name: 'nodes', tasks: [{ name: 'plugin', driver: 'docker', config: { image: 'hostpath:1' }, csiPlugin }] }],
  });
  const task = job.groups[0]!.tasks[0]!;
  const alloc = makeAlloc(job);
  const hook = new PluginSupervisorHook({
    alloc,
    task: task as typeof task & { csiPlugin: NonNullable<(typeof task)['csiPlugin']> },
    driver: driver(fsIsolation),
    registry,
    pluginDirRoot: path.join(root, 'p'),
    clock: systemClock,
    logger: silentLogger(),
    backoff: { maxAttempts: Infinity, initialDelayMs: 10, maxDelayMs: 10, multiplier: 1, jitter: 0 },
  });
  const td = { sharedDir: '/a/alloc', localDir: '/a/t/local', secretsDir: '/a/t/secrets' };
  const taskEnv = new TaskEnvBuilder({ alloc, job, group: { name: 'nodes' }, task, node: { id: 'n1', name: 'n1', datacenter: 'dc1', attributes: {}, meta: {} }, ...taskEnvDirs(td, fsIsolation) }).build();
  const req = { env: {}, mounts: [] as TaskMount[], taskEnv };
  await hook.prestart(req);
  return { hook, ...req };
}

describe('the plugin supervisor gives a plugin task its socket and mount root by its driver’s isolation', () => {
  it('a node plugin in a container: /csi with its socket, /csi/mounts shared both ways, /dev, CSI_ENDPOINT inside', async () => {
    const { hook, mounts, env } = await prestart('image', { id: 'hostpath', type: 'node' });
    assert.equal(env['CSI_ENDPOINT'], 'unix:///csi/csi.sock', 'the endpoint as the container sees it');
    assert.deepEqual(mounts, [
      { source: path.dirname(hook.socketPath), destination: '/csi', readOnly: false, propagation: 'private' },
      { source: hook.mountRoot, destination: '/csi/mounts', readOnly: false, propagation: 'bidirectional' },
      { source: '/dev', destination: '/dev', readOnly: false, propagation: 'private' },
    ]);
    assert.equal(hook.pluginMountRoot, '/csi/mounts', 'staging and publish paths are told to the plugin under its own view of the mount root');
    const shared = spawnSync('findmnt', ['-rn', '-o', 'PROPAGATION', hook.mountRoot], { encoding: 'utf8' }).stdout.trim();
    assert.equal(shared, 'shared', 'the mount root is a shared mount, so what the plugin mounts in its container shows on the host');
  });

  it('a controller plugin in a container with its own mount_dir and stage_publish_base_dir: no /dev', async () => {
    const { mounts, env, hook } = await prestart('image', { id: 'ctl', type: 'controller', mountDir: '/plugin', stagePublishBaseDir: '/var/lib/stage' });
    assert.equal(env['CSI_ENDPOINT'], 'unix:///plugin/csi.sock');
    assert.deepEqual(mounts.map((m) => `${m.destination} ${m.propagation}`), ['/plugin private', '/var/lib/stage bidirectional']);
    assert.equal(hook.pluginMountRoot, '/var/lib/stage');
  });

  it('a plugin run by raw_exec (no isolation) gets no binds and the host socket path', async () => {
    const { hook, mounts, env } = await prestart('none', { id: 'raw', type: 'monolith' });
    assert.deepEqual(mounts, []);
    assert.equal(env['CSI_ENDPOINT'], `unix://${hook.socketPath}`);
    assert.equal(hook.pluginMountRoot, hook.mountRoot);
  });
});
