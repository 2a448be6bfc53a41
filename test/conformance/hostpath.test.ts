// The conformance suite against Berth's hostpath plugin with real mounts,
// plus what only a look at the disk can tell: that stage and publish really
// mounted, that readonly is really read-only, that teardown leaves nothing,
// that state survives a restart, and that hostile IDs and paths never reach
// outside the plugin's data directory.
// One thing past 500 lines: one plugin's checks on disk (mounts, a restart,
// hostile input), each group sharing one plugin instance and data directory.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { HostpathPlugin, type HostpathOptions } from '../../src/csi-plugins/index.js';
import { AccessMode, codeOf, connect, expectCode, mountCapability, Status, uniqueName, type CsiClients } from './_clients.js';
import { mountsAt, mountsUnder, removeTree } from './_mounts.js';
import { describeConformance, type ConformanceTarget } from './_suite.js';

const GiB = 1024 ** 3;
const NODE_ID = 'node-1';

interface Hostpath extends ConformanceTarget {
  readonly root: string;
  readonly dataDir: string;
  readonly options: HostpathOptions;
  plugin: HostpathPlugin;
  /** Stops the plugin and starts a new instance over the same data directory and socket. */
  restart(): Promise<void>;
}

/** A hostpath plugin in a fresh temp dir (short path: it holds the socket). */
async function startHostpath(extra: Partial<HostpathOptions> = {}): Promise<Hostpath> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'bh-'));
  const dataDir = path.join(root, 'data');
  const stagingRoot = path.join(root, 'staging');
  const targetRoot = path.join(root, 'pods');
  await Promise.all([mkdir(stagingRoot), mkdir(targetRoot)]);
  const options: HostpathOptions = { endpoint: `unix://${root}/csi.sock`, nodeId: NODE_ID, dataDir, capacityBytes: 64 * GiB, ...extra };
  const h: Hostpath = {
    root,
    dataDir,
    options,
    endpoint: options.endpoint,
    stagingRoot,
    targetRoot,
    plugin: new HostpathPlugin(options),
    async restart() {
      await h.plugin.stop();
      h.plugin = new HostpathPlugin(options);
      await h.plugin.start();
    },
    async cleanup() {
      try {
        await h.plugin.stop();
      } finally {
        await removeTree(root);
      }
    },
  };
  await h.plugin.start();
  return h;
}

describeConformance('hostpath plugin (monolith)', () => startHostpath());
describeConformance('hostpath plugin without ControllerPublish', () => startHostpath({ publishUnpublish: false }));

/** The directory under dataDir/volumes that is the same inode as `mounted` (a staging or target path). */
function volumeDirBehind(dataDir: string, mounted: string): string {
  const want = statSync(mounted);
  const dir = path.join(dataDir, 'volumes');
  const hit = readdirSync(dir)
    .map((k) => path.join(dir, k))
    .find((p) => {
      const s = statSync(p);
      return s.dev === want.dev && s.ino === want.ino;
    });
  assert.ok(hit, `${mounted} does not show any volume directory`);
  return hit;
}

/** Every path under `root` with its type, size and mtime: a fingerprint to compare before and after. */
async function treeFingerprint(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      const p = path.join(dir, name);
      const s = await stat(p);
      out.push(`${path.relative(root, p)} ${s.isDirectory() ? 'd' : 'f'} ${s.isDirectory() ? 0 : s.size} ${s.mtimeMs}`);
      if (s.isDirectory()) await walk(p);
    }
  };
  await walk(root);
  return out;
}

describe('hostpath plugin on disk', () => {
  let h: Hostpath;
  let c: CsiClients;
  const cap = mountCapability();

  before(async () => {
    h = await startHostpath({ maxVolumesPerNode: 4 });
    c = connect(h.endpoint);
  });

  after(async () => {
    c?.close();
    await h?.cleanup();
  });

  // Each test tears down what it made; whatever a failed test left is torn down here, in CO order.
  const made = { volumes: new Set<string>(), staged: [] as [string, string][], published: [] as [string, string][] };
  afterEach(async () => {
    for (const [volumeId, targetPath] of made.published.reverse()) await codeOf(c.node.nodeUnpublishVolume({ volumeId, targetPath }));
    for (const [volumeId, stagingTargetPath] of made.staged.reverse()) await codeOf(c.node.nodeUnstageVolume({ volumeId, stagingTargetPath }));
    for (const volumeId of made.volumes) {
      await codeOf(c.controller.controllerUnpublishVolume({ volumeId, nodeId: '' }));
      await codeOf(c.controller.deleteVolume({ volumeId }));
    }
    made.volumes.clear();
    made.staged = [];
    made.published = [];
  });

  const createVolume = async (prefix: string, bytes = 16 * 1024 * 1024): Promise<string> => {
    const r = await c.controller.createVolume({ name: uniqueName(prefix), volumeCapabilities: [cap], capacityRange: { requiredBytes: BigInt(bytes) } });
    const id = r.volume?.volumeId ?? assert.fail('no volume');
    made.volumes.add(id);
    return id;
  };
  const newStaging = async (): Promise<string> => {
    const p = path.join(h.stagingRoot, uniqueName('s'));
    await mkdir(p);
    return p;
  };
  const newTarget = async (): Promise<string> => {
    const parent = path.join(h.targetRoot, uniqueName('p'));
    await mkdir(parent);
    return path.join(parent, 'mnt');
  };
  const stage = async (volumeId: string): Promise<string> => {
    await c.controller.controllerPublishVolume({ volumeId, nodeId: NODE_ID, volumeCapability: cap });
    const staging = await newStaging();
    made.staged.push([volumeId, staging]);
    await c.node.nodeStageVolume({ volumeId, stagingTargetPath: staging, volumeCapability: cap });
    return staging;
  };
  const publish = async (volumeId: string, staging: string, readonly = false): Promise<string> => {
    const target = await newTarget();
    made.published.push([volumeId, target]);
    await c.node.nodePublishVolume({ volumeId, stagingTargetPath: staging, targetPath: target, volumeCapability: cap, readonly });
    return target;
  };
  const teardown = async (volumeId: string, staging: string, targets: string[]): Promise<void> => {
    for (const t of targets) await c.node.nodeUnpublishVolume({ volumeId, targetPath: t });
    await c.node.nodeUnstageVolume({ volumeId, stagingTargetPath: staging });
    await c.controller.controllerUnpublishVolume({ volumeId, nodeId: NODE_ID });
    await c.controller.deleteVolume({ volumeId });
  };

  it('stage and publish make real bind mounts, and a file written through the target lands in the volume directory', async () => {
    const id = await createVolume('disk');
    const staging = await stage(id);
    assert.equal(mountsAt(staging).length, 1, 'NodeStage mounted the staging path');
    const volumeDir = volumeDirBehind(h.dataDir, staging);
    assert.ok(volumeDir.startsWith(path.join(h.dataDir, 'volumes') + '/'));

    const target = await publish(id, staging);
    assert.ok(statSync(target).isDirectory(), 'the plugin created the target directory');
    assert.equal(mountsAt(target).length, 1, 'NodePublish mounted the target');
    assert.equal(volumeDirBehind(h.dataDir, target), volumeDir);

    await writeFile(path.join(target, 'data.txt'), 'written by the workload');
    assert.equal(await readFile(path.join(volumeDir, 'data.txt'), 'utf8'), 'written by the workload');
    assert.equal(await readFile(path.join(staging, 'data.txt'), 'utf8'), 'written by the workload');

    await c.node.nodeUnpublishVolume({ volumeId: id, targetPath: target });
    assert.equal(mountsAt(target).length, 0, 'NodeUnpublish left a mount');
    assert.ok(!existsSync(target), 'NodeUnpublish left the target directory');
    assert.ok(existsSync(path.dirname(target)), 'the CO-owned parent stays');

    await c.node.nodeUnstageVolume({ volumeId: id, stagingTargetPath: staging });
    assert.equal(mountsAt(staging).length, 0, 'NodeUnstage left a mount');
    assert.deepEqual(readdirSync(staging), [], 'the CO-owned staging directory stays, empty once unmounted');
    assert.equal(mountsUnder(h.root).length, 0);

    await c.controller.controllerUnpublishVolume({ volumeId: id, nodeId: NODE_ID });
    await c.controller.deleteVolume({ volumeId: id });
    assert.ok(!existsSync(volumeDir), 'DeleteVolume removed the volume directory');
  });

  it('a readonly publish is really read-only (EROFS) while a read-write target of the same volume still writes', async () => {
    const id = await createVolume('ro');
    const staging = await stage(id);
    const rw = await publish(id, staging);
    const ro = await publish(id, staging, true);
    assert.ok(mountsAt(ro).at(-1)?.options.includes('ro'), 'the readonly target is mounted ro');
    await assert.rejects(writeFile(path.join(ro, 'nope.txt'), 'x'), (err: NodeJS.ErrnoException) => err.code === 'EROFS');
    await writeFile(path.join(rw, 'yes.txt'), 'x');
    assert.equal(await readFile(path.join(ro, 'yes.txt'), 'utf8'), 'x', 'the readonly target sees the same volume');

    const readerOnly = await newTarget();
    made.published.push([id, readerOnly]);
    await c.node.nodePublishVolume({
      volumeId: id,
      stagingTargetPath: staging,
      targetPath: readerOnly,
      volumeCapability: mountCapability(AccessMode.MULTI_NODE_READER_ONLY),
    });
    await assert.rejects(writeFile(path.join(readerOnly, 'nope.txt'), 'x'), (err: NodeJS.ErrnoException) => err.code === 'EROFS');
    await teardown(id, staging, [rw, ro, readerOnly]);
    assert.equal(mountsUnder(h.root).length, 0);
  });

  it('refuses to delete a volume that is published or staged, and to unstage one still published (FAILED_PRECONDITION)', async () => {
    const id = await createVolume('inuse');
    const staging = await stage(id);
    const target = await publish(id, staging);
    await c.controller.controllerUnpublishVolume({ volumeId: id, nodeId: NODE_ID });
    await expectCode(c.controller.deleteVolume({ volumeId: id }), Status.FAILED_PRECONDITION, 'delete while published on the node');
    await expectCode(c.node.nodeUnstageVolume({ volumeId: id, stagingTargetPath: staging }), Status.FAILED_PRECONDITION, 'unstage before unpublish');
    assert.equal(mountsAt(staging).length, 1, 'the refused unstage kept the mount');
    await c.node.nodeUnpublishVolume({ volumeId: id, targetPath: target });
    await expectCode(c.controller.deleteVolume({ volumeId: id }), Status.FAILED_PRECONDITION, 'delete while staged');
    await c.node.nodeUnstageVolume({ volumeId: id, stagingTargetPath: staging });
    await c.controller.controllerPublishVolume({ volumeId: id, nodeId: NODE_ID, volumeCapability: cap });
    await expectCode(c.controller.deleteVolume({ volumeId: id }), Status.FAILED_PRECONDITION, 'delete while controller-published');
    await c.controller.controllerUnpublishVolume({ volumeId: id, nodeId: NODE_ID });
    await c.controller.deleteVolume({ volumeId: id });
  });

  it('refuses out-of-order node calls and paths the CO did not prepare, mounting nothing', async () => {
    const id = await createVolume('order');
    const missing = path.join(h.stagingRoot, uniqueName('missing'));
    await expectCode(
      c.node.nodeStageVolume({ volumeId: id, stagingTargetPath: missing, volumeCapability: cap }),
      Status.FAILED_PRECONDITION,
      'staging dir does not exist',
    );
    const staging = await newStaging();
    made.staged.push([id, staging]);
    const target = await newTarget();
    await expectCode(
      c.node.nodePublishVolume({ volumeId: id, stagingTargetPath: staging, targetPath: target, volumeCapability: cap }),
      Status.FAILED_PRECONDITION,
      'publish before stage',
    );
    await expectCode(
      c.node.nodePublishVolume({ volumeId: id, targetPath: target, volumeCapability: cap }),
      Status.FAILED_PRECONDITION,
      'publish without staging path, though STAGE_UNSTAGE_VOLUME is advertised',
    );
    await c.node.nodeStageVolume({ volumeId: id, stagingTargetPath: staging, volumeCapability: cap });
    await expectCode(
      c.node.nodeStageVolume({ volumeId: id, stagingTargetPath: await newStaging(), volumeCapability: cap }),
      Status.FAILED_PRECONDITION,
      'stage at a second staging path',
    );
    await expectCode(
      c.node.nodeStageVolume({ volumeId: id, stagingTargetPath: staging, volumeCapability: mountCapability(AccessMode.MULTI_NODE_MULTI_WRITER) }),
      Status.ALREADY_EXISTS,
      'stage again with another capability',
    );
    const orphan = path.join(h.targetRoot, uniqueName('noparent'), 'mnt');
    await expectCode(
      c.node.nodePublishVolume({ volumeId: id, stagingTargetPath: staging, targetPath: orphan, volumeCapability: cap }),
      Status.FAILED_PRECONDITION,
      'target parent does not exist',
    );
    assert.equal(mountsUnder(h.root).length, 1, 'only the staging mount exists');
    await c.node.nodeUnstageVolume({ volumeId: id, stagingTargetPath: staging });
    await c.controller.deleteVolume({ volumeId: id });
  });

  it('answers ABORTED to calls that overlap a call for the same volume, and ends with exactly one mount', async () => {
    const id = await createVolume('race');
    const staging = await newStaging();
    made.staged.push([id, staging]);
    const codes = await Promise.all(
      Array.from({ length: 6 }, () => codeOf(c.node.nodeStageVolume({ volumeId: id, stagingTargetPath: staging, volumeCapability: cap }))),
    );
    assert.ok(codes.every((code) => code === Status.OK || code === Status.ABORTED), `unexpected codes ${codes.map((x) => Status[x])}`);
    assert.ok(codes.includes(Status.OK));
    assert.equal(mountsAt(staging).length, 1, 'overlapping stages made more than one mount');
    await c.node.nodeUnstageVolume({ volumeId: id, stagingTargetPath: staging });
    await c.controller.deleteVolume({ volumeId: id });
  });

  it('accounts capacity: GetCapacity shrinks by what volumes take, and asking for more is OUT_OF_RANGE', async () => {
    const before = (await c.controller.getCapacity({})).availableCapacity;
    const id = await createVolume('cap', GiB);
    const during = (await c.controller.getCapacity({})).availableCapacity;
    assert.equal(before - during, BigInt(GiB));
    await expectCode(
      c.controller.createVolume({ name: uniqueName('huge'), volumeCapabilities: [cap], capacityRange: { requiredBytes: during + 1n } }),
      Status.OUT_OF_RANGE,
      'more than available',
    );
    await expectCode(
      c.controller.controllerExpandVolume({ volumeId: id, capacityRange: { requiredBytes: BigInt(GiB) + during + 1n } }),
      Status.OUT_OF_RANGE,
      'expanding past available',
    );
    await expectCode(
      c.controller.controllerExpandVolume({ volumeId: id, capacityRange: { requiredBytes: 1n, limitBytes: 1024n } }),
      Status.OUT_OF_RANGE,
      'shrinking',
    );
    assert.equal((await c.controller.getCapacity({ volumeCapabilities: [{ block: {}, accessMode: { mode: AccessMode.SINGLE_NODE_WRITER } }] })).availableCapacity, 0n);
    assert.equal((await c.controller.getCapacity({ accessibleTopology: { segments: { 'topology.hostpath.csi.berth.dev/node': 'elsewhere' } } })).availableCapacity, 0n);
    await c.controller.deleteVolume({ volumeId: id });
    assert.equal((await c.controller.getCapacity({})).availableCapacity, before);
  });

  it("expands online: the controller grants the size, NodeExpandVolume reports it, stats read the volume's own directory", async () => {
    const id = await createVolume('grow');
    const staging = await stage(id);
    const target = await publish(id, staging);
    const grown = await c.controller.controllerExpandVolume({ volumeId: id, capacityRange: { requiredBytes: 64n * 1024n * 1024n } });
    assert.equal(grown.capacityBytes, 64n * 1024n * 1024n);
    assert.equal(grown.nodeExpansionRequired, true);
    const node = await c.node.nodeExpandVolume({ volumeId: id, volumePath: target, capacityRange: { requiredBytes: 64n * 1024n * 1024n } });
    assert.equal(node.capacityBytes, 64n * 1024n * 1024n);
    await expectCode(
      c.node.nodeExpandVolume({ volumeId: id, volumePath: target, capacityRange: { requiredBytes: 128n * 1024n * 1024n } }),
      Status.OUT_OF_RANGE,
      'node expand past what the controller granted',
    );
    // 1 MiB written through the target shows in the volume's usage, against the size granted (not the disk's).
    await import('node:fs/promises').then((m) => m.writeFile(`${target}/mib`, Buffer.alloc(1024 * 1024, 7)));
    const stats = await c.node.nodeGetVolumeStats({ volumeId: id, volumePath: target });
    const fs = await import('node:fs/promises').then((m) => m.statfs(target));
    const bytes = stats.usage.find((u) => u.unit === 1);
    const inodes = stats.usage.find((u) => u.unit === 2);
    assert.equal(bytes?.total, 64n * 1024n * 1024n);
    assert.ok(bytes && bytes.used >= 1024n * 1024n && bytes.used < 2n * 1024n * 1024n, `used ${bytes?.used}`);
    assert.equal(bytes?.available, 64n * 1024n * 1024n - bytes.used);
    assert.equal(inodes?.total, BigInt(fs.files));
    assert.equal(inodes?.used, 2n, 'the directory and the file');
    assert.deepEqual(stats.volumeCondition, { abnormal: false, message: 'volume directory present' });
    // The staging path is a place the volume is mounted, too.
    await c.node.nodeGetVolumeStats({ volumeId: id, volumePath: staging });
    await teardown(id, staging, [target]);
  });

  it('enforces the controller side: readonly needs PUBLISH_READONLY, unknown nodes are NOT_FOUND, max_volumes_per_node is RESOURCE_EXHAUSTED', async () => {
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await createVolume('limit'));
    const [first] = ids;
    assert.ok(first);
    await expectCode(
      c.controller.controllerPublishVolume({ volumeId: first, nodeId: NODE_ID, volumeCapability: cap, readonly: true }),
      Status.INVALID_ARGUMENT,
      'readonly without PUBLISH_READONLY',
    );
    for (const id of ids.slice(0, 4)) await c.controller.controllerPublishVolume({ volumeId: id, nodeId: NODE_ID, volumeCapability: cap });
    await expectCode(
      c.controller.controllerPublishVolume({ volumeId: ids[4] ?? '', nodeId: NODE_ID, volumeCapability: cap }),
      Status.RESOURCE_EXHAUSTED,
      'fifth volume on a node that takes four',
    );
    await expectCode(
      c.controller.controllerPublishVolume({ volumeId: first, nodeId: NODE_ID, volumeCapability: mountCapability(AccessMode.MULTI_NODE_MULTI_WRITER) }),
      Status.ALREADY_EXISTS,
      'published again with another capability',
    );
    const info = await c.node.nodeGetInfo({});
    assert.equal(info.maxVolumesPerNode, 4n);
    for (const id of ids) {
      await c.controller.controllerUnpublishVolume({ volumeId: id, nodeId: '' });
      await c.controller.deleteVolume({ volumeId: id });
    }
  });

  it('reports block capabilities as unsupported with a clear message', async () => {
    const block = { block: {}, accessMode: { mode: AccessMode.SINGLE_NODE_WRITER } };
    const err = await expectCode(
      c.controller.createVolume({ name: uniqueName('block'), volumeCapabilities: [block] }),
      Status.INVALID_ARGUMENT,
      'block volume',
    );
    assert.match(err.details, /block/);
    const id = await createVolume('validate');
    const r = await c.controller.validateVolumeCapabilities({ volumeId: id, volumeCapabilities: [cap, block] });
    assert.equal(r.confirmed, undefined);
    assert.match(r.message, /block/);
    await c.controller.deleteVolume({ volumeId: id });
  });
});

describe('hostpath plugin across a restart', () => {
  let h: Hostpath;
  let c: CsiClients;

  before(async () => {
    h = await startHostpath();
  });

  after(async () => {
    c?.close();
    await h?.cleanup();
  });

  it('knows every volume, snapshot, staging and publication after stop + a new instance on the same dataDir', async () => {
    c = connect(h.endpoint);
    const cap = mountCapability();
    const vol = (await c.controller.createVolume({ name: 'kept', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
    const snap = (await c.controller.createSnapshot({ name: 'kept-snap', sourceVolumeId: vol })).snapshot?.snapshotId ?? '';
    await c.controller.controllerPublishVolume({ volumeId: vol, nodeId: NODE_ID, volumeCapability: cap });
    const staging = path.join(h.stagingRoot, 'kept');
    await mkdir(staging);
    await c.node.nodeStageVolume({ volumeId: vol, stagingTargetPath: staging, volumeCapability: cap });
    await mkdir(path.join(h.targetRoot, 'pod'));
    const target = path.join(h.targetRoot, 'pod', 'mnt');
    await c.node.nodePublishVolume({ volumeId: vol, stagingTargetPath: staging, targetPath: target, volumeCapability: cap });
    await writeFile(path.join(target, 'before-restart.txt'), 'still here');

    await h.restart();
    assert.equal(mountsAt(target).length, 1, 'a plugin restart leaves workload mounts alone');
    assert.equal(mountsAt(staging).length, 1);

    const volumes = await c.controller.listVolumes({});
    assert.deepEqual(volumes.entries.map((e) => [e.volume?.volumeId, e.status?.publishedNodeIds]), [[vol, [NODE_ID]]]);
    const snapshots = await c.controller.listSnapshots({});
    assert.deepEqual(snapshots.entries.map((e) => [e.snapshot?.snapshotId, e.snapshot?.sourceVolumeId]), [[snap, vol]]);
    // Same name, same arguments: the volume from before the restart, not a new one.
    assert.equal((await c.controller.createVolume({ name: 'kept', volumeCapabilities: [cap] })).volume?.volumeId, vol);

    // Repeating the node calls is recognised as done; the state says where things are mounted.
    await c.node.nodeStageVolume({ volumeId: vol, stagingTargetPath: staging, volumeCapability: cap });
    await c.node.nodePublishVolume({ volumeId: vol, stagingTargetPath: staging, targetPath: target, volumeCapability: cap });
    assert.equal(mountsAt(target).length, 1);
    await expectCode(c.controller.deleteVolume({ volumeId: vol }), Status.FAILED_PRECONDITION, 'delete after restart, still in use');
    assert.equal(await readFile(path.join(target, 'before-restart.txt'), 'utf8'), 'still here');

    await c.node.nodeUnpublishVolume({ volumeId: vol, targetPath: target });
    await c.node.nodeUnstageVolume({ volumeId: vol, stagingTargetPath: staging });
    await c.controller.controllerUnpublishVolume({ volumeId: vol, nodeId: NODE_ID });
    await c.controller.deleteVolume({ volumeId: vol });
    await c.controller.deleteSnapshot({ snapshotId: snap });
    assert.equal(mountsUnder(h.root).length, 0);
    assert.deepEqual(readdirSync(path.join(h.dataDir, 'volumes')), []);
    assert.deepEqual(readdirSync(path.join(h.dataDir, 'snapshots')), []);
  });
});

describe('hostpath plugin against hostile IDs and paths', () => {
  let h: Hostpath;
  let c: CsiClients;
  const HOSTILE_IDS = ['../../etc', '..', '.', 'a/b', '/etc/passwd', 'x'.repeat(300), 'a\0b', '__proto__', 'constructor', '../canary'];

  before(async () => {
    h = await startHostpath();
    c = connect(h.endpoint);
  });

  after(async () => {
    c?.close();
    await h?.cleanup();
  });

  it('never touches anything outside the data dir, and never answers more than NOT_FOUND / OK / INVALID_ARGUMENT', async () => {
    const cap = mountCapability();
    // Something worth protecting beside the data dir, and a real volume inside it.
    await mkdir(path.join(h.root, 'canary'));
    await writeFile(path.join(h.root, 'canary', 'keep.txt'), 'do not touch');
    const real = (await c.controller.createVolume({ name: 'real', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
    const staging = path.join(h.stagingRoot, 'hostile');
    await mkdir(staging);
    await mkdir(path.join(h.targetRoot, 'hostile'));
    const target = path.join(h.targetRoot, 'hostile', 'mnt');
    const before = await treeFingerprint(h.root);
    const etcBefore = statSync('/etc').mtimeMs;

    for (const id of HOSTILE_IDS) {
      const what = (rpc: string): string => `${rpc}(${JSON.stringify(id.slice(0, 20))})`;
      await c.controller.deleteVolume({ volumeId: id });
      await c.controller.deleteSnapshot({ snapshotId: id });
      await c.controller.controllerUnpublishVolume({ volumeId: id, nodeId: NODE_ID });
      await expectCode(c.controller.validateVolumeCapabilities({ volumeId: id, volumeCapabilities: [cap] }), Status.NOT_FOUND, what('Validate'));
      await expectCode(c.controller.controllerPublishVolume({ volumeId: id, nodeId: NODE_ID, volumeCapability: cap }), Status.NOT_FOUND, what('ControllerPublish'));
      await expectCode(c.controller.controllerExpandVolume({ volumeId: id, capacityRange: { requiredBytes: 1n } }), Status.NOT_FOUND, what('ControllerExpand'));
      await expectCode(c.controller.createSnapshot({ name: uniqueName('h'), sourceVolumeId: id }), Status.NOT_FOUND, what('CreateSnapshot'));
      await expectCode(
        c.controller.createVolume({ name: uniqueName('h'), volumeCapabilities: [cap], volumeContentSource: { volume: { volumeId: id } } }),
        Status.NOT_FOUND,
        what('CreateVolume from volume'),
      );
      await expectCode(
        c.controller.createVolume({ name: uniqueName('h'), volumeCapabilities: [cap], volumeContentSource: { snapshot: { snapshotId: id } } }),
        Status.NOT_FOUND,
        what('CreateVolume from snapshot'),
      );
      await expectCode(c.node.nodeStageVolume({ volumeId: id, stagingTargetPath: staging, volumeCapability: cap }), Status.NOT_FOUND, what('NodeStage'));
      await expectCode(
        c.node.nodePublishVolume({ volumeId: id, stagingTargetPath: staging, targetPath: target, volumeCapability: cap }),
        Status.NOT_FOUND,
        what('NodePublish'),
      );
      await expectCode(c.node.nodeUnpublishVolume({ volumeId: id, targetPath: target }), Status.NOT_FOUND, what('NodeUnpublish'));
      await expectCode(c.node.nodeUnstageVolume({ volumeId: id, stagingTargetPath: staging }), Status.NOT_FOUND, what('NodeUnstage'));
      await expectCode(c.node.nodeGetVolumeStats({ volumeId: id, volumePath: staging }), Status.NOT_FOUND, what('NodeGetVolumeStats'));
      await expectCode(c.node.nodeExpandVolume({ volumeId: id, volumePath: staging }), Status.NOT_FOUND, what('NodeExpand'));
      assert.equal((await c.controller.listSnapshots({ snapshotId: id })).entries.length, 0);
      assert.equal((await c.controller.listSnapshots({ sourceVolumeId: id })).entries.length, 0);
    }

    assert.deepEqual(await treeFingerprint(h.root), before, 'hostile IDs changed something on disk');
    assert.equal(statSync('/etc').mtimeMs, etcBefore);
    assert.equal(await readFile(path.join(h.root, 'canary', 'keep.txt'), 'utf8'), 'do not touch');
    assert.equal(mountsUnder(h.root).length, 0);
    await c.controller.deleteVolume({ volumeId: real });
  });

  it('refuses staging and target paths inside its data dir, relative or with NUL (INVALID_ARGUMENT)', async () => {
    const cap = mountCapability();
    const id = (await c.controller.createVolume({ name: 'paths', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
    const inside = path.join(h.dataDir, 'volumes');
    const sneaky = path.join(h.stagingRoot, '..', 'data', 'snapshots');
    // A symlink the CO (or a workload) planted, pointing into the data dir.
    const link = path.join(h.stagingRoot, 'link');
    await symlink(inside, link);
    for (const p of [inside, sneaky, link, 'relative/dir', `${h.stagingRoot}/a\0b`]) {
      await expectCode(c.node.nodeStageVolume({ volumeId: id, stagingTargetPath: p, volumeCapability: cap }), Status.INVALID_ARGUMENT, `stage at ${p}`);
    }
    const staging = path.join(h.stagingRoot, 'paths');
    await mkdir(staging);
    await c.node.nodeStageVolume({ volumeId: id, stagingTargetPath: staging, volumeCapability: cap });
    for (const p of [path.join(inside, 'x'), path.join(sneaky, 'x'), path.join(link, 'x'), 'relative/target']) {
      await expectCode(
        c.node.nodePublishVolume({ volumeId: id, stagingTargetPath: staging, targetPath: p, volumeCapability: cap }),
        Status.INVALID_ARGUMENT,
        `publish at ${p}`,
      );
    }
    assert.equal(mountsUnder(h.dataDir).length, 0, 'nothing was mounted inside the data dir');
    await c.node.nodeUnstageVolume({ volumeId: id, stagingTargetPath: staging });
    await c.controller.deleteVolume({ volumeId: id });
  });
});
