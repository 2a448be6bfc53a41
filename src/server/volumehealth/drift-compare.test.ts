// Each kind of difference the volume doctor reports, from books and answers
// written by hand into a real state store: what it says, the repair it names,
// whether --fix may do it, and what it must not call drift (a claim whose
// allocation runs, a release in progress, a publication a claim stands behind).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ListedVolume } from '../../csi/index.js';
import type { NodeMountInventory } from '../../structs/index.js';
import { SqliteStateStore } from '../state/index.js';
import { testAllocation, testClaim, testPlugin, testVolume } from '../../../test/support/server-rows.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { compareBooks } from './drift-compare.js';

const listed = (ext: string, publishedNodeIds?: string[]): ListedVolume => ({
  volume: { volumeId: ext, capacityBytes: 0, volumeContext: {}, accessibleTopology: [] },
  ...(publishedNodeIds ? { publishedNodeIds } : {}),
});
const empty: NodeMountInventory = { records: [], strayMounts: [] };

describe('compareBooks', () => {
  let dir: string;
  let store: SqliteStateStore;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'bdc-'));
    store = SqliteStateStore.open(path.join(dir, 'state.db'));
    await store.write((txn) => {
      txn.put('plugins', testPlugin({ controller: true, extra: { controllerCapabilities: ['PUBLISH_UNPUBLISH_VOLUME', 'LIST_VOLUMES', 'LIST_VOLUMES_PUBLISHED_NODES'] } }));
      // The plugin row lists no node instances: they are read from the nodes (ext-n1, ext-n2).
      for (const n of ['n1', 'n2']) txn.put('nodes', testNode(n, { plugin: { id: 'fake' } }));
      txn.put('volumes', testVolume());
      txn.put('volumes', testVolume('single-node-writer', 'file-system', { id: 'logs', name: 'logs', externalId: 'ext-logs' }));
      txn.put('allocations', testAllocation('live', 'n1'));
      txn.put('allocations', testAllocation('done', 'n2', { clientStatus: 'complete' }));
      txn.put('claims', testClaim('live', 'n1', { controllerPublish: 'published' }));
      txn.put('claims', testClaim('done', 'n2'));
      txn.put('claims', testClaim('ghost', 'n2', { volumeId: 'logs', externalVolumeId: 'ext-logs', state: 'node-detached', releaseAttempts: 3, lastError: 'array busy' }));
    });
  });
  after(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('agrees when the books and the answers match', () => {
    const snap = store.snapshot();
    const findings = compareBooks({
      snap,
      listed: new Map([['fake', [listed('ext-data', ['ext-n1']), listed('ext-logs')]]]),
      inventories: new Map([['n1', empty]]),
      // Both finished allocations' releases are running for the first time... except the ghost, which already failed.
      releasing: () => true,
    });
    assert.deepEqual(findings.map((f) => [f.kind, f.allocId]), [['claim-without-allocation', 'ghost']]);
  });

  it('a claim whose allocation finished or vanished, naming the stuck step and the detach that repairs it', () => {
    const findings = compareBooks({ snap: store.snapshot(), listed: new Map(), inventories: new Map() }).filter((f) => f.kind === 'claim-without-allocation');
    assert.deepEqual(
      findings.map((f) => [f.volumeId, f.allocId, f.nodeId, f.repair, f.fixable]),
      [
        ['data', 'done', 'n2', 'berth volume detach data n2', true],
        ['logs', 'ghost', 'n2', 'berth volume detach logs n2', true],
      ],
    );
    assert.equal(findings[0]!.message, 'volume data is still claimed on node n2, but allocation done is complete');
    assert.equal(findings[1]!.message, 'volume logs is still claimed on node n2, but allocation ghost no longer exists; its release is stuck at node-detached (array busy)');
  });

  it('a publication the controller reports where no claim stands, and a plugin volume nobody registered', () => {
    const findings = compareBooks({
      snap: store.snapshot(),
      // n1 holds a claim of data (fine); n2 holds one too (the finished allocation's); nobody holds logs on n1.
      listed: new Map([['fake', [listed('ext-data', ['ext-n1', 'ext-n2']), listed('ext-logs', ['ext-n1']), listed('ext-stray')]]]),
      inventories: new Map(),
      releasing: () => true,
    });
    const stale = findings.filter((f) => f.kind === 'stale-controller-publication');
    assert.deepEqual(stale.map((f) => [f.volumeId, f.nodeId, f.externalNodeId, f.repair, f.fixable]), [['logs', 'n1', 'ext-n1', 'berth volume doctor --fix logs  (sends ControllerUnpublishVolume)', true]]);
    const unknown = findings.filter((f) => f.kind === 'unknown-plugin-volume');
    assert.deepEqual(unknown.map((f) => [f.externalVolumeId, f.fixable]), [['ext-stray', false]]);
    assert.match(unknown[0]!.repair, /external_id = "ext-stray"/);
  });

  it('a mount no record names, and a record with nothing mounted (only finished steps count)', () => {
    const inv: NodeMountInventory = {
      strayMounts: [{ pluginId: 'fake', path: '/csi/per-alloc/x/v/u' }],
      records: [
        { kind: 'publish', pluginId: 'fake', namespace: 'default', volumeId: 'data', externalId: 'ext-data', allocId: 'live', path: '/csi/per-alloc/live/data/u', state: 'done', mounted: false },
        { kind: 'stage', pluginId: 'fake', namespace: 'default', volumeId: 'data', externalId: 'ext-data', path: '/csi/staging/d/data/u', state: 'done', mounted: true },
        { kind: 'publish', pluginId: 'fake', namespace: 'default', volumeId: 'data', externalId: 'ext-data', allocId: 'new', path: '/csi/per-alloc/new/data/u', state: 'pending', mounted: false },
      ],
    };
    const findings = compareBooks({ snap: store.snapshot(), listed: new Map(), inventories: new Map([['n1', inv]]), releasing: () => true });
    assert.deepEqual(
      findings.filter((f) => f.kind !== 'claim-without-allocation').map((f) => [f.kind, f.nodeId, f.path, f.fixable]),
      [
        ['mount-without-record', 'n1', '/csi/per-alloc/x/v/u', true],
        ['record-without-mount', 'n1', '/csi/per-alloc/live/data/u', false],
      ],
    );
  });

  it('for one volume, only what concerns it', () => {
    const findings = compareBooks({
      snap: store.snapshot(),
      scope: { namespace: 'default', volumeId: 'logs' },
      listed: new Map([['fake', [listed('ext-data', ['ext-n9']), listed('ext-logs', ['ext-n1']), listed('ext-stray')]]]),
      inventories: new Map([['n1', { records: [], strayMounts: [{ pluginId: 'fake', path: '/csi/per-alloc/x/v/u' }] }]]),
    });
    assert.deepEqual(findings.map((f) => [f.kind, f.volumeId]), [
      ['claim-without-allocation', 'logs'],
      ['stale-controller-publication', 'logs'],
    ]);
  });

  it('for one volume, its stray mounts too (in its staging or per-allocation directories), and not another volume\'s', () => {
    const findings = compareBooks({
      snap: store.snapshot(),
      scope: { namespace: 'default', volumeId: 'logs' },
      listed: new Map(),
      inventories: new Map([
        [
          'n1',
          {
            records: [],
            strayMounts: [
              { pluginId: 'fake', path: '/csi/per-alloc/x/logs/u' },
              { pluginId: 'fake', path: '/csi/staging/default/logs/u' },
              { pluginId: 'fake', path: '/csi/staging/other-ns/logs/u' },
              { pluginId: 'fake', path: '/csi/per-alloc/x/data/u' },
            ],
          },
        ],
      ]),
    });
    assert.deepEqual(
      findings.filter((f) => f.kind === 'mount-without-record').map((f) => f.path),
      ['/csi/per-alloc/x/logs/u', '/csi/staging/default/logs/u'],
    );
  });

  it('what could not be asked is a finding, never a silent gap', () => {
    const findings = compareBooks({
      snap: store.snapshot(),
      listed: new Map(),
      inventories: new Map(),
      unchecked: [{ pluginId: 'fake', nodeId: 'n1', message: 'plugin fake not running on node n1: not checked', repair: 'start it' }],
    });
    const f = findings.find((x) => x.kind === 'plugin-not-checked');
    assert.deepEqual(f && [f.pluginId, f.nodeId, f.message, f.fixable], ['fake', 'n1', 'plugin fake not running on node n1: not checked', false]);
  });
});
