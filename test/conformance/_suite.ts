// Berth's CSI conformance suite, in the spirit of kubernetes-csi's csi-sanity:
// it drives a plugin over its socket with raw generated clients and checks
// what the CSI spec (v1.12) asks of it, choosing checks by what the plugin
// advertises. Anything a test creates is torn down after it (unpublish,
// unstage, controller unpublish, delete), even when the test failed.
//
// Usage (node:test):
//   describeConformance('my plugin', async () => ({ endpoint, stagingRoot, targetRoot, cleanup }));

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { after, afterEach, before, describe, it, type TestContext } from 'node:test';
import type {
  CreateVolumeRequest,
  DeepPartial,
  Topology,
  Volume,
  VolumeCapability,
} from '../../src/gen/csi/v1/csi.js';
import {
  AccessMode,
  blockCapability,
  codeOf,
  connect,
  ControllerRpc,
  expectCode,
  mountCapability,
  NodeRpc,
  readAdvertised,
  ServiceType,
  Status,
  uniqueName,
  type Advertised,
  type CsiClients,
} from './_clients.js';
import { describeController } from './_controller.js';
import {
  EXPANDED_SIZE,
  KNOWN_NODE_RPCS,
  KNOWN_SERVICES,
  PLUGIN_NAME_PATTERN,
  Resources,
  VOLUME_SIZE,
  waitUntilReady,
} from './_kit.js';

/** A plugin under test, as `makePlugin` hands it to the suite. */
export interface ConformanceTarget {
  /** The plugin's socket, 'unix:///abs/path.sock'. */
  endpoint: string;
  /** A directory the suite may create staging directories in (the CO's job). */
  stagingRoot: string;
  /** A directory the suite may create target parents in. */
  targetRoot: string;
  /** Stops the plugin and removes everything it left, mounts included. Called once, after every test. */
  cleanup(): Promise<void>;
}

export function describeConformance(name: string, makePlugin: () => Promise<ConformanceTarget>): void {
  describe(`CSI conformance: ${name}`, () => {
    let target: ConformanceTarget | undefined;
    let clients: CsiClients | undefined;
    let adv: Advertised;
    let nodeId = '';
    let nodeTopology: Topology | undefined;
    const c = (): CsiClients => {
      assert.ok(clients, 'the plugin did not start');
      return clients;
    };
    const res = new Resources(c);

    before(async () => {
      target = await makePlugin();
      clients = connect(target.endpoint);
      await waitUntilReady(clients);
      adv = await readAdvertised(clients);
      if (adv.node.size > 0 || (await codeOf(clients.node.nodeGetInfo({}))) === Status.OK) {
        const info = await clients.node.nodeGetInfo({});
        nodeId = info.nodeId;
        nodeTopology = info.accessibleTopology;
      }
    });

    afterEach(() => res.cleanup());

    after(async () => {
      try {
        if (clients) await res.cleanup();
      } finally {
        clients?.close();
        await target?.cleanup();
      }
    });

    // What the plugin offers, for skipping.
    const controller = (): boolean => adv.plugin.has(ServiceType.CONTROLLER_SERVICE);
    const ctl = (rpc: ControllerRpc): boolean => controller() && adv.controller.has(rpc);
    const hasNode = (): boolean => nodeId !== '';
    const stages = (): boolean => adv.node.has(NodeRpc.STAGE_UNSTAGE_VOLUME);
    const skipUnless = (t: TestContext, cond: boolean, why: string): boolean => {
      if (!cond) t.skip(why);
      return !cond;
    };

    const volumeRequest = (prefix: string, extra: DeepPartial<CreateVolumeRequest> = {}): DeepPartial<CreateVolumeRequest> => ({
      name: uniqueName(prefix),
      volumeCapabilities: [mountCapability()],
      capacityRange: { requiredBytes: VOLUME_SIZE },
      ...(nodeTopology ? { accessibilityRequirements: { requisite: [nodeTopology] } } : {}),
      ...extra,
    });

    /** A fresh staging directory, created as a CO does. */
    const stagingPath = async (): Promise<string> => {
      assert.ok(target);
      const p = path.join(target.stagingRoot, uniqueName('stage'));
      await mkdir(p, { recursive: true });
      return p;
    };

    /** A fresh target path whose parent exists (the CO's part); the plugin creates the target itself. */
    const targetPath = async (): Promise<string> => {
      assert.ok(target);
      const parent = path.join(target.targetRoot, uniqueName('pod'));
      await mkdir(parent, { recursive: true });
      return path.join(parent, 'mount');
    };

    /** ControllerPublish (when advertised) + NodeStage (when advertised) + NodePublish; returns the target path. */
    const mountVolume = async (
      volume: Volume,
      opts: { readonly?: boolean; capability?: DeepPartial<VolumeCapability> } = {},
    ): Promise<{ target: string; staging: string; publishContext: Record<string, string> }> => {
      const capability = opts.capability ?? mountCapability();
      let publishContext: Record<string, string> = {};
      if (ctl(ControllerRpc.PUBLISH_UNPUBLISH_VOLUME)) {
        const r = await c().controller.controllerPublishVolume({ volumeId: volume.volumeId, nodeId, volumeCapability: capability, volumeContext: volume.volumeContext });
        res.attached(volume.volumeId, nodeId);
        publishContext = r.publishContext;
      }
      let staging = '';
      if (stages()) {
        staging = await stagingPath();
        await c().node.nodeStageVolume({ volumeId: volume.volumeId, stagingTargetPath: staging, volumeCapability: capability, publishContext, volumeContext: volume.volumeContext });
        res.staged(volume.volumeId, staging);
      }
      const target = await targetPath();
      await c().node.nodePublishVolume({
        volumeId: volume.volumeId,
        stagingTargetPath: staging,
        targetPath: target,
        volumeCapability: capability,
        readonly: opts.readonly ?? false,
        publishContext,
        volumeContext: volume.volumeContext,
      });
      res.published(volume.volumeId, target);
      return { target, staging, publishContext };
    };

    /** The reverse of mountVolume, checking each step. */
    const unmountVolume = async (volumeId: string, m: { target: string; staging: string }): Promise<void> => {
      await c().node.nodeUnpublishVolume({ volumeId, targetPath: m.target });
      if (m.staging) await c().node.nodeUnstageVolume({ volumeId, stagingTargetPath: m.staging });
      if (ctl(ControllerRpc.PUBLISH_UNPUBLISH_VOLUME)) await c().controller.controllerUnpublishVolume({ volumeId, nodeId });
    };

    describe('Identity', () => {
      it('GetPluginInfo names the plugin in domain form (<= 63 chars) with a vendor version', async () => {
        const info = await c().identity.getPluginInfo({});
        assert.ok(info.name.length > 0 && info.name.length <= 63, `name ${JSON.stringify(info.name)} must be 1..63 characters`);
        assert.match(info.name, PLUGIN_NAME_PATTERN, 'name must begin and end with an alphanumeric, with only [a-zA-Z0-9.-] between');
        assert.notEqual(info.vendorVersion, '', 'vendor_version is required');
      });

      it('GetPluginCapabilities lists only capabilities the spec defines', async () => {
        const caps = await c().identity.getPluginCapabilities({});
        for (const cap of caps.capabilities) {
          assert.ok(cap.service || cap.volumeExpansion, 'each capability must set a type');
          if (cap.service) assert.ok(KNOWN_SERVICES.has(cap.service.type), `unknown service type ${cap.service.type}`);
        }
      });

      it('Probe answers without error and reports ready (or leaves ready unset)', async () => {
        const probe = await c().identity.probe({});
        assert.notEqual(probe.ready, false, 'a plugin that finished starting must not report ready=false');
      });
    });

    describeController({
      state: () => ({ adv, nodeId, nodeTopology }),
      c,
      res,
      controller,
      ctl,
      hasNode,
      stages,
      skipUnless,
      volumeRequest,
      stagingPath,
      targetPath,
      mountVolume,
      unmountVolume,
    });

    describe('Node', () => {
      const needsNode = (t: TestContext): boolean => skipUnless(t, hasNode(), 'no Node service');
      const needsVolumes = (t: TestContext): boolean =>
        skipUnless(t, hasNode() && ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs a Node service and CreateVolume');

      it('NodeGetCapabilities lists only capabilities the spec defines', async (t) => {
        if (needsNode(t)) return;
        for (const rpc of adv.node) assert.ok(KNOWN_NODE_RPCS.has(rpc), `unknown node capability ${rpc}`);
      });

      it('NodeGetInfo gives a node id (<= 256 bytes), a volume limit >= 0 and, with accessibility constraints, a topology', async (t) => {
        if (needsNode(t)) return;
        const info = await c().node.nodeGetInfo({});
        assert.ok(info.nodeId !== '' && Buffer.byteLength(info.nodeId) <= 256);
        assert.ok(info.maxVolumesPerNode >= 0n);
        if (adv.plugin.has(ServiceType.VOLUME_ACCESSIBILITY_CONSTRAINTS)) assert.ok(info.accessibleTopology, 'accessible_topology is due');
      });

      it('NodeStageVolume refuses missing volume_id, staging path or capability (INVALID_ARGUMENT), and an unknown volume (NOT_FOUND)', async (t) => {
        if (needsNode(t) || skipUnless(t, stages(), 'STAGE_UNSTAGE_VOLUME not advertised')) return;
        const staging = await stagingPath();
        const n = c().node;
        await expectCode(n.nodeStageVolume({ stagingTargetPath: staging, volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(n.nodeStageVolume({ volumeId: 'v', volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no staging path');
        await expectCode(n.nodeStageVolume({ volumeId: 'v', stagingTargetPath: staging }), Status.INVALID_ARGUMENT, 'no capability');
        await expectCode(
          n.nodeStageVolume({ volumeId: 'no-such-volume', stagingTargetPath: staging, volumeCapability: mountCapability() }),
          Status.NOT_FOUND,
          'unknown volume',
        );
      });

      it('NodeUnstageVolume refuses missing volume_id or staging path (INVALID_ARGUMENT)', async (t) => {
        if (needsNode(t) || skipUnless(t, stages(), 'STAGE_UNSTAGE_VOLUME not advertised')) return;
        await expectCode(c().node.nodeUnstageVolume({ stagingTargetPath: await stagingPath() }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(c().node.nodeUnstageVolume({ volumeId: 'v' }), Status.INVALID_ARGUMENT, 'no staging path');
      });

      it('NodePublishVolume refuses missing volume_id, target path or capability (INVALID_ARGUMENT), and an unknown volume (NOT_FOUND)', async (t) => {
        if (needsNode(t)) return;
        const target = await targetPath();
        const staging = stages() ? await stagingPath() : '';
        const n = c().node;
        await expectCode(n.nodePublishVolume({ targetPath: target, stagingTargetPath: staging, volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(n.nodePublishVolume({ volumeId: 'v', stagingTargetPath: staging, volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no target path');
        await expectCode(n.nodePublishVolume({ volumeId: 'v', targetPath: target, stagingTargetPath: staging }), Status.INVALID_ARGUMENT, 'no capability');
        await expectCode(
          n.nodePublishVolume({ volumeId: 'no-such-volume', targetPath: target, stagingTargetPath: staging, volumeCapability: mountCapability() }),
          Status.NOT_FOUND,
          'unknown volume',
        );
        assert.ok(!existsSync(target), 'a refused NodePublish left the target path behind');
      });

      it('NodeUnpublishVolume refuses missing volume_id or target path (INVALID_ARGUMENT)', async (t) => {
        if (needsNode(t)) return;
        await expectCode(c().node.nodeUnpublishVolume({ targetPath: await targetPath() }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(c().node.nodeUnpublishVolume({ volumeId: 'v' }), Status.INVALID_ARGUMENT, 'no target path');
      });

      it('NodeGetVolumeStats refuses missing fields (INVALID_ARGUMENT); unknown volume or a path it is not at is NOT_FOUND', async (t) => {
        if (needsNode(t) || skipUnless(t, adv.node.has(NodeRpc.GET_VOLUME_STATS), 'GET_VOLUME_STATS not advertised')) return;
        const n = c().node;
        await expectCode(n.nodeGetVolumeStats({ volumePath: '/some/path' }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(n.nodeGetVolumeStats({ volumeId: 'v' }), Status.INVALID_ARGUMENT, 'no volume_path');
        await expectCode(n.nodeGetVolumeStats({ volumeId: 'no-such-volume', volumePath: '/some/path' }), Status.NOT_FOUND, 'unknown volume');
        if (!ctl(ControllerRpc.CREATE_DELETE_VOLUME)) return;
        const vol = await res.createVolume(volumeRequest('stats'));
        await mountVolume(vol);
        await expectCode(n.nodeGetVolumeStats({ volumeId: vol.volumeId, volumePath: 'some/path' }), Status.NOT_FOUND, 'relative path');
        await expectCode(n.nodeGetVolumeStats({ volumeId: vol.volumeId, volumePath: await targetPath() }), Status.NOT_FOUND, 'path it is not at');
      });

      it('NodeExpandVolume refuses missing fields (INVALID_ARGUMENT); an unknown volume is NOT_FOUND', async (t) => {
        if (needsNode(t) || skipUnless(t, adv.node.has(NodeRpc.EXPAND_VOLUME), 'node EXPAND_VOLUME not advertised')) return;
        const n = c().node;
        await expectCode(n.nodeExpandVolume({ volumePath: '/some/path' }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(n.nodeExpandVolume({ volumeId: 'no-such-volume', volumePath: 'some/path' }), Status.NOT_FOUND, 'unknown volume');
        if (!ctl(ControllerRpc.CREATE_DELETE_VOLUME)) return;
        const vol = await res.createVolume(volumeRequest('nexpand'));
        await expectCode(n.nodeExpandVolume({ volumeId: vol.volumeId }), Status.INVALID_ARGUMENT, 'no volume_path');
      });

      it('runs the whole lifecycle, every step repeated once (idempotency), and NodeUnpublish removes the target', async (t) => {
        if (needsVolumes(t)) return;
        const vol = await res.createVolume(volumeRequest('life'));
        const capability = mountCapability();
        let publishContext: Record<string, string> = {};
        const attach = ctl(ControllerRpc.PUBLISH_UNPUBLISH_VOLUME);
        for (let i = 0; i < 2 && attach; i++) {
          publishContext = (await c().controller.controllerPublishVolume({ volumeId: vol.volumeId, nodeId, volumeCapability: capability, volumeContext: vol.volumeContext })).publishContext;
          res.attached(vol.volumeId, nodeId);
        }
        const staging = stages() ? await stagingPath() : '';
        for (let i = 0; i < 2 && staging; i++) {
          await c().node.nodeStageVolume({ volumeId: vol.volumeId, stagingTargetPath: staging, volumeCapability: capability, publishContext, volumeContext: vol.volumeContext });
          res.staged(vol.volumeId, staging);
        }
        const target = await targetPath();
        for (let i = 0; i < 2; i++) {
          await c().node.nodePublishVolume({ volumeId: vol.volumeId, stagingTargetPath: staging, targetPath: target, volumeCapability: capability, publishContext, volumeContext: vol.volumeContext });
          res.published(vol.volumeId, target);
        }
        assert.ok(existsSync(target), 'NodePublish must create the target path');

        if (adv.node.has(NodeRpc.GET_VOLUME_STATS)) {
          const stats = await c().node.nodeGetVolumeStats({ volumeId: vol.volumeId, volumePath: target, stagingTargetPath: staging });
          assert.ok(stats.usage.length > 0, 'stats report some usage');
          for (const u of stats.usage) assert.ok(u.total === 0n || u.available <= u.total, 'available <= total');
        }

        if (adv.node.has(NodeRpc.EXPAND_VOLUME) && adv.onlineExpansion) {
          if (ctl(ControllerRpc.EXPAND_VOLUME)) {
            await c().controller.controllerExpandVolume({ volumeId: vol.volumeId, capacityRange: { requiredBytes: EXPANDED_SIZE }, volumeCapability: capability });
          }
          const grown = await c().node.nodeExpandVolume({ volumeId: vol.volumeId, volumePath: target, stagingTargetPath: staging, capacityRange: { requiredBytes: EXPANDED_SIZE }, volumeCapability: capability });
          assert.ok(grown.capacityBytes === 0n || grown.capacityBytes >= EXPANDED_SIZE);
        }

        for (let i = 0; i < 2; i++) await c().node.nodeUnpublishVolume({ volumeId: vol.volumeId, targetPath: target });
        assert.ok(!existsSync(target), 'NodeUnpublish must remove the target path the plugin created');
        for (let i = 0; i < 2 && staging; i++) await c().node.nodeUnstageVolume({ volumeId: vol.volumeId, stagingTargetPath: staging });
        for (let i = 0; i < 2 && attach; i++) await c().controller.controllerUnpublishVolume({ volumeId: vol.volumeId, nodeId });
        for (let i = 0; i < 2; i++) await c().controller.deleteVolume({ volumeId: vol.volumeId });
      });

      it('publishes one volume at two targets with different readonly flags, but refuses a changed flag at the same target (ALREADY_EXISTS)', async (t) => {
        if (needsVolumes(t)) return;
        const vol = await res.createVolume(volumeRequest('twotargets'));
        const rw = await mountVolume(vol);
        const ro = await targetPath();
        const req = { volumeId: vol.volumeId, stagingTargetPath: rw.staging, volumeCapability: mountCapability(), publishContext: rw.publishContext, volumeContext: vol.volumeContext };
        await c().node.nodePublishVolume({ ...req, targetPath: ro, readonly: true });
        res.published(vol.volumeId, ro);
        await expectCode(c().node.nodePublishVolume({ ...req, targetPath: rw.target, readonly: true }), Status.ALREADY_EXISTS, 'same target, now readonly');
        await expectCode(
          c().node.nodePublishVolume({ ...req, targetPath: rw.target, volumeCapability: mountCapability(AccessMode.MULTI_NODE_MULTI_WRITER) }),
          Status.ALREADY_EXISTS,
          'same target, other access mode',
        );
      });

      it('refuses a block capability for a mount-only plugin, or accepts it consistently', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs CreateVolume')) return;
        const code = await codeOf(res.createVolume(volumeRequest('block', { volumeCapabilities: [blockCapability()] })));
        if (code === Status.OK) return;
        assert.equal(code, Status.INVALID_ARGUMENT, `a block capability the plugin cannot serve is INVALID_ARGUMENT, got ${Status[code]}`);
        const vol = await res.createVolume(volumeRequest('block-validate'));
        const r = await c().controller.validateVolumeCapabilities({ volumeId: vol.volumeId, volumeCapabilities: [blockCapability()] });
        assert.equal(r.confirmed, undefined, 'a plugin that refuses block volumes must not confirm a block capability');
      });
    });
  });
}
