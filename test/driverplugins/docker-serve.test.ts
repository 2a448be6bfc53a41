// Berth's docker driver served as a plugin process (`berth driver serve
// docker`), driven over Nomad's driver protocol as an agent drives it: the
// plugin config (endpoint, allow_privileged) set through SetConfig against
// its hclspec, the fingerprint with docker's attributes, a group network
// made by CreateNetwork (a pause container), a task whose config carries
// Nomad's block shapes (labels, mount) started in it, its pull reported as
// a task event, and DestroyNetwork leaving nothing. Needs the docker rig
// (BERTH_TEST_DOCKER_HOST/REGISTRY) and the build (bin/berth.js).

import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Dockerode from 'dockerode';
import { silentLogger } from '../../src/lib/index.js';
import { encodeConfig, launchDriverPlugin, type DriverPluginClient, type TaskEvent } from '../../src/plugins/index.js';
import type { PluginProcess } from '../../src/plugins/goplugin/index.js';
import { busyboxImage, importBusybox } from '../support/busybox-image.js';
import { BERTH } from '../agent/_agent.js';
import { until } from '../support/runtime-cluster.js';

const HOST = process.env['BERTH_TEST_DOCKER_HOST'];
const REGISTRY = process.env['BERTH_TEST_DOCKER_REGISTRY'];
const skip = HOST && REGISTRY ? undefined : 'no docker rig (BERTH_TEST_DOCKER_HOST/BERTH_TEST_DOCKER_REGISTRY; scripts/run-tests.mjs starts one)';

describe('berth driver serve docker', { skip }, () => {
  const docker = new Dockerode({ socketPath: (HOST ?? '').replace(/^unix:\/\//, '') });
  let dir = '';
  let image = '';
  let plugin: { driver: DriverPluginClient; proc: PluginProcess } | undefined;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'bds-'));
    image = await busyboxImage(docker, REGISTRY ?? '');
    await importBusybox(docker, 'berth-driver-test/pause', ['sleep', '2147483647']);
    const wrapper = path.join(dir, 'docker');
    writeFileSync(wrapper, `#!/bin/sh\nexec '${process.execPath}' '${BERTH}' driver serve docker --log-level warn --state-dir '${path.join(dir, 'st')}'\n`);
    chmodSync(wrapper, 0o755);
    plugin = await launchDriverPlugin({ path: wrapper, logger: silentLogger() }).then((p) => ({ driver: p.driver, proc: p.process }));
  });

  after(async () => {
    await plugin?.proc.shutdown();
    plugin?.driver.close();
    for (const c of await docker.listContainers({ all: true, filters: { label: ['com.hashicorp.nomad.alloc_id=a-serve-1'] } })) await docker.getContainer(c.Id).remove({ force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  it('is configured by the agent, fingerprints docker, makes the group network and runs a task in it', async () => {
    const driver = plugin?.driver as DriverPluginClient;
    const schema = await driver.configSchema();
    await driver.setConfig({ apiVersion: 'v0.1.0', pluginConfig: encodeConfig(schema, { endpoint: HOST, allow_privileged: true, infra_image: 'berth-driver-test/pause:1' }) });
    const fingerprints = driver.fingerprint();
    const first = (await fingerprints[Symbol.asyncIterator]().next()).value;
    assert.equal(first?.health, 'healthy', first?.healthDescription);
    assert.deepEqual(first?.attributes['driver.docker.privileged.enabled'], { bool: true });
    assert.match(first?.attributes['driver.docker.version']?.string ?? '', /^\d+\./);
    const caps = await driver.capabilities();
    assert.equal(caps.fsIsolation, 'image');
    assert.equal(caps.mustInitiateNetwork, true);

    const events: TaskEvent[] = [];
    const stopEvents = new AbortController();
    void (async () => {
      for await (const e of driver.taskEvents({ signal: stopEvents.signal })) events.push(e);
    })().catch(() => undefined);

    const net = await driver.createNetwork('a-serve-1', { hostname: 'served' });
    assert.equal(net.spec.mode, 'group');
    assert.ok(net.spec.path);

    await docker.getImage(image).remove().catch(() => undefined);
    const allocDir = path.join(dir, 'alloc');
    const logs = path.join(allocDir, 'alloc', 'logs');
    for (const d of [logs, path.join(allocDir, 'web', 'local'), path.join(allocDir, 'web', 'secrets')]) mkdirSync(d, { recursive: true });
    writeFileSync(path.join(allocDir, 'web', 'local', 'note'), 'from local');
    const stdoutPath = path.join(logs, 'web.stdout.0');
    const stderrPath = path.join(logs, 'web.stderr.0');
    for (const f of [stdoutPath, stderrPath]) writeFileSync(f, '');
    const config = {
      image,
      command: 'sh',
      args: ['-c', 'echo "$(hostname) $(cat /local/note) $(ls /scratch)"'],
      labels: [{ team: 'storage' }],
      mount: [{ type: 'tmpfs', target: '/scratch' }],
    };
    const started = await driver.startTask({
      id: 'a-serve-1/web/0',
      jobName: 'j',
      jobId: 'j',
      taskGroupName: 'g',
      parentJobId: '',
      name: 'web',
      namespace: 'default',
      nodeName: 'n',
      nodeId: 'n',
      env: { NOMAD_TASK_DIR: '/local' },
      deviceEnv: {},
      devices: [],
      mounts: [],
      user: '',
      allocDir,
      msgpackDriverConfig: encodeConfig(await driver.taskConfigSchema(), config),
      stdoutPath,
      stderrPath,
      allocId: 'a-serve-1',
      networkIsolation: net.spec,
    });
    assert.equal(started.handle.config.id, 'a-serve-1/web/0');
    const exit = await driver.waitTask('a-serve-1/web/0');
    assert.equal(exit.exitCode, 0);
    await until('the output', () => readFileSync(stdoutPath, 'utf8').includes('served') || undefined);
    assert.equal(readFileSync(stdoutPath, 'utf8'), 'served from local \n');
    const [c] = await docker.listContainers({ all: true, filters: { label: ['com.hashicorp.nomad.alloc_id=a-serve-1', 'com.hashicorp.nomad.task_name=web'] } });
    assert.equal(c?.Labels['team'], 'storage');
    await until('the pull event', () => events.some((e) => e.taskId === 'a-serve-1/web/0' && e.message.startsWith('Downloading image')) || undefined);
    stopEvents.abort();

    await driver.destroyTask('a-serve-1/web/0', false);
    await driver.destroyNetwork('a-serve-1', net.spec);
    assert.deepEqual(await docker.listContainers({ all: true, filters: { label: ['com.hashicorp.nomad.alloc_id=a-serve-1'] } }), []);
  });
});
