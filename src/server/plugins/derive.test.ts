// A plugin that hundreds of nodes report: each node write adjusts the plugin
// row's counts instead of recomputing it over every node, and the row no
// longer lists the node instances (they are read from the node rows). These
// tests hold the result to what a full recompute says after every kind of
// node write, and check that the stored row does not grow with the nodes.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import type { CsiPluginReport, NodeFingerprint } from '../../structs/index.js';
import { testFingerprint } from '../../../test/support/server-rows.js';
import { NodeService } from '../nodes/index.js';
import { rowKey, SqliteStateStore } from '../state/index.js';
import { computePlugins } from './derive.js';
import { PluginService } from './plugin-service.js';

let dir: string;
let store: SqliteStateStore;
let nodes: NodeService;
let plugins: PluginService;

function report(nodeId: string, opts: { healthy?: boolean; caps?: string[]; provider?: string; max?: number } = {}): CsiPluginReport {
  return {
    pluginId: 'shared',
    type: 'csi-node',
    allocId: `a-${nodeId}`,
    healthy: opts.healthy ?? true,
    healthReason: opts.healthy === false ? 'probe failed' : 'healthy',
    provider: opts.provider ?? 'shared.csi',
    version: '1.0.0',
    fingerprint: {
      info: { name: opts.provider ?? 'shared.csi', vendorVersion: '1.0.0' },
      capabilities: { services: [], volumeAccessibilityConstraints: false },
      node: { capabilities: (opts.caps ?? ['STAGE_UNSTAGE_VOLUME']) as never, info: { nodeId: `ext-${nodeId}`, maxVolumesPerNode: opts.max ?? 0 } },
    } as never,
    updatedAt: 0,
  };
}

function fingerprint(nodeId: string, rep?: CsiPluginReport): NodeFingerprint {
  return testFingerprint(nodeId, { csiNodePlugins: rep ? { shared: rep } : {} }) as unknown as NodeFingerprint;
}

/** The stored row, and what a full recompute over every node says it should be, without their indexes. */
function storedAndRecomputed(): { stored: unknown; recomputed: unknown } {
  const snap = store.snapshot();
  const row = snap.get('plugins', rowKey('shared'));
  const { createIndex: _c, modifyIndex: _m, ...stored } = row ?? ({} as Record<string, unknown>);
  return { stored: row ? stored : undefined, recomputed: computePlugins(snap).get('shared') };
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-derive-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  nodes = new NodeService({ store, clock: new ManualClock(1_000_000) });
  plugins = new PluginService({ store });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a plugin reported by many nodes', () => {
  it('keeps a row of constant size, and lists every node instance when read', async () => {
    await nodes.register(fingerprint('n000', report('n000')), { id: 'n000' });
    const size = (): number => JSON.stringify(store.snapshot().get('plugins', rowKey('shared'))).length;
    const first = size();
    for (let i = 1; i < 300; i++) {
      const id = `n${String(i).padStart(3, '0')}`;
      await nodes.register(fingerprint(id, report(id, { healthy: i % 7 !== 0, max: i % 5 })), { id });
    }
    // The counts may gain digits; the row does not list the nodes.
    assert.ok(size() < first + 16, `the row grew from ${first} to ${size()} bytes with 300 nodes`);
    const p = plugins.get('shared')!;
    assert.equal(Object.keys(p.nodes).length, 300);
    assert.deepEqual(Object.keys(p.nodes), [...Object.keys(p.nodes)].sort(), 'listed by node ID');
    assert.equal(p.nodesHealthy, 300 - Math.floor(299 / 7), 'n007, n014, ... reported unhealthy');
    assert.equal(p.nodes['n012']!.externalNodeId, 'ext-n012');
    assert.equal(p.nodes['n012']!.maxVolumes, 2);
    assert.equal(p.nodes['n014']!.healthy, false);
    const { stored, recomputed } = storedAndRecomputed();
    assert.deepEqual(stored, recomputed);
  });

  it('after every kind of node write, the row is what a full recompute says', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `n${String(i).padStart(2, '0')}`);
    const check = (what: string): void => {
      const { stored, recomputed } = storedAndRecomputed();
      assert.deepEqual(stored, recomputed, what);
    };
    for (const id of ids) await nodes.register(fingerprint(id, report(id)), { id });
    check('registered');
    await nodes.heartbeat('n03', fingerprint('n03', report('n03', { healthy: false })));
    check('a node plugin reported unhealthy');
    await nodes.heartbeat('n04', fingerprint('n04', report('n04', { caps: ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS'] })));
    check('a node plugin with one more capability');
    await nodes.heartbeat('n04', fingerprint('n04', report('n04')));
    check('the only node with that capability lost it');
    await nodes.markDown('n05', 'missed heartbeats');
    await nodes.markDown('n03', 'missed heartbeats');
    check('nodes down, one healthy and one not');
    await nodes.heartbeat('n05');
    check('a down node back');
    await nodes.heartbeat('n06', fingerprint('n06'));
    check('a node that stopped running the plugin');
    await nodes.purge('n07');
    check('a node purged');
    await nodes.heartbeat('n08', fingerprint('n08', report('n08', { provider: 'other.csi' })));
    check('a node that runs another provider');
    for (const id of ids.slice(9)) await nodes.heartbeat(id, fingerprint(id));
    for (const id of ['n00', 'n01', 'n02', 'n03', 'n04', 'n05', 'n08']) await nodes.purge(id);
    check('one node left');
    await nodes.heartbeat('n06', fingerprint('n06', report('n06')));
    await nodes.purge('n06');
    assert.equal(plugins.get('shared'), undefined, 'no node runs it: the plugin is gone');
  });
});
