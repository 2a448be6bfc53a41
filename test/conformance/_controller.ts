// The Controller section of the CSI conformance suite (see _suite.ts):
// ControllerGetCapabilities, CreateVolume, DeleteVolume, validation,
// publish/unpublish, listing, capacity, snapshots, expansion and
// ControllerGetVolume, each check chosen by what the plugin advertises.
// Private to test/conformance.

import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { before, describe, it, type TestContext } from 'node:test';
import type { Snapshot, Topology, Volume } from '../../src/gen/csi/v1/csi.js';
import { codeOf, ControllerRpc, expectCode, mountCapability, ServiceType, Status, uniqueName, type Advertised } from './_clients.js';
import { EXPANDED_SIZE, KNOWN_CONTROLLER_RPCS, listAllVolumes, MAX_NAME_BYTES, VOLUME_SIZE, type SuiteKit } from './_kit.js';

/** Registers the Controller checks; call inside describeConformance's describe. */
export function describeController(kit: SuiteKit): void {
  const { c, res, controller, ctl, hasNode, skipUnless, volumeRequest, mountVolume, unmountVolume } = kit;
  let adv: Advertised;
  let nodeId = '';
  let nodeTopology: Topology | undefined;
  // Runs after the suite's own `before` (which starts the plugin and reads what it advertises).
  before(() => {
    ({ adv, nodeId, nodeTopology } = kit.state());
  });

  describe('Controller', () => {
    it('ControllerGetCapabilities lists only capabilities the spec defines', async (t) => {
      if (skipUnless(t, controller(), 'no Controller service')) return;
      for (const rpc of adv.controller) assert.ok(KNOWN_CONTROLLER_RPCS.has(rpc), `unknown controller capability ${rpc}`);
    });

    describe('CreateVolume', () => {
      it('refuses a request without a name, without capabilities or with a capability lacking an access mode (INVALID_ARGUMENT)', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
        const ctrl = c().controller;
        await expectCode(ctrl.createVolume({ volumeCapabilities: [mountCapability()] }), Status.INVALID_ARGUMENT, 'no name');
        await expectCode(ctrl.createVolume({ name: uniqueName('nocaps') }), Status.INVALID_ARGUMENT, 'no capabilities');
        await expectCode(
          ctrl.createVolume({ name: uniqueName('nomode'), volumeCapabilities: [{ mount: {} }] }),
          Status.INVALID_ARGUMENT,
          'capability without access_mode',
        );
      });

      it('creates a volume with an id and at least the required capacity, also with a 128-byte name', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
        const vol = await res.createVolume(volumeRequest('create'));
        assert.ok(vol.capacityBytes === 0n || vol.capacityBytes >= VOLUME_SIZE, `capacity ${vol.capacityBytes} < required ${VOLUME_SIZE}`);
        const long = await res.createVolume(volumeRequest('create', { name: uniqueName('maxlen', MAX_NAME_BYTES) }));
        assert.notEqual(long.volumeId, '');
        if (adv.plugin.has(ServiceType.VOLUME_ACCESSIBILITY_CONSTRAINTS) && nodeTopology) {
          assert.ok(vol.accessibleTopology.length > 0, 'a plugin with accessibility constraints reports accessible_topology');
        }
      });

      it('is idempotent: the same name and arguments give the same volume', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
        const req = volumeRequest('twice');
        const a = await res.createVolume(req);
        const b = await res.createVolume(req);
        assert.equal(b.volumeId, a.volumeId);
        assert.equal(b.capacityBytes, a.capacityBytes);
      });

      it('answers ALREADY_EXISTS for the same name with an incompatible capacity', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
        const req = volumeRequest('conflict', { capacityRange: { requiredBytes: VOLUME_SIZE, limitBytes: VOLUME_SIZE } });
        await res.createVolume(req);
        await expectCode(
          c().controller.createVolume({ ...req, capacityRange: { requiredBytes: 2n * VOLUME_SIZE, limitBytes: 2n * VOLUME_SIZE } }),
          Status.ALREADY_EXISTS,
          'same name, twice the size',
        );
      });

      it('refuses limit_bytes below required_bytes (INVALID_ARGUMENT)', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
        await expectCode(
          c().controller.createVolume(volumeRequest('range', { capacityRange: { requiredBytes: 2n * VOLUME_SIZE, limitBytes: VOLUME_SIZE } })),
          Status.INVALID_ARGUMENT,
          'limit < required',
        );
      });

      it('refuses more than GetCapacity says is available (OUT_OF_RANGE or RESOURCE_EXHAUSTED)', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME) && ctl(ControllerRpc.GET_CAPACITY), 'needs CREATE_DELETE_VOLUME and GET_CAPACITY')) return;
        const { availableCapacity } = await c().controller.getCapacity({ volumeCapabilities: [mountCapability()] });
        if (skipUnless(t, availableCapacity < 2n ** 60n, 'capacity too large to exceed')) return;
        const code = await codeOf(res.createVolume(volumeRequest('toobig', { capacityRange: { requiredBytes: availableCapacity + 1024n ** 3n } })));
        assert.ok(code === Status.OUT_OF_RANGE || code === Status.RESOURCE_EXHAUSTED, `expected OUT_OF_RANGE, got ${Status[code]}`);
      });

      it('answers NOT_FOUND for an unknown content source', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT) || ctl(ControllerRpc.CLONE_VOLUME), 'no snapshots or clones')) return;
        if (ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT)) {
          await expectCode(
            c().controller.createVolume(volumeRequest('nosnap', { volumeContentSource: { snapshot: { snapshotId: 'no-such-snapshot' } } })),
            Status.NOT_FOUND,
            'from unknown snapshot',
          );
        }
        if (ctl(ControllerRpc.CLONE_VOLUME)) {
          await expectCode(
            c().controller.createVolume(volumeRequest('novol', { volumeContentSource: { volume: { volumeId: 'no-such-volume' } } })),
            Status.NOT_FOUND,
            'from unknown volume',
          );
        }
      });
    });

    describe('DeleteVolume', () => {
      it('refuses a request without volume_id (INVALID_ARGUMENT)', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
        await expectCode(c().controller.deleteVolume({}), Status.INVALID_ARGUMENT, 'no volume_id');
      });

      it('succeeds for an unknown volume and when repeated', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'CREATE_DELETE_VOLUME not advertised')) return;
        await c().controller.deleteVolume({ volumeId: 'no-such-volume' });
        const vol = await res.createVolume(volumeRequest('delete'));
        await c().controller.deleteVolume({ volumeId: vol.volumeId });
        await c().controller.deleteVolume({ volumeId: vol.volumeId });
      });
    });

    describe('ValidateVolumeCapabilities', () => {
      it('refuses a request without volume_id or capabilities (INVALID_ARGUMENT) and an unknown volume (NOT_FOUND)', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs CREATE_DELETE_VOLUME to make a volume')) return;
        const vol = await res.createVolume(volumeRequest('validate'));
        await expectCode(c().controller.validateVolumeCapabilities({ volumeCapabilities: [mountCapability()] }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(c().controller.validateVolumeCapabilities({ volumeId: vol.volumeId }), Status.INVALID_ARGUMENT, 'no capabilities');
        await expectCode(
          c().controller.validateVolumeCapabilities({ volumeId: 'no-such-volume', volumeCapabilities: [mountCapability()] }),
          Status.NOT_FOUND,
          'unknown volume',
        );
      });

      it('confirms the capability a volume was created with, echoing the capabilities', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs CREATE_DELETE_VOLUME to make a volume')) return;
        const vol = await res.createVolume(volumeRequest('validate'));
        const r = await c().controller.validateVolumeCapabilities({ volumeId: vol.volumeId, volumeCapabilities: [mountCapability()], volumeContext: vol.volumeContext });
        assert.ok(r.confirmed, `expected confirmed, got message ${JSON.stringify(r.message)}`);
        assert.ok(r.confirmed.volumeCapabilities.length > 0, 'confirmed must list the capabilities');
      });
    });

    describe('ControllerPublishVolume / ControllerUnpublishVolume', () => {
      const needs = (t: TestContext): boolean => skipUnless(t, ctl(ControllerRpc.PUBLISH_UNPUBLISH_VOLUME), 'PUBLISH_UNPUBLISH_VOLUME not advertised');

      it('refuses requests without volume_id, node_id or capability (INVALID_ARGUMENT)', async (t) => {
        if (needs(t)) return;
        const ctrl = c().controller;
        await expectCode(ctrl.controllerPublishVolume({ nodeId: 'n', volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no volume_id');
        await expectCode(ctrl.controllerPublishVolume({ volumeId: 'v', volumeCapability: mountCapability() }), Status.INVALID_ARGUMENT, 'no node_id');
        await expectCode(ctrl.controllerPublishVolume({ volumeId: 'v', nodeId: 'n' }), Status.INVALID_ARGUMENT, 'no capability');
        await expectCode(ctrl.controllerUnpublishVolume({ nodeId: 'n' }), Status.INVALID_ARGUMENT, 'unpublish without volume_id');
      });

      it('answers NOT_FOUND for an unknown volume and for an unknown node', async (t) => {
        if (needs(t)) return;
        await expectCode(
          c().controller.controllerPublishVolume({ volumeId: 'no-such-volume', nodeId: nodeId || 'some-node', volumeCapability: mountCapability() }),
          Status.NOT_FOUND,
          'unknown volume',
        );
        const vol = await res.createVolume(volumeRequest('cpub'));
        await expectCode(
          c().controller.controllerPublishVolume({ volumeId: vol.volumeId, nodeId: 'no-such-node', volumeCapability: mountCapability() }),
          Status.NOT_FOUND,
          'unknown node',
        );
      });

      it('is idempotent: publishing twice gives the same publish_context; unpublishing twice succeeds', async (t) => {
        if (needs(t) || skipUnless(t, hasNode(), 'needs a node id from NodeGetInfo')) return;
        const vol = await res.createVolume(volumeRequest('cpub'));
        const req = { volumeId: vol.volumeId, nodeId, volumeCapability: mountCapability(), volumeContext: vol.volumeContext };
        const a = await c().controller.controllerPublishVolume(req);
        res.attached(vol.volumeId, nodeId);
        const b = await c().controller.controllerPublishVolume(req);
        assert.deepEqual(b.publishContext, a.publishContext);
        if (ctl(ControllerRpc.LIST_VOLUMES) && ctl(ControllerRpc.LIST_VOLUMES_PUBLISHED_NODES)) {
          const listed = (await listAllVolumes(c())).find((e) => e.volume?.volumeId === vol.volumeId);
          assert.deepEqual(listed?.status?.publishedNodeIds, [nodeId], 'ListVolumes reports the node it is published to');
        }
        await c().controller.controllerUnpublishVolume({ volumeId: vol.volumeId, nodeId });
        await c().controller.controllerUnpublishVolume({ volumeId: vol.volumeId, nodeId });
        const gone = await codeOf(c().controller.controllerUnpublishVolume({ volumeId: 'no-such-volume', nodeId }));
        assert.ok(gone === Status.OK || gone === Status.NOT_FOUND, `unpublishing an unknown volume: ${Status[gone]}`);
      });
    });

    describe('ListVolumes', () => {
      const needs = (t: TestContext): boolean =>
        skipUnless(t, ctl(ControllerRpc.LIST_VOLUMES) && ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs LIST_VOLUMES and CREATE_DELETE_VOLUME');

      it('lists a new volume and stops listing it once deleted', async (t) => {
        if (needs(t)) return;
        const before = await listAllVolumes(c());
        const vol = await res.createVolume(volumeRequest('list'));
        const during = await listAllVolumes(c());
        assert.equal(during.length, before.length + 1);
        assert.ok(during.some((e) => e.volume?.volumeId === vol.volumeId));
        await c().controller.deleteVolume({ volumeId: vol.volumeId });
        const afterDelete = await listAllVolumes(c());
        assert.ok(!afterDelete.some((e) => e.volume?.volumeId === vol.volumeId));
      });

      it('pages with max_entries and next_token, listing every volume exactly once', async (t) => {
        if (needs(t)) return;
        for (let i = 0; i < 3; i++) await res.createVolume(volumeRequest('page'));
        const all = (await c().controller.listVolumes({})).entries.map((e) => e.volume?.volumeId);
        assert.ok(all.length >= 3);
        const seen: (string | undefined)[] = [];
        let token = '';
        let pages = 0;
        do {
          const page = await c().controller.listVolumes({ maxEntries: 2, startingToken: token });
          assert.ok(page.entries.length <= 2, `page of ${page.entries.length} > max_entries 2`);
          seen.push(...page.entries.map((e) => e.volume?.volumeId));
          token = page.nextToken;
          assert.ok(++pages <= all.length, 'paging does not end');
        } while (token !== '');
        assert.equal(new Set(seen).size, seen.length, 'a volume was listed twice');
        assert.deepEqual([...seen].sort(), [...all].sort());
      });

      it('keeps a token usable (or answers ABORTED) after the last volume of its page is deleted', async (t) => {
        if (needs(t)) return;
        for (let i = 0; i < 3; i++) await res.createVolume(volumeRequest('token'));
        const first = await c().controller.listVolumes({ maxEntries: 1 });
        assert.notEqual(first.nextToken, '', 'more volumes exist, so a next_token is due');
        const deleted = first.entries[0]?.volume?.volumeId ?? '';
        await c().controller.deleteVolume({ volumeId: deleted });
        const rest = c().controller.listVolumes({ startingToken: first.nextToken });
        const code = await codeOf(rest);
        if (code !== Status.OK) {
          assert.equal(code, Status.ABORTED, `a stale token is either still good or ABORTED, got ${Status[code]}`);
          return;
        }
        assert.ok(!(await rest).entries.some((e) => e.volume?.volumeId === deleted), 'the deleted volume was listed');
      });

      it('answers ABORTED for a starting_token it never issued', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.LIST_VOLUMES), 'LIST_VOLUMES not advertised')) return;
        await expectCode(c().controller.listVolumes({ startingToken: 'not-a-token' }), Status.ABORTED, 'bad token');
      });
    });

    describe('GetCapacity', () => {
      it('answers with no arguments', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.GET_CAPACITY), 'GET_CAPACITY not advertised')) return;
        const r = await c().controller.getCapacity({});
        assert.ok(r.availableCapacity >= 0n);
      });
    });

    describe('Snapshots', () => {
      const needs = (t: TestContext): boolean =>
        skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT) && ctl(ControllerRpc.CREATE_DELETE_VOLUME), 'needs CREATE_DELETE_SNAPSHOT');
      const snapshotOf = async (prefix: string, name = uniqueName(prefix)): Promise<{ volume: Volume; snapshot: Snapshot }> => {
        const volume = await res.createVolume(volumeRequest(`${prefix}-src`));
        const snapshot = await res.createSnapshot({ name, sourceVolumeId: volume.volumeId });
        return { volume, snapshot };
      };

      it('refuses CreateSnapshot without name or source volume (INVALID_ARGUMENT), and DeleteSnapshot without id', async (t) => {
        if (needs(t)) return;
        await expectCode(c().controller.createSnapshot({ sourceVolumeId: 'v' }), Status.INVALID_ARGUMENT, 'no name');
        await expectCode(c().controller.createSnapshot({ name: uniqueName('snap') }), Status.INVALID_ARGUMENT, 'no source_volume_id');
        await expectCode(c().controller.deleteSnapshot({}), Status.INVALID_ARGUMENT, 'delete without id');
      });

      it('answers NOT_FOUND for an unknown source volume', async (t) => {
        if (needs(t)) return;
        await expectCode(c().controller.createSnapshot({ name: uniqueName('snap'), sourceVolumeId: 'no-such-volume' }), Status.NOT_FOUND, 'unknown source');
      });

      it('creates a ready snapshot with id, source and creation time; repeating gives the same snapshot', async (t) => {
        if (needs(t)) return;
        const name = uniqueName('snap', MAX_NAME_BYTES);
        const { volume, snapshot } = await snapshotOf('snap', name);
        assert.notEqual(snapshot.snapshotId, '');
        assert.equal(snapshot.sourceVolumeId, volume.volumeId);
        assert.ok(snapshot.creationTime instanceof Date && snapshot.creationTime.getTime() > 0, 'creation_time is required');
        const again = await res.createSnapshot({ name, sourceVolumeId: volume.volumeId });
        assert.equal(again.snapshotId, snapshot.snapshotId);
      });

      it('answers ALREADY_EXISTS for the same name with a different source volume', async (t) => {
        if (needs(t)) return;
        const name = uniqueName('snapname');
        await snapshotOf('snapname', name);
        const other = await res.createVolume(volumeRequest('other'));
        await expectCode(c().controller.createSnapshot({ name, sourceVolumeId: other.volumeId }), Status.ALREADY_EXISTS, 'same name, other source');
      });

      it('deletes a snapshot, and succeeds for an unknown one and when repeated', async (t) => {
        if (needs(t)) return;
        const { snapshot } = await snapshotOf('snapdel');
        await c().controller.deleteSnapshot({ snapshotId: snapshot.snapshotId });
        await c().controller.deleteSnapshot({ snapshotId: snapshot.snapshotId });
        await c().controller.deleteSnapshot({ snapshotId: 'no-such-snapshot' });
        if (ctl(ControllerRpc.LIST_SNAPSHOTS)) {
          const listed = await c().controller.listSnapshots({ snapshotId: snapshot.snapshotId });
          assert.equal(listed.entries.length, 0, 'a deleted snapshot is still listed');
        }
      });
    });

    describe('ListSnapshots', () => {
      const needs = (t: TestContext): boolean =>
        skipUnless(t, ctl(ControllerRpc.LIST_SNAPSHOTS) && ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT), 'needs LIST_SNAPSHOTS and CREATE_DELETE_SNAPSHOT');

      it('filters by snapshot_id and by source_volume_id; unknown ids give an empty list', async (t) => {
        if (needs(t)) return;
        const made: { volume: Volume; snapshot: Snapshot }[] = [];
        for (let i = 0; i < 3; i++) {
          const volume = await res.createVolume(volumeRequest('lsnap'));
          made.push({ volume, snapshot: await res.createSnapshot({ name: uniqueName('lsnap'), sourceVolumeId: volume.volumeId }) });
        }
        const [, middle] = made;
        assert.ok(middle);
        const byId = await c().controller.listSnapshots({ snapshotId: middle.snapshot.snapshotId });
        assert.deepEqual(byId.entries.map((e) => e.snapshot?.snapshotId), [middle.snapshot.snapshotId]);
        const bySource = await c().controller.listSnapshots({ sourceVolumeId: middle.volume.volumeId });
        assert.deepEqual(bySource.entries.map((e) => e.snapshot?.snapshotId), [middle.snapshot.snapshotId]);
        assert.equal((await c().controller.listSnapshots({ snapshotId: 'no-such-snapshot' })).entries.length, 0);
        assert.equal((await c().controller.listSnapshots({ sourceVolumeId: 'no-such-volume' })).entries.length, 0);
      });

      it('pages with max_entries and next_token; ABORTED for a token it never issued', async (t) => {
        if (needs(t)) return;
        const volume = await res.createVolume(volumeRequest('psnap'));
        for (let i = 0; i < 3; i++) await res.createSnapshot({ name: uniqueName('psnap'), sourceVolumeId: volume.volumeId });
        const total = (await c().controller.listSnapshots({})).entries.length;
        const first = await c().controller.listSnapshots({ maxEntries: 2 });
        assert.equal(first.entries.length, 2);
        assert.notEqual(first.nextToken, '');
        const rest = await c().controller.listSnapshots({ startingToken: first.nextToken });
        assert.equal(rest.entries.length, total - 2, 'the rest come in one page without max_entries');
        const ids = [...first.entries, ...rest.entries].map((e) => e.snapshot?.snapshotId);
        assert.equal(new Set(ids).size, ids.length, 'a snapshot was listed twice');
        await expectCode(c().controller.listSnapshots({ startingToken: 'not-a-token' }), Status.ABORTED, 'bad token');
      });
    });

    describe('Content sources', () => {
      it('creates a volume from a snapshot, reporting the source and at least its size', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT), 'CREATE_DELETE_SNAPSHOT not advertised')) return;
        const src = await res.createVolume(volumeRequest('csrc'));
        const snap = await res.createSnapshot({ name: uniqueName('csnap'), sourceVolumeId: src.volumeId });
        const vol = await res.createVolume(volumeRequest('fromsnap', { volumeContentSource: { snapshot: { snapshotId: snap.snapshotId } } }));
        assert.equal(vol.contentSource?.snapshot?.snapshotId, snap.snapshotId);
        assert.ok(vol.capacityBytes === 0n || vol.capacityBytes >= snap.sizeBytes);
      });

      it('creates a volume from another volume, reporting the source', async (t) => {
        if (skipUnless(t, ctl(ControllerRpc.CLONE_VOLUME), 'CLONE_VOLUME not advertised')) return;
        const src = await res.createVolume(volumeRequest('vsrc'));
        const vol = await res.createVolume(volumeRequest('fromvol', { volumeContentSource: { volume: { volumeId: src.volumeId } } }));
        assert.equal(vol.contentSource?.volume?.volumeId, src.volumeId);
      });

      it('copies content: a file written before a snapshot or clone is in the new volumes', async (t) => {
        const cloneOrSnap = ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT) || ctl(ControllerRpc.CLONE_VOLUME);
        if (skipUnless(t, cloneOrSnap && hasNode(), 'needs snapshots or clones, and a Node service to look inside')) return;
        const src = await res.createVolume(volumeRequest('content'));
        const m = await mountVolume(src);
        await writeFile(path.join(m.target, 'hello.txt'), 'hello from the source');
        await unmountVolume(src.volumeId, m);
        const copies: Volume[] = [];
        if (ctl(ControllerRpc.CREATE_DELETE_SNAPSHOT)) {
          const snap = await res.createSnapshot({ name: uniqueName('content'), sourceVolumeId: src.volumeId });
          copies.push(await res.createVolume(volumeRequest('content-snap', { volumeContentSource: { snapshot: { snapshotId: snap.snapshotId } } })));
        }
        if (ctl(ControllerRpc.CLONE_VOLUME)) {
          copies.push(await res.createVolume(volumeRequest('content-clone', { volumeContentSource: { volume: { volumeId: src.volumeId } } })));
        }
        for (const copy of copies) {
          const cm = await mountVolume(copy);
          assert.equal(await readFile(path.join(cm.target, 'hello.txt'), 'utf8'), 'hello from the source');
          await unmountVolume(copy.volumeId, cm);
        }
      });
    });

    describe('ControllerExpandVolume', () => {
      const needs = (t: TestContext): boolean => skipUnless(t, ctl(ControllerRpc.EXPAND_VOLUME), 'EXPAND_VOLUME not advertised');

      it('refuses a request without volume_id or capacity_range (INVALID_ARGUMENT); unknown volume is NOT_FOUND', async (t) => {
        if (needs(t)) return;
        await expectCode(c().controller.controllerExpandVolume({ capacityRange: { requiredBytes: EXPANDED_SIZE } }), Status.INVALID_ARGUMENT, 'no volume_id');
        const vol = await res.createVolume(volumeRequest('expand'));
        await expectCode(c().controller.controllerExpandVolume({ volumeId: vol.volumeId }), Status.INVALID_ARGUMENT, 'no capacity_range');
        await expectCode(
          c().controller.controllerExpandVolume({ volumeId: 'no-such-volume', capacityRange: { requiredBytes: EXPANDED_SIZE } }),
          Status.NOT_FOUND,
          'unknown volume',
        );
      });

      it('grows a volume to at least the requested size, idempotently', async (t) => {
        if (needs(t)) return;
        const vol = await res.createVolume(volumeRequest('expand'));
        const req = { volumeId: vol.volumeId, capacityRange: { requiredBytes: EXPANDED_SIZE }, volumeCapability: mountCapability() };
        const a = await c().controller.controllerExpandVolume(req);
        assert.ok(a.capacityBytes >= EXPANDED_SIZE, `capacity ${a.capacityBytes} < ${EXPANDED_SIZE}`);
        const b = await c().controller.controllerExpandVolume(req);
        assert.equal(b.capacityBytes, a.capacityBytes);
      });
    });
  });
}
