// Plugin health and task isolation through the allocation runner, by the
// scenarios of docs/csi-rules.md: a plugin whose socket never appears is
// restarted past its health timeout (scenario 20), the CSI manager's health
// timeout restarts the plugin task (scenario 5), an `exec` workload gets its
// CSI volume bound at its destination, and mount flags never reach the state
// file (scenario 16).

import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CsiClient, VolumeCapability } from '../../csi/index.js';
import { eventually, hostpathPluginJob, makeAlloc, makeJob, Node } from '../../../test/support/client-allocrunner.js';

const types = (events: Array<{ type: string }>): string[] => events.map((e) => e.type);

describe('plugin supervisor and isolation through the allocation runner', () => {
  it('a plugin task whose socket never appears is reported and restarted past its health timeout; the agent keeps going', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const job = makeJob({
      id: 'mute-plugin',
      type: 'system',
      groups: [
        {
          name: 'plugin',
          tasks: [{ name: 'plugin', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['600'] }, csiPlugin: { id: 'mute', type: 'node', mountDir: '/csi', healthTimeout: '500ms' } }],
        },
      ],
    });
    const alloc = makeAlloc(job);
    const r = node.runner(alloc, job);
    await r.run();
    const first = node.pidOf(r, 'plugin');
    await eventually('the plugin task is restarted', () => types(r.status().taskStates['plugin']!.events).includes('Restart Signaled'));
    const events = r.status().taskStates['plugin']!.events;
    assert.match(events.find((e) => e.type === 'Plugin Unhealthy')!.message, /Waiting for CSI plugin "mute": its socket .*csi\.sock does not exist yet/);
    assert.match(events.find((e) => e.type === 'Restart Signaled')!.message, /did not become healthy within its health timeout/);
    await eventually('a second run', () => r.status().taskStates['plugin']!.state === 'running' && r.taskIds()['plugin']?.endsWith('.2') === true);
    assert.notEqual(node.pidOf(r, 'plugin'), first);
    assert.equal(node.registry.registrations().length, 0, 'never registered');
    assert.equal(r.status().clientStatus, 'running');
  });

  it("the CSI manager's health timeout restarts the plugin task, which registers again", async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const alloc = makeAlloc(hostpathPluginJob(path.join(node.dir, 'hp')));
    const r = node.runner(alloc, hostpathPluginJob(path.join(node.dir, 'hp')));
    await r.run();
    await eventually('registered', () => node.registry.serving('csi-node', 'hostpath')?.allocId === alloc.id);
    const pid = node.pidOf(r, 'plugin');
    // As the CSI manager's onHealthTimeout calls it (wired in the harness as in the agent).
    assert.equal(r.pluginHealthTimeout(node.registry.serving('csi-node', 'hostpath')!, 'csi-node', 'probe failed: UNAVAILABLE'), true);
    assert.equal(r.pluginHealthTimeout({ name: 'other' }, 'csi-node', 'x'), false);
    await eventually('restarted and registered again', () => node.registry.serving('csi-node', 'hostpath') !== undefined && node.pidOf(r, 'plugin') !== pid, 30_000);
    const trail = types(r.status().taskStates['plugin']!.events);
    const at = trail.indexOf('Restart Signaled');
    assert.ok(at > 0);
    assert.deepEqual(
      trail.slice(at).filter((x) => ['Restart Signaled', 'Terminated', 'Plugin Deregistered', 'Restarting', 'Started', 'Plugin Registered'].includes(x)),
      ['Restart Signaled', 'Plugin Deregistered', 'Terminated', 'Restarting', 'Started', 'Plugin Registered'],
    );
    assert.equal(r.status().taskStates['plugin']!.restarts, 1);
  });

  it('an exec workload gets its CSI volume bound at its destination inside the chroot; mount flags never reach the state file', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const pluginJob = hostpathPluginJob(path.join(node.dir, 'hp'));
    const p = node.runner(makeAlloc(pluginJob), pluginJob);
    await p.run();
    await eventually('mountable', () => {
      try {
        node.csiManager.volumeManagerFor('hostpath');
        return true;
      } catch {
        return false;
      }
    });
    const client = new CsiClient({ endpoint: `unix://${node.registry.serving('csi-controller', 'hostpath')!.socketPath}` });
    const created = await client.createVolume({ name: 'vol', volumeCapabilities: [VolumeCapability.mount('single-node-writer')] });
    await client.close();
    node.claimer.volumes.set('vol', { id: 'vol', externalId: created.volumeId, pluginId: 'hostpath', namespace: 'default', context: created.volumeContext, accessMode: 'single-node-writer', attachmentMode: 'file-system' });

    const secretFlag = 'password=hunter2-do-not-store';
    const job = makeJob({
      id: 'exec-writer',
      type: 'batch',
      groups: [
        {
          name: 'g',
          volumes: { data: { type: 'csi', source: 'vol', mountOptions: { mountFlags: [secretFlag] } } },
          tasks: [
            {
              name: 'main',
              driver: 'exec',
              config: { command: '/bin/sh', args: ['-c', 'echo "from inside the chroot" > /data/inside.txt && ls / > /local/root-listing'] },
              volumeMounts: [{ volume: 'data', destination: '/data' }],
            },
          ],
        },
      ],
    });
    const alloc = makeAlloc(job, { csiVolumes: [{ volumeId: 'vol', pluginId: 'hostpath', readOnly: false }] });
    const r = node.runner(alloc, job);
    await r.run();
    await eventually('the exec workload ends', () => ['complete', 'failed'].includes(node.statusOf(alloc.id)?.clientStatus ?? ''));
    assert.equal(node.statusOf(alloc.id)!.clientStatus, 'complete', JSON.stringify(node.statusOf(alloc.id)!.taskStates['main']!.events.slice(-3)));
    assert.ok(readFileSync(path.join(r.allocDir.task('main').localDir, 'root-listing'), 'utf8').split('\n').includes('data'));
    // The file landed in the volume: find it under the plugin's data dir.
    const found = (function walk(dir: string): string | undefined {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p2 = path.join(dir, e.name);
        if (e.isFile() && e.name === 'inside.txt') return p2;
        if (e.isDirectory()) {
          const f = walk(p2);
          if (f) return f;
        }
      }
      return undefined;
    })(path.join(node.dir, 'hp'));
    assert.ok(found, 'the file is in the hostpath volume');
    assert.equal(readFileSync(found, 'utf8').trim(), 'from inside the chroot');
    for (const file of readdirSync(path.dirname(node.statePath))) {
      assert.equal(readFileSync(path.join(path.dirname(node.statePath), file)).includes('hunter2'), false, `${file} holds no mount flag`);
    }
  });
});
