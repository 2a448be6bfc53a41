// The TaskConfig an external driver plugin is given, as Nomad's client
// fills it: for a container driver (FSIsolation image) no PATH of the
// agent's (the image's own applies), the allocation's ports in
// Resources.Ports, the group's namespace with the labels CreateNetwork gave
// it, and each mount's propagation. A recording plugin stands in for the
// process at the other end of the wire (the wire itself is tested in
// src/plugins/drivers).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { silentLogger } from '../../lib/index.js';
import { encodeMsgpack, type Capabilities, type DriverPlugin, type StartTaskResult, type TaskConfig as PluginTaskConfig } from '../../plugins/index.js';
import { EXECUTOR_PATH } from '../drivers/index.js';
import { LogMonitor } from '../logmon/index.js';
import { ExternalTaskDriver, type NetworkedTaskConfig } from './external-task-driver.js';

const root = mkdtempSync(path.join(tmpdir(), 'bet-'));
after(() => rmSync(root, { recursive: true, force: true }));

const CAPS: Capabilities = {
  sendSignals: true,
  exec: true,
  fsIsolation: 'image',
  netIsolationModes: ['host', 'group', 'task'],
  mustInitiateNetwork: true,
  mountConfigs: 'all',
  disableLogCollection: false,
  dynamicWorkloadUsers: false,
};

/** Nomad's docker driver as far as StartTask and CreateNetwork go: it records what it was given. */
function recordingPlugin(): { plugin: DriverPlugin; started: PluginTaskConfig[] } {
  const started: PluginTaskConfig[] = [];
  const plugin = {
    async startTask(cfg: PluginTaskConfig): Promise<StartTaskResult> {
      started.push(cfg);
      return { handle: { version: 1, config: cfg, state: 'running', driverState: new Uint8Array() } };
    },
    async createNetwork(allocId: string) {
      return { spec: { mode: 'group' as const, path: `/var/run/docker/netns/${allocId.slice(0, 6)}`, labels: { docker_sandbox_container_id: `pause-${allocId}` } }, created: true };
    },
  } as unknown as DriverPlugin;
  return { plugin, started };
}

function driverOver(plugin: DriverPlugin, fsIsolation: Capabilities['fsIsolation']): ExternalTaskDriver {
  return new ExternalTaskDriver({
    name: 'docker',
    slot: { current: () => plugin, ready: async () => plugin, driverInfo: () => ({ detected: true, healthy: true, healthReason: 'ok', networkModes: ['host', 'none', 'bridge', 'cni/*'] }) },
    capabilities: { ...CAPS, fsIsolation },
    taskConfigSchema: undefined,
    encodeTaskConfig: (_schema, body) => encodeMsgpack(body as never),
    logger: silentLogger(),
    node: { name: 'n1' },
    defaultPath: '/opt/berth/shim:/usr/bin:/bin',
    cgroups: null,
    logmon: new LogMonitor({ socketPath: path.join(root, 'logmon.sock'), script: EXECUTOR_PATH }),
  });
}

function taskConfig(allocId: string, over: Partial<NetworkedTaskConfig> = {}): NetworkedTaskConfig {
  const dir = path.join(root, allocId);
  return {
    id: `${allocId}.web.1`,
    allocId,
    taskName: 'web',
    command: '',
    args: [],
    env: { NOMAD_TASK_DIR: '/local', NOMAD_ALLOC_DIR: '/alloc' },
    taskDir: path.join(dir, 'web', 'local'),
    allocDir: dir,
    secretsDir: path.join(dir, 'web', 'secrets'),
    mounts: [{ source: path.join(dir, 'csi'), destination: '/csi/mounts', readOnly: false, propagation: 'bidirectional' }],
    logs: { disabled: true, dir: path.join(dir, 'alloc', 'logs'), maxFiles: 1, maxFileSizeMb: 1 },
    killTimeoutMs: 1000,
    resources: { cpuMhz: 100, memoryMb: 64 },
    driverConfig: { image: 'busybox:1.35', ports: ['http'] },
    ...over,
  };
}

describe('the TaskConfig an external container driver is given', () => {
  it('carries the ports, the namespace with its labels and the mounts’ propagation, and no PATH of the agent’s', async () => {
    const { plugin, started } = recordingPlugin();
    const driver = driverOver(plugin, 'image');
    const net = await driver.createNetwork('alloc-1', 'alloc-1');
    assert.deepEqual(net, { path: '/var/run/docker/netns/alloc-', labels: { docker_sandbox_container_id: 'pause-alloc-1' } });
    await driver.startTask(
      taskConfig('alloc-1', {
        networkNamespacePath: net.path,
        networkMode: 'bridge',
        networkAddress: '172.26.64.2',
        ports: [{ label: 'http', value: 27544, to: 8080, hostIp: '127.0.0.1' }],
      }),
    );
    const cfg = started[0]!;
    assert.equal(cfg.env['PATH'], undefined, 'the image’s PATH applies');
    assert.deepEqual(cfg.resources?.ports, [{ label: 'http', value: 27544, to: 8080, hostIp: '127.0.0.1' }]);
    assert.deepEqual(
      cfg.networkIsolation,
      { mode: 'group', path: net.path, labels: { docker_sandbox_container_id: 'pause-alloc-1' }, hostsConfig: { hostname: 'pause-alloc-', address: '172.26.64.2' } },
      'the task joins the pause container by its label; /etc/hosts gets the pause container’s hostname and the allocation’s address, as Nomad’s network hook sets them',
    );
    assert.equal(cfg.mounts[0]?.propagationMode, 'bidirectional');
  });

  it('takes the labels the allocation kept when the driver no longer knows the network (an agent restart)', async () => {
    const { plugin, started } = recordingPlugin();
    await driverOver(plugin, 'image').startTask(taskConfig('alloc-2', { networkNamespacePath: '/var/run/docker/netns/x', networkLabels: { docker_sandbox_container_id: 'pause-kept' } }));
    assert.deepEqual(started[0]?.networkIsolation?.labels, { docker_sandbox_container_id: 'pause-kept' });
  });

  it('gives a task of a driver without isolation the agent’s PATH, and no namespace in host mode', async () => {
    const { plugin, started } = recordingPlugin();
    await driverOver(plugin, 'none').startTask(taskConfig('alloc-3'));
    assert.equal(started[0]?.env['PATH'], '/opt/berth/shim:/usr/bin:/bin');
    assert.equal(started[0]?.networkIsolation, undefined);
    assert.deepEqual(started[0]?.resources?.ports, []);
  });
});
