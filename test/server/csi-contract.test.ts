// The CSI routes' contract: a real server, a fake node agent over the real
// node connection and a real FakePlugin behind it; every answer is parsed
// with its src/api schema (strict objects: a field missing or extra fails),
// blocking queries, filters and paging as Nomad's clients use them, Nomad's
// status codes, and no secret or mount flag in any answer.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { z } from 'zod';
import {
  CSIPlugin,
  CSIPluginListStub,
  CSISnapshotCreateResponse,
  CSISnapshotListResponse,
  CSIVolume,
  CSIVolumeCreateResponse,
  CSIVolumeDetachResponse,
  CSIVolumeListExternalResponse,
  CSIVolumeListStub,
  CSIVolumeRegisterResponse,
  DriftReport,
  VolumeClaimListStub,
  VolumeDrift,
  VolumeUsageHistory,
  type CSIVolumeCreateRequest,
} from '../../src/api/index.js';
import { systemClock } from '../../src/lib/index.js';
import type { NodeRpcRequest } from '../../src/structs/index.js';
import { FakePlugin } from '../support/csi-fake/index.js';
import { eventually } from '../support/eventually.js';
import { FakeNodeAgent, socketBridge } from '../support/node-agent-fake/index.js';
import { testAllocation } from '../support/server-rows.js';
import { startServer, TOKENS, type Answer, type Harness } from './_harness.js';

const SECRET = 'contract-secret-value';
const FLAG = `password=${SECRET}`;
const WRITER = 'a1b2c3d4-0000-4000-8000-000000000001';

let h: Harness;
let dir: string;
let plugin: FakePlugin;
let agent: FakeNodeAgent;
let ws: WebSocket;
/** Every answer body a user could read, searched for secrets at the end. */
const seen: string[] = [];

async function call<T>(method: string, path: string, opts: { body?: unknown; token?: string; accept?: string } = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { 'x-nomad-token': opts.token ?? TOKENS.management };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  if (opts.accept) headers['accept'] = opts.accept;
  const res = await fetch(h.url + path, { method, headers, ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}) });
  const text = await res.text();
  seen.push(text);
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: body as T, headers: res.headers, text };
}

/** A 200 answer parsed with `schema`. */
async function read<S extends z.ZodType>(schema: S, method: string, path: string, body?: unknown): Promise<{ value: z.output<S>; answer: Answer }> {
  const answer = await call(method, path, body === undefined ? {} : { body });
  assert.equal(answer.status, 200, `${method} ${path}: ${answer.text}`);
  return { value: schema.parse(answer.body), answer };
}

const indexOf = (a: Answer): number => Number(a.headers.get('x-nomad-index'));

function volumeRequest(id: string, extra: Record<string, unknown> = {}): CSIVolumeCreateRequest {
  return {
    Volumes: [
      {
        ID: id,
        Name: id,
        PluginID: 'fake',
        RequestedCapabilities: [{ AccessMode: 'single-node-writer', AttachmentMode: 'file-system' }],
        MountOptions: { FSType: 'ext4', MountFlags: [FLAG] },
        Secrets: { password: SECRET },
        Parameters: { tier: 'fast' },
        RequestedCapacityMin: 1024 * 1024,
        ...extra,
      },
    ],
  };
}


before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-csi-contract-'));
  h = await startServer({ clock: systemClock });
  plugin = new FakePlugin({ socketPath: join(dir, 'plugin.sock'), nodeId: 'ext-node-1' });
  await plugin.start();
  const b = socketBridge(() => ws);
  agent = new FakeNodeAgent({ nodeId: 'node-1', connections: b.connections, plugins: { fake: `unix://${join(dir, 'plugin.sock')}` } });
  const reg = await h.call('POST', '/v1/node/register', { token: TOKENS.node, body: { id: 'node-1', fingerprint: await agent.fingerprint({ now: Date.now() }) } });
  assert.equal(reg.status, 200, reg.text);
  ws = new WebSocket(`${h.url.replace('http', 'ws')}/v1/node/connect?nodeId=node-1`, { headers: { authorization: `Bearer ${TOKENS.node}` } });
  ws.on('message', (data) => b.deliver(JSON.parse(String(data)) as NodeRpcRequest));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  agent.connect();
  await eventually('the plugin healthy', async () => {
    const p = await h.call<Array<{ ID: string; NodesHealthy: number; ControllersHealthy: number }>>('GET', '/v1/plugins?type=csi');
    return p.body.find((x) => x.ID === 'fake' && x.NodesHealthy === 1 && x.ControllersHealthy === 1);
  });
});

after(async () => {
  ws?.close();
  await agent?.close();
  await h?.close();
  await plugin?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("Nomad's CSI API", () => {
  it('lists plugins (type=csi only) and shows one with its controller and node instances', async () => {
    assert.deepEqual((await call('GET', '/v1/plugins')).body, [], 'no type: nothing, as Nomad');
    const list = await read(z.array(CSIPluginListStub), 'GET', '/v1/plugins?type=csi');
    assert.deepEqual(
      list.value.map((p) => p.ID),
      ['fake'],
    );
    assert.ok(indexOf(list.answer) > 0);
    assert.equal(list.answer.headers.get('x-nomad-knownleader'), 'true');
    assert.deepEqual((await read(z.array(CSIPluginListStub), 'GET', '/v1/plugins?type=csi&prefix=nope')).value, []);

    const { value: p } = await read(CSIPlugin, 'GET', '/v1/plugin/csi/fake');
    assert.equal(p.Provider, 'fake.csi.berth.dev');
    assert.ok(p.ControllerRequired);
    const controller = p.Controllers?.['node-1'];
    const node = p.Nodes?.['node-1'];
    assert.ok(controller?.ControllerInfo?.SupportsCreateDelete && controller.ControllerInfo.SupportsListSnapshots);
    assert.equal(controller.NodeInfo, undefined, 'a controller carries no NodeInfo (omitempty)');
    assert.equal(node?.NodeInfo?.ID, 'ext-node-1');
    assert.ok(node.NodeInfo.RequiresNodeStageVolume);
    assert.equal(node.ControllerInfo, undefined);

    const missing = await call('GET', '/v1/plugin/csi/nope');
    assert.equal(missing.status, 404);
    assert.match(missing.text, /plugin "nope" not found/, 'a plain-text error, as Nomad');
  });

  it('creates a volume from {Volumes: [...]} and answers it without its secrets', async () => {
    const { value, answer } = await read(CSIVolumeCreateResponse, 'PUT', '/v1/volume/csi/data/create', volumeRequest('data'));
    assert.equal(value.Warnings, '');
    assert.ok(indexOf(answer) > 0 && value.Index === indexOf(answer));
    const v = value.Volumes?.[0];
    assert.ok(v);
    assert.equal(v.ID, 'data');
    assert.ok(v.ExternalID);
    assert.equal(v.Secrets, null);
    assert.deepEqual(v.MountOptions, { FSType: 'ext4', MountFlags: ['[REDACTED]'] });
    assert.deepEqual(v.BerthSecretNames, ['password']);
    assert.deepEqual(v.RequestedCapabilities, [{ AccessMode: 'single-node-writer', AttachmentMode: 'file-system' }]);
    assert.equal(v.RequestedCapacityMin, 1024 * 1024);
    assert.ok(v.Schedulable && v.ControllerRequired && v.NodesHealthy === 1);
    assert.equal(v.AccessMode, '', 'no claim yet');
    assert.equal(plugin.callsTo('CreateVolume').length, 1);

    // POST is Nomad's too; Berth's old camelCase body is refused.
    const camel = await call('POST', '/v1/volume/csi/other/create', { body: { pluginId: 'fake', capabilities: [] }, accept: 'application/json' });
    assert.equal(camel.status, 400, camel.text);
    assert.equal((camel.body as { code: string }).code, 'INVALID');
  });

  it('registers an existing volume, and deregisters and deletes volumes as Nomad does', async () => {
    const { value: made } = await read(CSIVolumeCreateResponse, 'POST', '/v1/volume/csi/tmp/create', volumeRequest('tmp'));
    const external = made.Volumes?.[0]?.ExternalID ?? '';
    const bad = await call('DELETE', '/v1/volume/csi/tmp?force=maybe');
    assert.equal(bad.status, 400);
    assert.equal(bad.text, 'invalid force value');
    const dereg = await call('DELETE', '/v1/volume/csi/tmp?force=false');
    assert.equal(dereg.status, 200, dereg.text);
    assert.equal(dereg.text, '', 'an empty body, as Nomad');
    assert.ok(indexOf(dereg) > 0);

    const { value } = await read(CSIVolumeRegisterResponse, 'PUT', '/v1/volume/csi/kept', {
      Volumes: [{ ID: 'kept', Name: 'kept', ExternalID: external, PluginID: 'fake', RequestedCapabilities: [{ AccessMode: 'single-node-writer', AttachmentMode: 'file-system' }] }],
    });
    assert.equal(value.Volumes?.[0]?.ExternalID, external);
    const mismatch = await call('PUT', '/v1/volume/csi/other', { body: { Volumes: [{ ID: 'kept', PluginID: 'fake', ExternalID: external }] } });
    assert.equal(mismatch.status, 400);

    const del = await call('DELETE', '/v1/volume/csi/kept/delete');
    assert.equal(del.status, 200, del.text);
    assert.equal(del.text, '');
    assert.equal((await call('GET', '/v1/volume/csi/kept')).status, 404);
    assert.equal(plugin.callsTo('DeleteVolume').length, 1);
  });

  it("refuses to create or register a volume in a namespace that does not exist, in Nomad's words, before asking the plugin", async () => {
    const creates = plugin.callsTo('CreateVolume').length;
    const made = await call('PUT', '/v1/volume/csi/lost/create?namespace=nope', { body: volumeRequest('lost') });
    assert.deepEqual([made.status, made.text], [400, 'volume lost is in nonexistent namespace nope']);
    assert.equal(plugin.callsTo('CreateVolume').length, creates, 'no plugin volume made for it');
    const registered = await call('PUT', '/v1/volume/csi/lost', { body: { Volumes: [{ ID: 'lost', Namespace: 'nope', ExternalID: 'x', PluginID: 'fake', RequestedCapabilities: [{ AccessMode: 'single-node-writer', AttachmentMode: 'file-system' }] }] } });
    assert.deepEqual([registered.status, registered.text], [400, 'volume lost is in nonexistent namespace nope']);
    assert.equal((await call('GET', '/v1/volume/csi/lost?namespace=nope')).status, 404);
  });

  it('lists volumes with prefix, namespace, plugin_id, filter and paging', async () => {
    await read(CSIVolumeCreateResponse, 'PUT', '/v1/volume/csi/data2/create', volumeRequest('data2'));
    assert.deepEqual((await call('GET', '/v1/volumes')).body, [], 'no type: nothing, as Nomad');
    const all = await read(z.array(CSIVolumeListStub), 'GET', '/v1/volumes?type=csi');
    assert.deepEqual(
      all.value.map((v) => v.ID),
      ['data', 'data2'],
    );
    assert.ok(indexOf(all.answer) > 0);
    const ids = async (query: string): Promise<string[]> => (await read(z.array(CSIVolumeListStub), 'GET', `/v1/volumes?type=csi&${query}`)).value.map((v) => v.ID);
    assert.deepEqual(await ids('prefix=data2'), ['data2']);
    assert.deepEqual(await ids('plugin_id=other'), []);
    assert.deepEqual(await ids('namespace=*'), ['data', 'data2']);
    assert.deepEqual(await ids('namespace=elsewhere'), []);
    assert.deepEqual(await ids(`filter=${encodeURIComponent('ID == "data2" and PluginID == "fake"')}`), ['data2']);
    const first = await read(z.array(CSIVolumeListStub), 'GET', '/v1/volumes?type=csi&per_page=1');
    assert.deepEqual(
      first.value.map((v) => v.ID),
      ['data'],
    );
    const token = first.answer.headers.get('x-nomad-nexttoken');
    assert.equal(token, 'default.data2');
    assert.deepEqual(await ids(`per_page=1&next_token=${token}`), ['data2']);
    const badFilter = await call('GET', `/v1/volumes?type=csi&filter=${encodeURIComponent('ID ==')}`);
    assert.equal(badFilter.status, 400);
  });

  it('answers a blocking query when a claim changes the volume, with the claim in Nomad and Berth fields', async () => {
    const before = await read(CSIVolume, 'GET', '/v1/volume/csi/data');
    const index = indexOf(before.answer);
    // Nothing changes: the wait runs out and the same index comes back.
    const idle = await call('GET', `/v1/volume/csi/data?index=${index}&wait=200ms`);
    assert.equal(indexOf(idle), index);

    await h.server.store.write((txn) => txn.put('allocations', testAllocation(WRITER, 'node-1')));
    const woken = read(CSIVolume, 'GET', `/v1/volume/csi/data?index=${index}&wait=30s`);
    const claim = await h.call('POST', '/v1/volume/csi/data/claim', { token: TOKENS.node, body: { allocId: WRITER, mode: 'write' } });
    assert.equal(claim.status, 200, claim.text);
    const after = await woken;
    assert.ok(indexOf(after.answer) > index);
    const v = await eventually('the claim published', async () => {
      const r = await read(CSIVolume, 'GET', '/v1/volume/csi/data');
      return r.value.BerthClaims[0]?.ControllerPublish === 'published' ? r.value : undefined;
    });
    assert.deepEqual(v.WriteAllocs, { [WRITER]: null });
    assert.deepEqual(v.ReadAllocs, {});
    assert.deepEqual(
      v.Allocations?.map((a) => a.ID),
      [WRITER],
    );
    assert.equal(v.AccessMode, 'single-node-writer');
    assert.equal(v.BerthClaims[0]?.State, 'taken');
    assert.equal(v.BerthClaims[0]?.NodeID, 'node-1');

    const byNode = await read(z.array(CSIVolumeListStub), 'GET', '/v1/volumes?type=csi&node_id=node-1');
    assert.deepEqual(
      byNode.value.map((x) => [x.ID, x.CurrentWriters]),
      [['data', 1]],
    );
    const claims = await read(z.array(VolumeClaimListStub), 'GET', '/v1/volumes/csi/claims?volume=data');
    assert.deepEqual(
      claims.value.map((c) => [c.VolumeID, c.AllocationID, c.AllocClientStatus]),
      [['data', WRITER, 'running']],
    );
  });

  it('refuses a detach without a node, and one that would pull the volume from a running allocation', async () => {
    const noNode = await call('DELETE', '/v1/volume/csi/data/detach');
    assert.equal(noNode.status, 400);
    assert.equal(noNode.text, 'detach requires node ID');
    const busy = await call('DELETE', '/v1/volume/csi/data/detach?node=node-1');
    assert.equal(busy.status, 409, busy.text);

    await h.server.store.write((txn) => txn.put('allocations', testAllocation(WRITER, 'node-1', { clientStatus: 'complete', desiredStatus: 'stop' })));
    const { value } = await read(CSIVolumeDetachResponse, 'DELETE', '/v1/volume/csi/data/detach?node=node-1');
    assert.deepEqual(value, { StoppedAllocations: [], Warnings: '' });
    await eventually('the claim gone', async () => ((await read(CSIVolume, 'GET', '/v1/volume/csi/data')).value.BerthClaims.length === 0 ? true : undefined));
  });

  it('creates, lists (paged) and deletes snapshots, and lists the provider\'s volumes', async () => {
    const made = await read(CSISnapshotCreateResponse, 'PUT', '/v1/volumes/snapshot', { Snapshots: [{ SourceVolumeID: 'data', Name: 'nightly' }] });
    const snap = made.value.Snapshots?.[0];
    assert.ok(snap?.ID);
    assert.equal(snap.SourceVolumeID, 'data');
    assert.equal(snap.PluginID, 'fake');
    await read(CSISnapshotCreateResponse, 'PUT', '/v1/volumes/snapshot', { Snapshots: [{ SourceVolumeID: 'data2', Name: 'nightly2' }] });

    const list = await read(CSISnapshotListResponse, 'GET', '/v1/volumes/snapshot?plugin_id=fake');
    assert.equal(list.value.Snapshots?.length, 2);
    assert.equal(list.value.NextToken, '');
    assert.ok(list.value.Snapshots?.some((s) => s.ID === snap.ID && s.SourceVolumeID === 'data'));
    const page = await read(CSISnapshotListResponse, 'GET', '/v1/volumes/snapshot?plugin_id=fake&per_page=1');
    assert.equal(page.value.Snapshots?.length, 1);
    assert.ok(page.value.NextToken);
    const rest = await read(CSISnapshotListResponse, 'GET', `/v1/volumes/snapshot?plugin_id=fake&per_page=1&next_token=${encodeURIComponent(page.value.NextToken)}`);
    assert.notEqual(rest.value.Snapshots?.[0]?.ID, page.value.Snapshots?.[0]?.ID);
    assert.equal((await call('GET', '/v1/volumes/snapshot')).status, 400, 'plugin_id is required');

    const del = await call('DELETE', `/v1/volumes/snapshot?plugin_id=fake&snapshot_id=${encodeURIComponent(snap.ID)}`);
    assert.equal(del.status, 200, del.text);
    assert.equal(del.text, '');
    assert.equal((await read(CSISnapshotListResponse, 'GET', '/v1/volumes/snapshot?plugin_id=fake')).value.Snapshots?.length, 1);

    const external = await read(CSIVolumeListExternalResponse, 'GET', '/v1/volumes/external?plugin_id=fake');
    const data = (await read(CSIVolume, 'GET', '/v1/volume/csi/data')).value;
    assert.ok(external.value.Volumes?.some((x) => x.ExternalID === data.ExternalID));
  });

  it("serves Berth's additions: expand, usage, drift and the doctor", async () => {
    const grown = await read(CSIVolume, 'POST', '/v1/volume/csi/data/expand', { RequiredBytes: 4 * 1024 * 1024 });
    assert.ok(grown.value.Capacity >= 4 * 1024 * 1024);
    const usage = await read(VolumeUsageHistory, 'GET', '/v1/volume/csi/data/usage');
    assert.equal(usage.value.VolumeID, 'data');
    await read(DriftReport, 'GET', '/v1/volumes/drift');
    const drift = await read(VolumeDrift, 'GET', '/v1/volume/csi/data/drift');
    assert.equal(drift.value.VolumeID, 'data');
    await read(DriftReport, 'GET', '/v1/volumes/doctor?volume=data');
  });

  it('answers errors as plain text, or as JSON to a caller that accepts it', async () => {
    const plain = await call('GET', '/v1/volume/csi/nope');
    assert.equal(plain.status, 404);
    assert.equal(plain.headers.get('x-berth-error-code'), 'NOT_FOUND');
    const json = await call<{ code: string; message: string }>('GET', '/v1/volume/csi/nope', { accept: 'application/json' });
    assert.equal(json.body.code, 'NOT_FOUND');
    assert.equal((await call('GET', '/v1/volumes?type=bogus')).status, 404);
  });

  it('never shows a secret or a mount flag in an answer', async () => {
    for (const path of ['/v1/volumes?type=csi', '/v1/volume/csi/data', '/v1/volume/csi/data2', '/v1/plugin/csi/fake', '/v1/volumes/external?plugin_id=fake', '/v1/volumes/csi/claims']) {
      await call('GET', path, { token: TOKENS.readOnly });
    }
    const all = seen.join('\n');
    assert.ok(all.includes('BerthSecretNames'));
    assert.ok(!all.includes(SECRET), 'a secret reached an answer');
    // The plugin did get them.
    const create = plugin.callsTo('CreateVolume')[0];
    assert.equal((create?.request['secrets'] as { reveal(): Record<string, string> }).reveal()['password'], SECRET);
  });
});
