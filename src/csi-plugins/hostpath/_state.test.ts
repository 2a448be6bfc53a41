import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CONTROLLER_STATE_FILE, NODE_STATE_FILE, StateStore, writeAtomic, type VolumeRecord } from './_state.js';

const capability = { mode: 1, fsType: '', mountFlagsDigest: '' };

function volume(id: string, seq: number): VolumeRecord {
  return { id, name: `name-${id}`, key: id, capacityBytes: 1024, parameters: { a: 'b' }, createdAt: 1, seq, published: [] };
}

describe('hostpath state', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'bh-s-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('a new store over the same directory knows every record, and sequence numbers continue', async () => {
    const a = new StateStore({ dir, controller: true, node: true, nodeId: 'n1' });
    await a.load();
    a.volumes.set('v1', volume('v1', a.nextSeq()));
    a.snapshots.set('s1', { id: 's1', name: 'snap', key: 's1', sourceVolumeId: 'v1', sizeBytes: 1024, createdAt: 2, seq: a.nextSeq() });
    a.nodeVolumes.set('v1', { volumeId: 'v1', staged: { path: '/stage', capability }, targets: [{ path: '/t', readonly: true, capability }] });
    await a.persist();

    const b = new StateStore({ dir, controller: true, node: true, nodeId: 'n1' });
    await b.load();
    assert.deepEqual(b.volumes.get('v1'), a.volumes.get('v1'));
    assert.deepEqual(b.snapshots.get('s1'), a.snapshots.get('s1'));
    assert.deepEqual(b.nodeVolumes.get('v1'), a.nodeVolumes.get('v1'));
    assert.equal(b.nextSeq(), 3);
  });

  it('each role writes only its own file and reads the other role\'s file fresh', async () => {
    const controller = new StateStore({ dir, controller: true, node: false, nodeId: 'n1' });
    const node = new StateStore({ dir, controller: false, node: true, nodeId: 'n1' });
    await Promise.all([controller.load(), node.load()]);
    controller.volumes.set('v1', volume('v1', controller.nextSeq()));
    await controller.persist();
    assert.deepEqual(await readdir(dir), [CONTROLLER_STATE_FILE]);
    assert.equal((await node.findVolume('v1'))?.name, 'name-v1');

    node.nodeVolumes.set('v1', { volumeId: 'v1', staged: { path: '/stage', capability }, targets: [] });
    await node.persist();
    assert.equal((await controller.findNodeVolume('v1'))?.staged?.path, '/stage');
    assert.deepEqual((await readdir(dir)).sort(), [CONTROLLER_STATE_FILE, NODE_STATE_FILE]);
  });

  it('treats IDs like __proto__ as unknown, not as object members', async () => {
    const s = new StateStore({ dir, controller: true, node: true, nodeId: 'n1' });
    await s.load();
    for (const id of ['__proto__', 'constructor', 'toString']) {
      assert.equal(await s.findVolume(id), undefined);
      assert.equal(await s.findNodeVolume(id), undefined);
    }
  });

  it('refuses a state file it cannot read, or one written for another node', async () => {
    await writeFile(path.join(dir, CONTROLLER_STATE_FILE), '{ not json');
    await assert.rejects(new StateStore({ dir, controller: true, node: false, nodeId: 'n1' }).load(), { code: 'HOSTPATH_STATE_CORRUPT' });
    const n1 = new StateStore({ dir, controller: false, node: true, nodeId: 'n1' });
    await n1.load();
    n1.nodeVolumes.set('v', { volumeId: 'v', staged: { path: '/s', capability }, targets: [] });
    await n1.persist();
    await assert.rejects(new StateStore({ dir, controller: false, node: true, nodeId: 'n2' }).load(), { code: 'HOSTPATH_STATE_CORRUPT' });
  });

  it('writes atomically: the file holds the new content and no temp file is left', async () => {
    const file = path.join(dir, 'x.json');
    await writeAtomic(file, 'one');
    await writeAtomic(file, 'two');
    assert.equal(await readFile(file, 'utf8'), 'two');
    assert.deepEqual(await readdir(dir), ['x.json']);
  });

  it('queues writes so the last persist covers every earlier change', async () => {
    const s = new StateStore({ dir, controller: true, node: false, nodeId: 'n1' });
    await s.load();
    const writes = [];
    for (let i = 1; i <= 20; i++) {
      s.volumes.set(`v${i}`, volume(`v${i}`, s.nextSeq()));
      writes.push(s.persist());
    }
    await Promise.all(writes);
    const again = new StateStore({ dir, controller: true, node: false, nodeId: 'n1' });
    await again.load();
    assert.equal(again.volumes.size, 20);
  });
});
