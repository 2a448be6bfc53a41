// The CSI manager with the real hostpath plugin as a real child process
// (`berth plugin hostpath`), real bind mounts, and the real volume manager.

import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { CsiClient, VolumeCapability } from '../../csi/index.js';
import { systemClock } from '../../lib/index.js';
import type { CsiPluginReport, NodeEvent } from '../../structs/index.js';
import { PluginRegistry } from '../dynamicplugins/index.js';
import { SqliteClientStateStore } from '../state/index.js';
import type { VolumeUsage } from '../volumes/index.js';
import { CsiManager } from './index.js';
import { eventually } from '../../../test/support/eventually.js';

const BERTH = fileURLToPath(new URL('../../../bin/berth.js', import.meta.url));
const SHARED: VolumeUsage = { readOnly: false, attachmentMode: 'file-system', accessMode: 'multi-node-multi-writer' };

function mountPointsUnder(root: string): string[] {
  const real = realpathSync(root);
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter((m) => m === real || m.startsWith(real + '/'));
}

function unmountAllUnder(root: string): void {
  for (let i = 0; i < 64; i++) {
    const left = mountPointsUnder(root).sort((a, b) => b.length - a.length);
    if (!left[0]) return;
    try {
      execFileSync('umount', ['-l', left[0]], { stdio: 'ignore' });
    } catch {
      // Gone meanwhile; the next round sees.
    }
  }
}

function startHostpath(socketPath: string, dataDir: string): { child: ChildProcess; exited: Promise<void> } {
  const child = spawn(
    process.execPath,
    [BERTH, 'plugin', 'hostpath', '--endpoint', `unix://${socketPath}`, '--node-id', 'node-1', '--data-dir', dataDir, '--log-level', 'silent'],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited };
}

describe('CsiManager with the hostpath plugin as a child process', () => {
  it('mounts through volumeManagerFor for two allocations, survives a plugin restart with its mounts untouched (scenario 2)', async (t) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bch-'));
    const socketPath = path.join(dir, 'alloc-p1', 'csi.sock');
    const dataDir = path.join(dir, 'hostpath-data');
    const store = SqliteClientStateStore.open(path.join(dir, 'state', 'client.db'));
    const registry = new PluginRegistry({ store });
    const reports: CsiPluginReport[] = [];
    const events: NodeEvent[] = [];
    const manager = new CsiManager({
      registry,
      store,
      updateNodePlugin: (_type, _id, report) => report && reports.push(report),
      emitNodeEvent: (e) => events.push(e),
      clock: systemClock,
      probeIntervalMs: 200,
      healthTimeoutMs: 10_000,
      retryBackoff: { maxAttempts: Infinity, initialDelayMs: 50, maxDelayMs: 200, multiplier: 2, jitter: 0 },
    });
    let plugin = startHostpath(socketPath, dataDir);
    const controller = new CsiClient({ endpoint: `unix://${socketPath}` });
    t.after(async () => {
      await manager.stop();
      await controller.close();
      plugin.child.kill('SIGKILL');
      await plugin.exited;
      registry.close();
      store.close();
      unmountAllUnder(dir);
      rmSync(dir, { recursive: true, force: true });
    });

    // The plugin task was just started; its allocation registers it right away.
    registry.register({
      type: 'csi-node',
      name: 'hostpath',
      version: '0.1.0',
      socketPath,
      allocId: 'p1',
      options: { mountRoot: path.join(dir, 'csi', 'node', 'hostpath') },
    });
    await manager.start();
    const instance = await manager.managerForPlugin('hostpath', { signal: AbortSignal.timeout(20_000) });
    assert.equal(instance.fingerprint?.info.name, 'hostpath.csi.berth.dev');
    assert.equal(instance.fingerprint?.node?.info.nodeId, 'node-1');
    await eventually('the plugin is mountable', () => {
      try {
        manager.volumeManagerFor('hostpath');
        return true;
      } catch {
        return false;
      }
    });
    const mounter = manager.volumeManagerFor('hostpath');

    const created = await controller.createVolume({ name: 'shared', volumeCapabilities: [VolumeCapability.mount('multi-node-multi-writer')] });
    const volume = { id: 'shared', externalId: created.volumeId, volumeContext: created.volumeContext };
    const a = await mounter.mountVolume(volume, 'alloc-a', SHARED);
    const b = await mounter.mountVolume(volume, 'alloc-b', SHARED);
    writeFileSync(path.join(a.source, 'hello.txt'), 'written through alloc-a');
    assert.equal(readFileSync(path.join(b.source, 'hello.txt'), 'utf8'), 'written through alloc-a');
    const mountedBefore = mountPointsUnder(dir).sort();
    assert.ok(mountedBefore.includes(realpathSync(a.source)) && mountedBefore.includes(realpathSync(b.source)));

    // The plugin process dies and its task is restarted: a new process on the same socket.
    const reportsBefore = reports.length;
    plugin.child.kill('SIGKILL');
    await plugin.exited;
    await eventually('the dead plugin is reported unhealthy', () => reports.slice(reportsBefore).some((r) => !r.healthy));
    plugin = startHostpath(socketPath, dataDir);
    await eventually('the restarted plugin is healthy again', () => reports.at(-1)?.healthy === true);
    const afterKill = events.map((e) => e.message).slice(events.findIndex((e) => /is unhealthy/.test(e.message)));
    assert.match(afterKill[0] ?? '', /^CSI csi-node plugin "hostpath" is unhealthy: (probe failed|waiting for the plugin socket)/);
    assert.equal(afterKill.at(-1), 'CSI csi-node plugin "hostpath" is healthy');

    // Existing mounts were untouched: the same mount points, the data still there, the same volume manager.
    assert.deepEqual(mountPointsUnder(dir).sort(), mountedBefore);
    assert.equal(readFileSync(path.join(b.source, 'hello.txt'), 'utf8'), 'written through alloc-a');
    assert.equal(manager.volumeManagerFor('hostpath'), mounter);

    // And the restarted plugin tears down through the same volume manager.
    await mounter.unmountVolume(volume, 'alloc-a', SHARED);
    await mounter.unmountVolume(volume, 'alloc-b', SHARED);
    assert.deepEqual(mountPointsUnder(dir), []);
  });
});
