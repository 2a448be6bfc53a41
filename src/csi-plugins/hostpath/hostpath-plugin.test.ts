import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { link, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ClientError, createChannel, createClient, Status, type Channel } from 'nice-grpc';
import {
  ControllerDefinition,
  ControllerServiceCapability_RPC_Type as ControllerRpc,
  IdentityDefinition,
  NodeDefinition,
  PluginCapability_Service_Type as ServiceType,
  type ControllerClient,
  type IdentityClient,
  type NodeClient,
} from '../../gen/csi/v1/csi.js';
import { createLogger } from '../../lib/index.js';
import { bindMount, readMountInfo, unmount, unmountAllUnder } from './_mount.js';
import { HOSTPATH_PLUGIN_NAME, HOSTPATH_VERSION, HostpathPlugin, type HostpathOptions } from './index.js';
import { eventually } from '../../../test/support/eventually.js';

const cap = { mount: { fsType: '', mountFlags: [] }, accessMode: { mode: 1 } };

interface Clients {
  identity: IdentityClient;
  controller: ControllerClient;
  node: NodeClient;
}

async function codeOf(call: Promise<unknown>): Promise<Status> {
  try {
    await call;
    return Status.OK;
  } catch (err) {
    if (err instanceof ClientError) return err.code;
    throw err;
  }
}

describe('HostpathPlugin', () => {
  let root: string;
  let plugins: HostpathPlugin[];
  let channels: Channel[];

  const options = (extra: Partial<HostpathOptions> = {}): HostpathOptions => ({
    endpoint: `unix://${root}/csi.sock`,
    nodeId: 'node-a',
    dataDir: path.join(root, 'data'),
    capacityBytes: 1024 ** 4,
    ...extra,
  });

  const start = async (extra: Partial<HostpathOptions> = {}): Promise<HostpathPlugin> => {
    const p = new HostpathPlugin(options(extra));
    plugins.push(p);
    await p.start();
    return p;
  };

  const clients = (endpoint: string): Clients => {
    const channel = createChannel(endpoint);
    channels.push(channel);
    return {
      identity: createClient(IdentityDefinition, channel),
      controller: createClient(ControllerDefinition, channel),
      node: createClient(NodeDefinition, channel),
    };
  };

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'bh-p-'));
    plugins = [];
    channels = [];
  });

  afterEach(async () => {
    for (const ch of channels) ch.close();
    for (const p of plugins) await p.stop();
    await unmountAllUnder(root);
    await rm(root, { recursive: true, force: true });
  });

  describe('options and lifecycle', () => {
    it('refuses bad options with HOSTPATH_INVALID_OPTIONS before doing any I/O', () => {
      const bad: Partial<HostpathOptions>[] = [
        { endpoint: 'tcp://localhost:1' },
        { endpoint: 'unix://relative.sock' },
        { endpoint: `unix:///${'x'.repeat(120)}.sock` },
        { nodeId: '' },
        { nodeId: 'n'.repeat(257) },
        { dataDir: 'relative' },
        { maxVolumesPerNode: -1 },
        { capacityBytes: 1.5 },
        { mode: 'both' as HostpathOptions['mode'] },
      ];
      for (const b of bad) assert.throws(() => new HostpathPlugin(options(b)), { code: 'HOSTPATH_INVALID_OPTIONS' }, JSON.stringify(b));
      assert.ok(!existsSync(path.join(root, 'data')));
    });

    it('starts once, stops once however often asked, removes its socket and cannot be started again', async () => {
      const p = new HostpathPlugin(options());
      plugins.push(p);
      assert.equal(p.status, 'new');
      const a = p.start();
      assert.equal(p.start(), a, 'a second start() returns the same start');
      await a;
      assert.equal(p.status, 'running');
      const socket = path.join(root, 'csi.sock');
      assert.ok(existsSync(socket));
      await Promise.all([p.stop(), p.stop()]);
      assert.equal(p.status, 'stopped');
      assert.ok(!existsSync(socket), 'stop() removes the socket');
      await assert.rejects(p.start(), { code: 'HOSTPATH_STOPPED' });
      await new HostpathPlugin(options()).stop();
    });

    it('waits for calls in flight before stop() resolves', async () => {
      const p = await start();
      const c = clients(p.endpoint);
      // A clone copies a file tree, long enough to still be running when stop() is called.
      const src = (await c.controller.createVolume({ name: 'src', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
      const srcDir = path.join(root, 'data', 'volumes', src);
      for (let i = 0; i < 200; i++) await writeFile(path.join(srcDir, `f${i}`), 'x'.repeat(4096));
      const clone = c.controller.createVolume({ name: 'clone', volumeCapabilities: [cap], volumeContentSource: { volume: { volumeId: src } } });
      // Stop while the copy is under way: it shows up in tmp/ until it is complete.
      const tmp = path.join(root, 'data', 'tmp');
      await eventually('the clone to start copying', async () => (await readdir(tmp)).length > 0, { intervalMs: 1 });
      await p.stop();
      const done = await clone;
      const id = done.volume?.volumeId ?? '';
      assert.equal((await readdir(path.join(root, 'data', 'volumes', id))).length, 200, 'the clone finished before stop resolved');
      const state = JSON.parse(await readFile(path.join(root, 'data', 'controller-state.json'), 'utf8')) as { volumes: { id: string }[] };
      assert.ok(state.volumes.some((v) => v.id === id), 'and its record was written');
    });

    it('replaces a stale socket but refuses to delete a file that is not a socket', async () => {
      const first = await start();
      // Simulate a crash: keep the socket file past stop() (which removes it) through a hard link.
      const socket = path.join(root, 'csi.sock');
      await link(socket, `${socket}.kept`);
      await first.stop();
      await rename(`${socket}.kept`, socket);
      assert.ok((await lstat(socket)).isSocket());
      const p = new HostpathPlugin(options());
      plugins.push(p);
      await p.start();
      await writeFile(path.join(root, 'other'), 'keep');
      assert.equal((await clients(p.endpoint).identity.getPluginInfo({})).name, HOSTPATH_PLUGIN_NAME);
      const q = new HostpathPlugin(options({ endpoint: `unix://${root}/other`, dataDir: path.join(root, 'data2') }));
      plugins.push(q);
      await assert.rejects(q.start(), { code: 'HOSTPATH_INVALID_OPTIONS' });
      assert.equal(await readFile(path.join(root, 'other'), 'utf8'), 'keep');
    });

    it('clears half-made copies a crash left in tmp/', async () => {
      await mkdir(path.join(root, 'data', 'tmp', 'half-copied'), { recursive: true });
      await start();
      assert.deepEqual(await readdir(path.join(root, 'data', 'tmp')), []);
    });
  });

  describe('identity', () => {
    it('reports its name, package.json\'s version, readiness and capabilities', async () => {
      const p = await start();
      const c = clients(p.endpoint);
      const pkg = JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
      const info = await c.identity.getPluginInfo({});
      assert.deepEqual([info.name, info.vendorVersion], [HOSTPATH_PLUGIN_NAME, pkg.version]);
      assert.equal(HOSTPATH_VERSION, pkg.version);
      assert.equal((await c.identity.probe({})).ready, true);
      const caps = (await c.identity.getPluginCapabilities({})).capabilities;
      assert.deepEqual(
        caps.map((x) => x.service?.type ?? `expansion:${x.volumeExpansion?.type}`),
        [ServiceType.CONTROLLER_SERVICE, ServiceType.VOLUME_ACCESSIBILITY_CONSTRAINTS, 'expansion:1'],
      );
    });
  });

  describe('modes', () => {
    it('a node-only instance serves Identity and Node, and does not advertise or serve the Controller', async () => {
      const p = await start({ mode: 'node' });
      const c = clients(p.endpoint);
      const caps = (await c.identity.getPluginCapabilities({})).capabilities;
      assert.ok(!caps.some((x) => x.service?.type === ServiceType.CONTROLLER_SERVICE));
      assert.equal(await codeOf(c.controller.controllerGetCapabilities({})), Status.UNIMPLEMENTED);
      assert.equal((await c.node.nodeGetInfo({})).nodeId, 'node-a');
    });

    it('a controller-only instance does not serve the Node service', async () => {
      const p = await start({ mode: 'controller' });
      const c = clients(p.endpoint);
      assert.equal(await codeOf(c.node.nodeGetInfo({})), Status.UNIMPLEMENTED);
      assert.equal(await codeOf(c.controller.controllerGetCapabilities({})), Status.OK);
    });

    it('publishUnpublish=false neither advertises nor serves ControllerPublish/Unpublish', async () => {
      const p = await start({ publishUnpublish: false });
      const c = clients(p.endpoint);
      const caps = (await c.controller.controllerGetCapabilities({})).capabilities.map((x) => x.rpc?.type);
      assert.ok(!caps.includes(ControllerRpc.PUBLISH_UNPUBLISH_VOLUME));
      const vol = (await c.controller.createVolume({ name: 'v', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
      assert.equal(await codeOf(c.controller.controllerPublishVolume({ volumeId: vol, nodeId: 'node-a', volumeCapability: cap })), Status.UNIMPLEMENTED);
      assert.equal(await codeOf(c.controller.controllerUnpublishVolume({ volumeId: vol, nodeId: 'node-a' })), Status.UNIMPLEMENTED);
    });

    it('a controller instance and a node instance can share one data directory, as separate plugin tasks do', async () => {
      const ctl = await start({ mode: 'controller', endpoint: `unix://${root}/ctl.sock` });
      const node = await start({ mode: 'node', endpoint: `unix://${root}/node.sock` });
      const c = clients(ctl.endpoint);
      const n = clients(node.endpoint);
      const vol = (await c.controller.createVolume({ name: 'shared', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
      await c.controller.controllerPublishVolume({ volumeId: vol, nodeId: 'node-a', volumeCapability: cap });
      const staging = path.join(root, 'stage');
      await mkdir(staging);
      await n.node.nodeStageVolume({ volumeId: vol, stagingTargetPath: staging, volumeCapability: cap });
      await c.controller.controllerUnpublishVolume({ volumeId: vol, nodeId: 'node-a' });
      assert.equal(await codeOf(c.controller.deleteVolume({ volumeId: vol })), Status.FAILED_PRECONDITION, 'the controller sees the node still stages it');
      await n.node.nodeUnstageVolume({ volumeId: vol, stagingTargetPath: staging });
      await c.controller.deleteVolume({ volumeId: vol });
      assert.equal(await codeOf(n.node.nodeStageVolume({ volumeId: vol, stagingTargetPath: staging, volumeCapability: cap })), Status.NOT_FOUND);
      assert.equal((await readMountInfo()).filter((m) => m.mountPoint.startsWith(root)).length, 0);
    });
  });

  describe('safety', () => {
    it('never books more capacity than it has, even for creations that run at the same time', async () => {
      const GiB = 1024 ** 3;
      const p = await start({ capacityBytes: 3 * GiB });
      const c = clients(p.endpoint);
      const codes = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          codeOf(c.controller.createVolume({ name: `v${i}`, volumeCapabilities: [cap], capacityRange: { requiredBytes: BigInt(GiB) } })),
        ),
      );
      assert.ok(codes.every((x) => x === Status.OK || x === Status.OUT_OF_RANGE), codes.join());
      const listed = (await c.controller.listVolumes({})).entries;
      assert.ok(listed.length <= 3, `${listed.length} volumes of 1 GiB in 3 GiB`);
      assert.equal((await c.controller.getCapacity({})).availableCapacity, BigInt((3 - listed.length) * GiB));
    });

    it('refuses to delete a volume whose directory is bind-mounted somewhere it has no record of', async () => {
      const p = await start();
      const c = clients(p.endpoint);
      const vol = (await c.controller.createVolume({ name: 'v', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
      const elsewhere = path.join(root, 'by-hand');
      await mkdir(elsewhere);
      await bindMount(path.join(root, 'data', 'volumes', vol), elsewhere);
      assert.equal(await codeOf(c.controller.deleteVolume({ volumeId: vol })), Status.FAILED_PRECONDITION);
      await unmount(elsewhere);
      await c.controller.deleteVolume({ volumeId: vol });
    });
  });

  describe('a volume whose directory vanished', () => {
    it('unpublishes and unstages as success (the spec: a target that is gone is done), leaving no mount and no record', async () => {
      const p = await start();
      const c = clients(p.endpoint);
      const vol = (await c.controller.createVolume({ name: 'v', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
      const staging = path.join(root, 'stage');
      const target = path.join(root, 'pub', 'target');
      await mkdir(staging);
      await mkdir(path.dirname(target));
      await c.node.nodeStageVolume({ volumeId: vol, stagingTargetPath: staging, volumeCapability: cap });
      await c.node.nodePublishVolume({ volumeId: vol, stagingTargetPath: staging, targetPath: target, volumeCapability: cap, readonly: false });
      // An admin's rm -rf of the volume's directory while it is published.
      await rm(path.join(root, 'data', 'volumes', vol), { recursive: true });
      const stats = await c.node.nodeGetVolumeStats({ volumeId: vol, volumePath: target });
      assert.equal(stats.volumeCondition?.abnormal, true);
      // Before: FAILED_PRECONDITION "... not touching it", for ever.
      assert.equal(await codeOf(c.node.nodeUnpublishVolume({ volumeId: vol, targetPath: target })), Status.OK);
      assert.equal(await codeOf(c.node.nodeUnpublishVolume({ volumeId: vol, targetPath: target })), Status.OK, 'and again');
      assert.equal(await codeOf(c.node.nodeUnstageVolume({ volumeId: vol, stagingTargetPath: staging })), Status.OK);
      assert.equal((await readMountInfo()).filter((m) => m.mountPoint.startsWith(root)).length, 0);
      assert.ok(!existsSync(target), 'the target directory NodePublish made is gone');
      const nodeState = JSON.parse(await readFile(path.join(root, 'data', 'node-state.json'), 'utf8')) as { volumes: unknown[] };
      assert.deepEqual(nodeState.volumes, []);
    });

    it('still refuses a target where something else is mounted', async () => {
      const p = await start();
      const c = clients(p.endpoint);
      const vol = (await c.controller.createVolume({ name: 'v', volumeCapabilities: [cap] })).volume?.volumeId ?? '';
      await rm(path.join(root, 'data', 'volumes', vol), { recursive: true });
      const other = path.join(root, 'other');
      const target = path.join(root, 'target');
      await mkdir(other);
      await mkdir(target);
      await bindMount(other, target);
      assert.equal(await codeOf(c.node.nodeUnpublishVolume({ volumeId: vol, targetPath: target })), Status.FAILED_PRECONDITION);
      assert.equal((await readMountInfo()).filter((m) => m.mountPoint === target).length, 1);
    });
  });

  describe('errors and logs', () => {
    it('never logs secrets or mount flags, and logs as component hostpath', async () => {
      const lines: string[] = [];
      const destination = new Writable({
        write(chunk: Buffer, _enc, cb) {
          lines.push(chunk.toString());
          cb();
        },
      });
      const p = await start({ logger: createLogger({ level: 'debug', destination }) });
      const c = clients(p.endpoint);
      const secrets = { password: 'hunter2-secret' };
      const flagged = { mount: { fsType: '', mountFlags: ['password=hunter2-flag'] }, accessMode: { mode: 1 } };
      const vol = (await c.controller.createVolume({ name: 'v', volumeCapabilities: [flagged], secrets, parameters: { p: '1' } })).volume?.volumeId ?? '';
      await c.controller.controllerPublishVolume({ volumeId: vol, nodeId: 'node-a', volumeCapability: flagged, secrets });
      const staging = path.join(root, 'stage');
      await mkdir(staging);
      await c.node.nodeStageVolume({ volumeId: vol, stagingTargetPath: staging, volumeCapability: flagged, secrets });
      await codeOf(c.node.nodeStageVolume({ volumeId: vol, stagingTargetPath: staging, volumeCapability: cap, secrets }));
      await codeOf(c.node.nodePublishVolume({ volumeId: vol, stagingTargetPath: '/nonexistent', targetPath: '/x/y', volumeCapability: flagged, secrets }));
      await c.node.nodeUnstageVolume({ volumeId: vol, stagingTargetPath: staging });
      await p.stop();
      const out = lines.join('');
      assert.match(out, /"component":"hostpath"/);
      assert.match(out, /volume staged/);
      assert.doesNotMatch(out, /hunter2/);
      const files = await Promise.all(['controller-state.json', 'node-state.json'].map((f) => readFile(path.join(root, 'data', f), 'utf8')));
      assert.doesNotMatch(files.join(''), /hunter2/, 'nor are they written to the state files');
    });

    it('turns unexpected failures into INTERNAL with a message, not UNKNOWN', async () => {
      const p = await start();
      const c = clients(p.endpoint);
      // Sabotage the layout under the running plugin.
      await rm(path.join(root, 'data', 'volumes'), { recursive: true });
      await writeFile(path.join(root, 'data', 'volumes'), 'not a directory');
      const err = await c.controller.createVolume({ name: 'v', volumeCapabilities: [cap] }).catch((e: unknown) => e);
      assert.ok(err instanceof ClientError);
      assert.equal(err.code, Status.INTERNAL);
      assert.notEqual(err.details, '');
    });
  });
});
