// The CSI volume list carries what an operator scans a list for, as Berth
// extras beside Nomad's fields: capacity, claims being released, the latest
// usage per node, the condition and the drift loop's count of differences.
// Against a real server: the volume, claim and drift rows are written to the
// store directly (the routes that make them have their own tests); usage and
// condition come in through the node's report route, as an agent sends them.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { CSIVolume, CSIVolumeListStub } from '../../src/api/index.js';
import type { Node } from '../../src/structs/index.js';
import { testAllocation, testClaim, testPlugin, testVolume } from '../support/server-rows.js';
import { assertShape } from '../support/strict-schema.js';
import { fingerprint, startServer, TOKENS, type Harness } from './_harness.js';

let h: Harness;
let nodeId = '';

before(async () => {
  h = await startServer();
  nodeId = (await h.call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('n1') } })).body.node.id;
  await h.server.store.write((txn) => {
    txn.put('plugins', testPlugin({ nodes: { [nodeId]: {} } }));
    txn.put('volumes', testVolume('single-node-writer', 'file-system', { capacityBytes: 64 * 1024 * 1024 }));
    txn.put('volumes', testVolume('single-node-writer', 'file-system', { id: 'quiet', name: 'quiet', externalId: 'ext-quiet' }));
    txn.put('allocations', testAllocation('alloc-writer', nodeId));
    txn.put('claims', testClaim('alloc-writer', nodeId));
    // The drift loop's latest comparison: two differences about `data`, none about `quiet`.
    const finding = { kind: 'claim-without-allocation' as const, pluginId: 'fake', namespace: 'default', volumeId: 'data', message: 'volume data is still claimed', repair: 'berth volume detach data n1', fixable: true };
    txn.put('drift', { id: 'latest', checkedAt: 1_700_000_000_000, findings: [finding, { ...finding, kind: 'record-without-mount', fixable: false }], errors: [] });
  });
  const stats = await h.call('POST', `/v1/node/${nodeId}/volume-stats`, {
    token: TOKENS.node,
    body: {
      reports: [
        {
          namespace: 'default',
          volumeId: 'data',
          pluginId: 'fake',
          reportedAt: 1_700_000_000_000,
          allocIds: ['alloc-writer'],
          bytes: { available: 48 * 1024 * 1024, total: 64 * 1024 * 1024, used: 16 * 1024 * 1024 },
          condition: { abnormal: true, message: 'the volume directory has vanished from the node' },
        },
      ],
    },
  });
  assert.equal(stats.status, 200, stats.text);
});

after(async () => {
  await h.close();
});

describe('GET /v1/volumes?type=csi with Berth extras', () => {
  it("each row carries the volume's capacity, claims, latest usage per node, condition and drift count, as the full volume has them; Nomad's fields unchanged", async () => {
    for (const token of [TOKENS.management, TOKENS.readOnly]) {
      const list = await h.call('GET', '/v1/volumes?type=csi&namespace=*', { token });
      assert.equal(list.status, 200, list.text);
      const rows = assertShape(z.array(CSIVolumeListStub), list.body);
      const data = rows.find((r) => r.ID === 'data');
      const quiet = rows.find((r) => r.ID === 'quiet');
      assert.ok(data && quiet, list.text);
      assert.deepEqual(
        [data.CurrentWriters, data.CurrentReaders, data.BerthClaimsReleasing, data.BerthCapacity, data.BerthDriftFindings],
        [1, 0, 0, 64 * 1024 * 1024, 2],
      );
      assert.deepEqual(
        data.BerthUsage.map((u) => [u.NodeID, u.Bytes?.Used, u.Bytes?.Total]),
        [[nodeId, 16 * 1024 * 1024, 64 * 1024 * 1024]],
      );
      assert.deepEqual([data.BerthCondition?.Abnormal, data.BerthCondition?.Message], [true, 'the volume directory has vanished from the node']);
      assert.deepEqual([quiet.BerthUsage, quiet.BerthCondition, quiet.BerthDriftFindings, quiet.CurrentWriters], [[], null, 0, 0]);

      // The row says what the full volume says.
      const full = assertShape(CSIVolume, (await h.call('GET', '/v1/volume/csi/data', { token })).body);
      assert.deepEqual([data.BerthUsage, data.BerthCondition, data.BerthCapacity], [full.BerthUsage, full.BerthCondition, full.Capacity]);
      // Nomad's fields of the row are those of Nomad's list stub, as before the extras.
      const nomadFields = Object.keys(data).filter((k) => !k.startsWith('Berth'));
      assert.deepEqual(nomadFields, Object.keys(CSIVolumeListStub.shape).filter((k) => !k.startsWith('Berth')));
      assert.equal(data.AccessMode, 'single-node-writer');
    }
  });

  it("Nomad's filter reads the extras: the abnormal volumes, the drifting ones", async () => {
    const abnormal = await h.call<Array<{ ID: string }>>('GET', `/v1/volumes?type=csi&filter=${encodeURIComponent('BerthCondition.Abnormal == true')}`);
    assert.equal(abnormal.status, 200, abnormal.text);
    assert.deepEqual(abnormal.body.map((r) => r.ID), ['data']);
    const drifting = await h.call<Array<{ ID: string }>>('GET', `/v1/volumes?type=csi&filter=${encodeURIComponent('BerthDriftFindings != 0')}`);
    assert.equal(drifting.status, 200, drifting.text);
    assert.deepEqual(drifting.body.map((r) => r.ID), ['data']);
  });

  it('a claim being released is counted apart from the taken ones', async () => {
    await h.server.store.write((txn) => {
      txn.put('allocations', testAllocation('alloc-writer', nodeId, { clientStatus: 'complete', desiredStatus: 'stop' }));
      txn.put('claims', testClaim('alloc-writer', nodeId, { state: 'unpublishing', releaseReason: 'allocation complete', modifyIndex: 2 }));
    });
    const rows = assertShape(z.array(CSIVolumeListStub), (await h.call('GET', '/v1/volumes?type=csi')).body);
    const data = rows.find((r) => r.ID === 'data');
    // Released in the background: releasing now, or already free.
    // The node is not connected: the release waits at `unpublishing`, as the full volume shows.
    const full = assertShape(CSIVolume, (await h.call('GET', '/v1/volume/csi/data')).body);
    assert.deepEqual(full.BerthClaims.map((c) => c.State), ['unpublishing']);
    assert.deepEqual([data?.CurrentWriters, data?.BerthClaimsReleasing], [0, 1]);
  });
});
