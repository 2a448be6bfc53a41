// The volume manager driving the real hostpath plugin: real bind mounts,
// read back from the kernel's mount table.

import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { HostpathNode, isMounted, mountsUnder, SHARED } from './_volumes.js';

describe('volume manager on the hostpath plugin', () => {
  let node: HostpathNode;

  beforeEach(async () => {
    node = new HostpathNode();
    await node.start();
  });

  afterEach(async () => {
    await node.close();
  });

  it('shares one staging between allocations: data written through one target is read through another (scenario 6)', async () => {
    const volumeId = await node.createVolume('shared');
    const vm = await node.manager();
    const volume = { id: 'shared', externalId: volumeId };
    const allocs = ['alloc-a', 'alloc-b', 'alloc-c'];
    const sources: string[] = [];
    for (const a of allocs) sources.push((await vm.mountVolume(volume, a, SHARED)).source);

    const stages = node.client.sent.filter((c) => c.rpc === 'NodeStageVolume');
    assert.equal(stages.length, 1, 'one stage for the node');
    assert.equal(node.client.sent.filter((c) => c.rpc === 'NodePublishVolume').length, 3);
    const staging = stages[0]!.path;
    assert.ok(isMounted(staging), 'the staging path is a real mount');
    for (const s of sources) {
      assert.ok(s.startsWith(`${node.mountRoot}/per-alloc/`));
      assert.ok(isMounted(s), `${s} is a real mount`);
    }

    writeFileSync(path.join(sources[0]!, 'hello.txt'), 'written through alloc-a');
    assert.equal(readFileSync(path.join(sources[2]!, 'hello.txt'), 'utf8'), 'written through alloc-a');

    for (const a of allocs) await vm.unmountVolume(volume, a, SHARED);
    assert.deepEqual(
      node.client.sent.slice(4).map((c) => c.rpc),
      ['NodeUnpublishVolume', 'NodeUnpublishVolume', 'NodeUnpublishVolume', 'NodeUnstageVolume'],
      'every unpublish before the one unstage',
    );
    assert.deepEqual(mountsUnder(node.mountRoot), [], 'nothing left mounted');
    assert.deepEqual(readdirSync(path.join(node.mountRoot, 'per-alloc')), []);
    assert.deepEqual(readdirSync(path.join(node.mountRoot, 'staging')), []);
  });

  it('keeps volumes with hostile IDs inside the mount root (scenario 17)', async () => {
    const vm = await node.manager();
    const hostile = ['../../../../etc', '/', 'a/../../b', 'nul\0in-id', 'x'.repeat(300)];
    const volumes = [];
    for (const [i, id] of hostile.entries()) volumes.push({ id, namespace: `../ns${i}`, externalId: await node.createVolume(`hostile-${i}`) });
    for (const [i, volume] of volumes.entries()) {
      const id = volume.id;
      const { source } = await vm.mountVolume(volume, `../alloc-${i}/..`, SHARED);
      assert.ok(isMounted(source));
      assert.equal(path.resolve(source), source);
      assert.ok(source.startsWith(`${node.mountRoot}/per-alloc/`), `${JSON.stringify(id)} -> ${source}`);
    }
    for (const m of mountsUnder(node.dir)) {
      assert.ok(m.startsWith(`${node.mountRoot}/`) || m.startsWith(path.join(node.dir, 'data')), `stray mount ${m}`);
    }
    for (const [i, volume] of volumes.entries()) await vm.unmountVolume(volume, `../alloc-${i}/..`, SHARED);
    assert.deepEqual(mountsUnder(node.mountRoot), []);
    assert.ok(!existsSync(path.join(node.dir, 'etc')));
  });
});
