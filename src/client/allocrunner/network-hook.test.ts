// A driver whose capabilities say MustInitiateNetwork makes the group's
// network namespace itself (Nomad's CreateNetwork), for the network modes
// Berth has (`none`): the network hook asks it instead of the agent's
// network manager, the task runs in that namespace, and DestroyNetwork
// removes it when the allocation stops. The driver is Berth's raw_exec seen
// through the driver plugin protocol's types (BuiltinDriverPlugin) with a
// real `ip netns` namespace of its own.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { silentLogger } from '../../lib/index.js';
import { encodeMsgpack, decodeMsgpack, type Capabilities, type CreateNetworkResult, type NetworkIsolationSpec } from '../../plugins/index.js';
import { BuiltinDriverPlugin, ExternalTaskDriver } from '../driverplugins/index.js';
import { EXECUTOR_PATH, type TaskDriver } from '../drivers/index.js';
import { LogMonitor } from '../logmon/index.js';
import { eventually, makeAlloc, makeJob, Node } from '../../../test/support/client-allocrunner.js';

/** raw_exec as a plugin that must initiate the group's network, with a real namespace. */
class NetworkInitiatingPlugin extends BuiltinDriverPlugin {
  readonly calls: string[] = [];
  override async capabilities(): Promise<Capabilities> {
    return { ...(await super.capabilities()), mustInitiateNetwork: true, netIsolationModes: ['host', 'group'] };
  }
  override async createNetwork(allocId: string): Promise<CreateNetworkResult> {
    const name = `mi-${allocId.slice(0, 8)}`;
    execFileSync('ip', ['netns', 'add', name]);
    this.calls.push(`create ${allocId}`);
    return { spec: { mode: 'group', path: `/var/run/netns/${name}`, labels: {} }, created: true };
  }
  override async destroyNetwork(allocId: string, spec: NetworkIsolationSpec | undefined): Promise<void> {
    execFileSync('ip', ['netns', 'del', path.basename(spec?.path ?? '')]);
    this.calls.push(`destroy ${allocId}`);
  }
}

describe('the network hook and MustInitiateNetwork', () => {
  it('a driver that must initiate the network makes the group’s namespace; the task runs in it; it is removed when the allocation stops', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const plugin = new NetworkInitiatingPlugin(node.drivers.get('raw_exec') as TaskDriver, { decodeTaskConfig: decodeMsgpack });
    const driver = new ExternalTaskDriver({
      name: 'netinit',
      slot: { current: () => plugin, ready: async () => plugin, driverInfo: () => ({ detected: true, healthy: true, healthReason: 'ok', networkModes: ['none'] }) },
      capabilities: await plugin.capabilities(),
      taskConfigSchema: undefined,
      encodeTaskConfig: (_schema, body) => encodeMsgpack(body as never),
      logger: silentLogger(),
      node: { name: 'n1' },
      logmon: new LogMonitor({ socketPath: path.join(node.dir, 'logmon.sock'), script: EXECUTOR_PATH }),
    });
    node.drivers.set('netinit', driver as unknown as TaskDriver);
    const job = makeJob({
      id: 'netinit',
      groups: [
        {
          name: 'g',
          network: { mode: 'none' },
          tasks: [{ name: 'main', driver: 'netinit', config: { command: '/bin/sh', args: ['-c', 'readlink /proc/self/ns/net > "$BERTH_TASK_DIR/ns"; exec sleep 600'] } }],
        },
      ],
    });
    const alloc = makeAlloc(job);
    const r = node.runner(alloc, job);
    await r.run();
    assert.deepEqual(plugin.calls, [`create ${alloc.id}`], 'the driver made the namespace, not the agent');
    const nsPath = `/var/run/netns/mi-${alloc.id.slice(0, 8)}`;
    const seen = await eventually('the task to say which namespace it runs in', () => {
      const f = path.join(r.allocDir.task('main').localDir, 'ns');
      return existsSync(f) && readFileSync(f, 'utf8').trim() ? readFileSync(f, 'utf8').trim() : undefined;
    });
    assert.equal(seen, `net:[${statSync(nsPath).ino}]`, 'the task runs in the driver’s namespace');
    r.update({ ...alloc, desiredStatus: 'stop' });
    await eventually('DestroyNetwork once the allocation stopped', () => plugin.calls.length === 2);
    assert.deepEqual(plugin.calls, [`create ${alloc.id}`, `destroy ${alloc.id}`]);
    assert.equal(existsSync(nsPath), false, 'DestroyNetwork removed it');
    await r.destroy();
  });
});
