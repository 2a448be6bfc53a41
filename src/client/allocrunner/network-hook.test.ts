// A driver whose capabilities say MustInitiateNetwork makes the group's
// network namespace itself (Nomad's CreateNetwork): the network hook asks
// it instead of the agent's network manager, the task runs in that
// namespace (for `bridge`, attached by the agent with the real CNI plugins),
// and DestroyNetwork removes it when the allocation stops (after CNI DEL). The driver is Berth's raw_exec seen
// through the driver plugin protocol's types (BuiltinDriverPlugin) with a
// real `ip netns` namespace of its own.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { silentLogger } from '../../lib/index.js';
import { encodeMsgpack, decodeMsgpack, type Capabilities, type CreateNetworkResult, type NetworkIsolationSpec, type StartTaskResult, type TaskConfig as PluginTaskConfig } from '../../plugins/index.js';
import { BuiltinDriverPlugin, ExternalTaskDriver } from '../driverplugins/index.js';
import { EXECUTOR_PATH, type TaskDriver } from '../drivers/index.js';
import { NetworkManager } from '../network/index.js';
import { LogMonitor } from '../logmon/index.js';
import { eventually, makeAlloc, makeJob, Node } from '../../../test/support/client-allocrunner.js';
import type { AllocHookContext } from './alloc-hook.js';
import type { AllocRunnerRecord } from './alloc-records.js';
import { NetworkHook } from './network-hook.js';

/** raw_exec as a plugin that must initiate the group's network, with a real namespace. */
class NetworkInitiatingPlugin extends BuiltinDriverPlugin {
  readonly calls: string[] = [];
  /** The TaskConfigs StartTask was given, as Nomad's docker driver reads them. */
  readonly started: PluginTaskConfig[] = [];
  override async capabilities(): Promise<Capabilities> {
    return { ...(await super.capabilities()), mustInitiateNetwork: true, netIsolationModes: ['host', 'group'] };
  }
  // Labelled as Nomad's docker driver labels its pause container's namespace: tasks join it by that label.
  override async createNetwork(allocId: string): Promise<CreateNetworkResult> {
    const name = `mi-${allocId.slice(0, 8)}`;
    execFileSync('ip', ['netns', 'add', name]);
    this.calls.push(`create ${allocId}`);
    return { spec: { mode: 'group', path: `/var/run/netns/${name}`, labels: { docker_sandbox_container_id: `pause-${name}` } }, created: true };
  }
  override async destroyNetwork(allocId: string, spec: NetworkIsolationSpec | undefined): Promise<void> {
    execFileSync('ip', ['netns', 'del', path.basename(spec?.path ?? '')]);
    this.calls.push(`destroy ${allocId} ${spec?.labels['docker_sandbox_container_id'] ?? '(no label)'}`);
  }
  override async startTask(cfg: PluginTaskConfig): Promise<StartTaskResult> {
    this.started.push(cfg);
    return super.startTask(cfg);
  }
}

const tag = (process.pid % 100000).toString(36);
const BRIDGE = `bnh${tag}`;
const NET = `10.${16 + Math.floor(Math.random() * 200)}.${16 + Math.floor(Math.random() * 200)}`;

/** Runs a one-task group in `mode` on a driver that must initiate the network; returns what the task saw and the plugin's calls. */
async function runOnInitiatingDriver(mode: 'none' | 'bridge'): Promise<void> {
  const node = new Node({ network: new NetworkManager({ prefix: 'bnh-', bridge: { name: BRIDGE, subnet: `${NET}.0/24` } }) });
  try {
    await node.start();
    const plugin = new NetworkInitiatingPlugin(node.drivers.get('raw_exec') as TaskDriver, { decodeTaskConfig: decodeMsgpack });
    const driver = new ExternalTaskDriver({
      name: 'netinit',
      slot: { current: () => plugin, ready: async () => plugin, driverInfo: () => ({ detected: true, healthy: true, healthReason: 'ok', networkModes: ['none', 'bridge', 'cni/*'] }) },
      capabilities: await plugin.capabilities(),
      taskConfigSchema: undefined,
      encodeTaskConfig: (_schema, body) => encodeMsgpack(body as never),
      logger: silentLogger(),
      node: { name: 'n1' },
      logmon: new LogMonitor({ socketPath: path.join(node.dir, 'logmon.sock'), script: EXECUTOR_PATH }),
    });
    node.drivers.set('netinit', driver as unknown as TaskDriver);
    const script = 'readlink /proc/self/ns/net > "$BERTH_TASK_DIR/ns"; ip -o -4 addr show > "$BERTH_TASK_DIR/addr.tmp"; mv "$BERTH_TASK_DIR/addr.tmp" "$BERTH_TASK_DIR/addr"; exec sleep 600';
    const job = makeJob({
      id: 'netinit',
      groups: [{ name: 'g', network: { mode }, tasks: [{ name: 'main', driver: 'netinit', config: { command: '/bin/sh', args: ['-c', script] } }] }],
    });
    const alloc = makeAlloc(job, { ports: [{ label: 'http', value: 24001, to: 8080, hostIp: '127.0.0.1' }] });
    const r = node.runner(alloc, job);
    await r.run();
    assert.deepEqual(plugin.calls, [`create ${alloc.id}`], 'the driver made the namespace, not the agent');
    const nsPath = `/var/run/netns/mi-${alloc.id.slice(0, 8)}`;
    const local = r.allocDir.task('main').localDir;
    const seen = await eventually('the task to say which namespace it runs in', () => {
      const f = path.join(local, 'ns');
      return existsSync(f) && readFileSync(f, 'utf8').trim() ? readFileSync(f, 'utf8').trim() : undefined;
    });
    assert.equal(seen, `net:[${statSync(nsPath).ino}]`, 'the task runs in the driver’s namespace');
    const started = plugin.started[0];
    const sandbox = `pause-mi-${alloc.id.slice(0, 8)}`;
    const address = r.status().network?.address;
    assert.deepEqual(
      started?.networkIsolation,
      { mode: 'group', path: nsPath, labels: { docker_sandbox_container_id: sandbox }, ...(address ? { hostsConfig: { hostname: sandbox.slice(0, 12), address } } : {}) },
      'StartTask names the namespace with the labels CreateNetwork gave it (and, attached to the bridge, its hosts entry)',
    );
    assert.deepEqual(started?.resources?.ports, [{ label: 'http', value: 24001, to: 8080, hostIp: '127.0.0.1' }], 'and carries the allocation’s ports, as Nomad’s Resources.Ports');
    const network = r.status().network;
    if (mode === 'bridge') {
      assert.equal(network?.mode, 'bridge');
      assert.ok(network?.address?.startsWith(`${NET}.`), `the agent attached the driver's namespace to the bridge (${network?.address})`);
      const addrs = await eventually('the task to list its addresses', () => (existsSync(path.join(local, 'addr')) ? readFileSync(path.join(local, 'addr'), 'utf8') : undefined));
      assert.match(addrs, new RegExp(`eth0\\s+inet ${(network.address ?? '').replace(/\./g, '\\.')}/24`), 'the task sees that address on eth0');
    } else {
      assert.deepEqual(network, { mode: 'none' });
    }
    r.update({ ...alloc, desiredStatus: 'stop' });
    await eventually('DestroyNetwork once the allocation stopped', () => plugin.calls.length === 2);
    assert.deepEqual(plugin.calls, [`create ${alloc.id}`, `destroy ${alloc.id} pause-mi-${alloc.id.slice(0, 8)}`], 'DestroyNetwork gets the labels back');
    assert.equal(existsSync(nsPath), false, 'DestroyNetwork removed it');
    if (mode === 'bridge') {
      const left = execFileSync('iptables-save', { encoding: 'utf8' }).split('\n').filter((l) => l.includes(alloc.id) || l.includes(`${NET}.`));
      assert.deepEqual(left, [], 'CNI DEL ran before DestroyNetwork');
      assert.equal(existsSync(`/var/lib/cni/networks/${BRIDGE}`), false, 'the lease is released');
    }
    await r.destroy();
  } finally {
    await node.cleanup();
  }
}

describe('the network hook and MustInitiateNetwork', () => {
  it('a driver that must initiate the network makes the group’s namespace; the task runs in it; it is removed when the allocation stops', async () => {
    await runOnInitiatingDriver('none');
  });

  it('in bridge mode the agent attaches the driver’s namespace with CNI, and detaches it before DestroyNetwork', async () => {
    await runOnInitiatingDriver('bridge');
  });

  it('a driver’s namespace written down but not attached (the agent died in between) is attached by the next prerun, with its address recorded', async () => {
    const manager = new NetworkManager({ prefix: 'bnh-', bridge: { name: BRIDGE, subnet: `${NET}.0/24` } });
    const job = makeJob({ id: 'half', groups: [{ name: 'g', network: { mode: 'bridge' }, tasks: [{ name: 'main', driver: 'netinit', config: {} }] }] });
    const alloc = makeAlloc(job);
    const name = `mi-${alloc.id.slice(0, 8)}`;
    execFileSync('ip', ['netns', 'add', name]);
    // What the first agent saved before it died: the driver's namespace, not yet attached.
    const record = { network: { path: `/var/run/netns/${name}`, driver: 'netinit', mode: 'bridge' } } as unknown as AllocRunnerRecord;
    const ctx = { alloc, job, group: job.groups[0], signal: new AbortController().signal, logger: silentLogger(), record, save: () => undefined, event: () => undefined, volumes: new Map() } as unknown as AllocHookContext;
    const hook = new NetworkHook(manager, new Map());
    try {
      await hook.prerun(ctx);
      const address = record.network?.address ?? '';
      assert.ok(address.startsWith(`${NET}.`), `the address is recorded (${JSON.stringify(record.network)})`);
      const inside = execFileSync('ip', ['netns', 'exec', name, 'ip', '-o', '-4', 'addr', 'show'], { encoding: 'utf8' });
      assert.match(inside, new RegExp(`eth0\\s+inet ${address.replace(/\./g, '\\.')}/24`), 'the namespace is attached to the bridge');
      await hook.prerun(ctx);
      assert.equal(record.network?.address, address, 'a recorded attachment is kept as it is');
    } finally {
      await manager.destroy(alloc.id).catch(() => undefined);
      execFileSync('ip', ['netns', 'del', name]);
    }
  });
});
