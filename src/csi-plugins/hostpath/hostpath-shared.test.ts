// Two hostpath instances (two nodes) on one shared data directory: what an
// operator sets up to move a single-writer volume between nodes. Real
// plugins on real sockets, real bind mounts; the shared state file is read
// after every step.

import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { createChannel, createClient, type Channel } from 'nice-grpc';
import { ControllerDefinition, NodeDefinition, type ControllerClient, type NodeClient } from '../../gen/csi/v1/csi.js';
import { readMountInfo, unmountAllUnder } from './_mount.js';
import { HostpathPlugin } from './index.js';

const cap = { mount: { fsType: '', mountFlags: [] }, accessMode: { mode: 1 } };

interface StateFile {
  nextSeq: number;
  volumes: { id: string; name: string; seq: number; published: { nodeId: string }[] }[];
}

describe('hostpath: two nodes sharing one data directory', () => {
  let root: string;
  let plugins: HostpathPlugin[];
  let channels: Channel[];

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'bh-sh-'));
    plugins = [];
    channels = [];
  });

  afterEach(async () => {
    for (const ch of channels) ch.close();
    for (const p of plugins) await p.stop();
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  const node = async (nodeId: string): Promise<{ controller: ControllerClient; node: NodeClient }> => {
    const p = new HostpathPlugin({
      endpoint: `unix://${root}/${nodeId}.sock`,
      nodeId,
      dataDir: path.join(root, 'shared'),
      nodeStateDir: path.join(root, `${nodeId}-state`),
      capacityBytes: 1024 ** 4,
    });
    plugins.push(p);
    await p.start();
    const ch = createChannel(p.endpoint);
    channels.push(ch);
    return { controller: createClient(ControllerDefinition, ch), node: createClient(NodeDefinition, ch) };
  };

  const stateFile = async (): Promise<StateFile> => JSON.parse(await readFile(path.join(root, 'shared', 'controller-state.json'), 'utf8')) as StateFile;
  const names = async (): Promise<string[]> => (await stateFile()).volumes.map((v) => v.name).sort();
  const publishedTo = async (id: string): Promise<string[]> => ((await stateFile()).volumes.find((v) => v.id === id)?.published ?? []).map((p) => p.nodeId);

  it('volumes created and moved through either node all stay in the shared state, and each node sees the other\'s', async () => {
    const a = await node('node-a');
    const b = await node('node-b');

    const v1 = (await a.controller.createVolume({ name: 'v1', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
    assert.deepEqual(await names(), ['v1']);
    // Before: node-b's stale copy rewrote the file without v1.
    const v2 = (await b.controller.createVolume({ name: 'v2', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
    assert.deepEqual(await names(), ['v1', 'v2']);
    assert.deepEqual((await a.controller.listVolumes({})).entries.map((e) => e.volume?.volumeId).sort(), [v1, v2].sort(), 'node-a lists the volume node-b created');

    // A writer on node-b takes v1 (created through node-a). Before: NOT_FOUND until node-b restarted.
    const stageB = path.join(root, 'stage-b');
    const targetB = path.join(root, 'pub-b', 'target');
    await mkdir(stageB);
    await mkdir(path.dirname(targetB));
    await b.controller.controllerPublishVolume({ volumeId: v1, nodeId: 'node-b', volumeCapability: cap });
    assert.deepEqual(await publishedTo(v1), ['node-b']);
    await b.node.nodeStageVolume({ volumeId: v1, stagingTargetPath: stageB, volumeCapability: cap });
    await b.node.nodePublishVolume({ volumeId: v1, stagingTargetPath: stageB, targetPath: targetB, volumeCapability: cap, readonly: false });
    await writeFile(path.join(targetB, 'written-on-b'), 'b');

    // Node-a creates a third volume meanwhile: node-b's publication of v1 stays on file.
    await a.controller.createVolume({ name: 'v3', volumeCapabilities: [cap] });
    assert.deepEqual(await names(), ['v1', 'v2', 'v3']);
    assert.deepEqual(await publishedTo(v1), ['node-b']);

    // The move: node-b lets go, node-a takes it, and sees what node-b wrote.
    await b.node.nodeUnpublishVolume({ volumeId: v1, targetPath: targetB });
    await b.node.nodeUnstageVolume({ volumeId: v1, stagingTargetPath: stageB });
    await b.controller.controllerUnpublishVolume({ volumeId: v1, nodeId: 'node-b' });
    assert.deepEqual(await publishedTo(v1), []);
    await a.controller.controllerPublishVolume({ volumeId: v1, nodeId: 'node-a', volumeCapability: cap });
    assert.deepEqual(await publishedTo(v1), ['node-a']);
    const stageA = path.join(root, 'stage-a');
    await mkdir(stageA);
    await a.node.nodeStageVolume({ volumeId: v1, stagingTargetPath: stageA, volumeCapability: cap });
    assert.equal(await readFile(path.join(stageA, 'written-on-b'), 'utf8'), 'b');

    // A deletion through node-b is seen by node-a.
    await b.controller.deleteVolume({ volumeId: v2 });
    assert.deepEqual(await names(), ['v1', 'v3']);
    assert.ok(!(await a.controller.listVolumes({})).entries.some((e) => e.volume?.volumeId === v2));
    await a.node.nodeUnstageVolume({ volumeId: v1, stagingTargetPath: stageA });
    assert.equal((await readMountInfo()).filter((m) => m.mountPoint.startsWith(root)).length, 0);
  });

  it('creations through both nodes at once all land in the file, each with its own sequence number', async () => {
    const a = await node('node-a');
    const b = await node('node-b');
    const made = await Promise.all(
      Array.from({ length: 16 }, (_, i) => (i % 2 ? a : b).controller.createVolume({ name: `c${i}`, volumeCapabilities: [cap] })),
    );
    const file = await stateFile();
    assert.deepEqual(file.volumes.map((v) => v.id).sort(), made.map((m) => m.volume?.volumeId).sort());
    const seqs = file.volumes.map((v) => v.seq);
    assert.equal(new Set(seqs).size, seqs.length, `sequence numbers ${seqs.join()}`);
    assert.ok(file.nextSeq > Math.max(...seqs));
    // Paging through either node walks every volume once.
    const seen: string[] = [];
    let token = '';
    do {
      const page = await a.controller.listVolumes({ maxEntries: 5, startingToken: token });
      seen.push(...page.entries.map((e) => e.volume?.volumeId ?? ''));
      token = page.nextToken;
    } while (token !== '');
    assert.deepEqual(seen.sort(), made.map((m) => m.volume?.volumeId ?? '').sort());
  });
});
