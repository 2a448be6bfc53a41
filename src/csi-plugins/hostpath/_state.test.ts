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

  it('a monolith writes only the file whose records a call changed (a NodeStage leaves the controller file as it was)', async () => {
    const a = new StateStore({ dir, controller: true, node: true, nodeId: 'n1' });
    await a.load();
    a.volumes.set('v1', volume('v1', a.nextSeq()));
    await a.persist('controller');
    assert.deepEqual(await readdir(dir), [CONTROLLER_STATE_FILE], 'no node file for a controller change');
    const controllerBefore = await readFile(path.join(dir, CONTROLLER_STATE_FILE), 'utf8');
    a.nodeVolumes.set('v1', { volumeId: 'v1', staged: { path: '/stage', capability }, targets: [] });
    // A controller change not persisted yet stays off disk when only the node's records are written.
    a.volumes.set('v2', volume('v2', a.nextSeq()));
    await a.persist('node');
    assert.equal(await readFile(path.join(dir, CONTROLLER_STATE_FILE), 'utf8'), controllerBefore);
    const b = new StateStore({ dir, controller: true, node: true, nodeId: 'n1' });
    await b.load();
    assert.deepEqual(b.nodeVolumes.get('v1')?.staged, { path: '/stage', capability });
    assert.deepEqual([...b.volumes.keys()], ['v1']);
  });

  it('two node instances on one node (a plugin update): each sees what the other staged, and neither drops the other\'s records', async () => {
    const old = new StateStore({ dir, controller: false, node: true, nodeId: 'n1' });
    await old.load();
    const next = new StateStore({ dir, controller: false, node: true, nodeId: 'n1' });
    await next.load();
    // The old instance stages after the new one loaded.
    old.nodeVolumes.set('v1', { volumeId: 'v1', staged: { path: '/stage/v1', capability }, targets: [] });
    await old.persist();
    await next.syncNodeVolume('v1');
    assert.deepEqual(next.nodeVolumes.get('v1')?.staged, { path: '/stage/v1', capability }, 'the new instance finds the volume staged');
    // The new instance works on another volume: the old one's record stays on file.
    next.nodeVolumes.set('v2', { volumeId: 'v2', staged: { path: '/stage/v2', capability }, targets: [] });
    await next.persist();
    const onFile = JSON.parse(await readFile(path.join(dir, NODE_STATE_FILE), 'utf8')) as { volumes: Array<{ volumeId: string }> };
    assert.deepEqual(onFile.volumes.map((v) => v.volumeId).sort(), ['v1', 'v2']);
    // The new instance unstages v1 (the old one staged it): gone from the file, v2 kept.
    next.nodeVolumes.delete('v1');
    await next.persist();
    await old.syncNodeVolume('v1');
    assert.equal(old.nodeVolumes.get('v1'), undefined);
    const again = new StateStore({ dir, controller: false, node: true, nodeId: 'n1' });
    await again.load();
    assert.deepEqual([...again.nodeVolumes.keys()], ['v2']);
  });

  it('two nodes sharing one data directory (storage both reach) keep their own records when each has its own node directory', async () => {
    const [d1, d2] = [path.join(dir, 'node-1'), path.join(dir, 'node-2')];
    const a = new StateStore({ dir, nodeDir: d1, controller: true, node: true, nodeId: 'shared' });
    const b = new StateStore({ dir, nodeDir: d2, controller: true, node: true, nodeId: 'shared' });
    await a.load();
    await b.load();
    a.nodeVolumes.set('v1', { volumeId: 'v1', staged: { path: '/a/stage/v1', capability }, targets: [] });
    await a.persist();
    await b.syncNodeVolume('v1');
    assert.equal(b.nodeVolumes.get('v1'), undefined, "the other node's staging is not this node's");
    b.nodeVolumes.set('v1', { volumeId: 'v1', staged: { path: '/b/stage/v1', capability }, targets: [] });
    await b.persist();
    await a.syncNodeVolume('v1');
    assert.equal(a.nodeVolumes.get('v1')?.staged?.path, '/a/stage/v1');
    assert.deepEqual(await readdir(d1), [NODE_STATE_FILE]);
    assert.ok((await readdir(dir)).includes(CONTROLLER_STATE_FILE));
    assert.ok(!(await readdir(dir)).includes(NODE_STATE_FILE), 'no node file in the shared directory');
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
