// The node routes' contract with Nomad's API, over real HTTP against a real
// server: every answer parsed with its src/api schema made strict at every
// depth (test/support/api-contract.ts), so a field Nomad's shape lacks or a
// field left out fails; the list's prefix, filter, paging, `resources` and
// `os`; blocking queries woken by a change; drain, eligibility, purge and
// evaluate with Nomad's bodies (POST, and PUT as Nomad's Go client sends);
// Nomad's plain-text errors; and the node agent's own routes (register,
// heartbeat) still answered beside them.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as Api from '../../src/api/index.js';
import type { Node as BerthNode } from '../../src/structs/index.js';
import { assertShape } from '../support/api-contract.js';
import { fingerprint, startServer, TOKENS, type Answer, type Harness } from './_harness.js';

let h: Harness;
const ids: Record<string, string> = {};

before(async () => {
  h = await startServer();
  // Node IDs chosen so that prefixes and ID order are known.
  for (const [name, id, extra] of [
    ['n-a', 'aa000000-0000-4000-8000-000000000001', {}],
    ['n-b', 'ab000000-0000-4000-8000-000000000002', { nodeClass: 'gpu', datacenter: 'dc2' }],
    [
      'n-c',
      'c0000000-0000-4000-8000-000000000003',
      {
        httpAddr: 'http://10.0.0.3:4646',
        attributes: { 'os.name': 'debian', 'cpu.numcores': '4', 'driver.exec': '1' },
        meta: { rack: 'r1' },
        networkAddress: '10.0.0.3',
        reservedPorts: [22, 80, 81, 82],
        hostNetworks: { public: { cidr: '10.0.0.0/24', address: '10.0.0.3', reservedPorts: [443] } },
        stopAfterDisconnectMs: 30_000,
        csiNodePlugins: { hp: csiReport('hp', 'csi-node') },
        csiControllerPlugins: { hp: csiReport('hp', 'csi-controller') },
      },
    ],
  ] as const) {
    const res = await h.call<{ node: BerthNode }>('POST', '/v1/node/register', { token: TOKENS.node, body: { id, fingerprint: fingerprint(name, extra) } });
    assert.equal(res.status, 200, res.text);
    ids[name] = res.body.node.id;
  }
});
after(async () => {
  await h.close();
});

function csiReport(pluginId: string, type: 'csi-node' | 'csi-controller'): Record<string, unknown> {
  return {
    pluginId,
    type,
    allocId: 'alloc-1',
    healthy: true,
    healthReason: 'healthy',
    provider: 'hostpath.csi.berth.dev',
    version: '1.0.0',
    updatedAt: 1_700_000_000_000,
    fingerprint: {
      info: { name: 'hostpath.csi.berth.dev', vendorVersion: '1.0.0', manifest: {} },
      capabilities: { services: ['CONTROLLER_SERVICE'], volumeExpansion: [] },
      ...(type === 'csi-controller'
        ? { controller: { capabilities: ['CREATE_DELETE_VOLUME', 'LIST_VOLUMES'] } }
        : { node: { capabilities: ['STAGE_UNSTAGE_VOLUME'], info: { nodeId: 'n-c', maxVolumesPerNode: 10, accessibleTopology: { zone: 'a' } } } }),
    },
  };
}

const index = (res: Answer): number => Number(res.headers.get('x-nomad-index'));

describe('GET /v1/nodes', () => {
  it('lists every node as a NodeListStub, sorted by ID, with Nomad index headers', async () => {
    const res = await h.call('GET', '/v1/nodes', { token: TOKENS.readOnly });
    assert.equal(res.status, 200);
    const list = assertShape(Api.NodeListStub.array(), res.body, 'GET /v1/nodes');
    assert.deepEqual(list.map((n) => n.Name), ['n-a', 'n-b', 'n-c']);
    assert.ok(index(res) > 0, 'X-Nomad-Index');
    assert.equal(res.headers.get('x-nomad-knownleader'), 'true');
    assert.equal(res.headers.get('x-berth-index'), null, 'the old header is gone');
    const c = list[2] as Api.NodeListStub;
    assert.equal(c.Address, '10.0.0.3');
    assert.equal(c.Drivers?.['exec']?.Healthy, true);
    assert.equal(c.NodeResources, undefined, 'resources only when asked');
    assert.equal(c.Attributes, undefined, 'attributes only when asked');
    assert.equal(c.BerthLeaderConnected, false, 'the leader says whether the node connection is open');
    assert.equal((list[1] as Api.NodeListStub).NodeClass, 'gpu');
  });

  it('takes X-Nomad-Token as Nomad clients send it', async () => {
    const res = await fetch(`${h.url}/v1/nodes`, { headers: { 'X-Nomad-Token': TOKENS.readOnly } });
    assert.equal(res.status, 200);
  });

  it('adds NodeResources and ReservedResources with resources=true, the OS name with os=true', async () => {
    const res = await h.call('GET', '/v1/nodes?resources=true&os=true&prefix=c0');
    const [c] = assertShape(Api.NodeListStub.array().length(1), res.body, 'GET /v1/nodes?resources=true&os=true');
    assert.deepEqual(c?.Attributes, { 'os.name': 'debian' });
    assert.equal(c?.NodeResources?.Cpu.CpuShares, 4000);
    assert.equal(c?.NodeResources?.Cpu.TotalCpuCores, 4);
    assert.equal(c?.NodeResources?.Networks?.[0]?.IP, '10.0.0.3');
    assert.equal(c?.ReservedResources?.Networks.ReservedHostPorts, '22,80-82');
  });

  it('keeps the nodes whose ID starts with `prefix`', async () => {
    const res = await h.call<Api.NodeListStub[]>('GET', '/v1/nodes?prefix=a');
    assert.deepEqual(res.body.map((n) => n.Name), ['n-a', 'n-b']);
    assert.deepEqual((await h.call<Api.NodeListStub[]>('GET', '/v1/nodes?prefix=ab')).body.map((n) => n.Name), ['n-b']);
    assert.deepEqual((await h.call<unknown[]>('GET', '/v1/nodes?prefix=ff')).body, []);
  });

  it('filters with a go-bexpr expression over the rows as answered, and refuses one that does not parse', async () => {
    const dc = await h.call<Api.NodeListStub[]>('GET', `/v1/nodes?filter=${encodeURIComponent('Datacenter == "dc2"')}`);
    assert.deepEqual(dc.body.map((n) => n.Name), ['n-b']);
    const drivers = await h.call<Api.NodeListStub[]>('GET', `/v1/nodes?filter=${encodeURIComponent('Drivers.exec.Healthy == true and Name != "n-a"')}`);
    assert.deepEqual(drivers.body.map((n) => n.Name), ['n-b', 'n-c']);
    const bad = await h.call('GET', `/v1/nodes?filter=${encodeURIComponent('Name ==')}`);
    assert.equal(bad.status, 400);
    assert.match(bad.text, /filter/);
  });

  it('pages with per_page and next_token, naming the next page in X-Nomad-NextToken', async () => {
    const first = await h.call<Api.NodeListStub[]>('GET', '/v1/nodes?per_page=2');
    assert.deepEqual(first.body.map((n) => n.Name), ['n-a', 'n-b']);
    const token = first.headers.get('x-nomad-nexttoken');
    assert.equal(token, ids['n-c']);
    const second = await h.call<Api.NodeListStub[]>('GET', `/v1/nodes?per_page=2&next_token=${token}`);
    assert.deepEqual(second.body.map((n) => n.Name), ['n-c']);
    assert.equal(second.headers.get('x-nomad-nexttoken'), null);
    const reversed = await h.call<Api.NodeListStub[]>('GET', '/v1/nodes?reverse=true&per_page=1');
    assert.deepEqual(reversed.body.map((n) => n.Name), ['n-c']);
  });

  it('answers a blocking query when a node changes, with a higher index', async () => {
    const before = await h.call('GET', '/v1/nodes');
    const at = index(before);
    let answered = false;
    const waiting = h.call<Api.NodeListStub[]>('GET', `/v1/nodes?index=${at}&wait=30s`).then((r) => {
      answered = true;
      return r;
    });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(answered, false, 'the query waits while nothing changes');
    assert.equal((await h.call('POST', `/v1/node/${ids['n-a']}/eligibility`, { body: { Eligibility: 'ineligible' } })).status, 200);
    const woke = await waiting;
    assert.ok(index(woke) > at);
    assert.equal(woke.body.find((n) => n.Name === 'n-a')?.SchedulingEligibility, 'ineligible');
    assert.equal((await h.call('POST', `/v1/node/${ids['n-a']}/eligibility`, { body: { Eligibility: 'eligible' } })).status, 200);
  });
});

describe('GET /v1/node/:id', () => {
  it('answers the whole node as Nomad encodes it', async () => {
    const res = await h.call('GET', `/v1/node/${ids['n-c']}`, { token: TOKENS.readOnly });
    assert.equal(res.status, 200);
    const n = assertShape(Api.Node, res.body, 'GET /v1/node/:id');
    assert.equal(n.ID, ids['n-c']);
    assert.equal(n.HTTPAddr, '10.0.0.3:4646');
    assert.equal(n.TLSEnabled, false);
    assert.equal(n.Status, 'ready');
    assert.equal(n.SchedulingEligibility, 'eligible');
    assert.equal(n.Drain, false);
    assert.equal(n.DrainStrategy, null);
    assert.deepEqual(n.Meta, { rack: 'r1' });
    assert.equal(n.Resources?.CPU, 4000, 'Nomad 1.1 reads the deprecated Resources');
    assert.equal(n.Reserved?.CPU, 0);
    assert.deepEqual(n.HostNetworks?.['public'], { Name: 'public', CIDR: '10.0.0.0/24', Interface: '', ReservedPorts: '443', BerthAddress: '10.0.0.3' });
    assert.equal(n.BerthStopAfterServerDisconnect, 30_000 * 1e6);
    assert.equal(n.CSINodePlugins?.['hp']?.NodeInfo?.MaxVolumes, 10);
    assert.deepEqual(n.CSINodePlugins?.['hp']?.NodeInfo?.AccessibleTopology, { Segments: { zone: 'a' } });
    assert.equal(n.CSIControllerPlugins?.['hp']?.ControllerInfo?.SupportsCreateDelete, true);
    assert.equal(n.CSIControllerPlugins?.['hp']?.RequiresControllerPlugin, true);
    assert.equal(n.CSIControllerPlugins?.['hp']?.NodeInfo, undefined, 'a controller has no NodeInfo (omitempty)');
    assert.deepEqual(n.Events?.map((e) => [e.Subsystem, e.Message]), [['Cluster', 'Node registered']]);
    assert.equal(n.StatusUpdatedAt, Math.floor(1_700_000_000_000 / 1000));
    assert.ok(index(res) > 0);
  });

  it('answers 404 "node not found" as plain text (JSON with its code to a caller that accepts JSON)', async () => {
    const res = await h.call('GET', '/v1/node/00000000-0000-4000-8000-00000000dead', { accept: null });
    assert.equal(res.status, 404);
    assert.equal(res.text, 'node not found');
    const json = await fetch(`${h.url}/v1/node/nobody`, { headers: { authorization: `Bearer ${TOKENS.management}`, accept: 'application/json' } });
    assert.equal(json.status, 404);
    assert.equal(((await json.json()) as { code: string }).code, 'NOT_FOUND');
  });

  it('lets a node token read a node, as the node agent does', async () => {
    assert.equal((await h.call('GET', `/v1/node/${ids['n-a']}`, { token: TOKENS.node })).status, 200);
  });
});

describe('node writes', () => {
  it('drains with Nomad\'s body (POST and PUT), and the blocked read of the node wakes with the drain', async () => {
    // A service allocation on the node (pending: no agent runs it) holds the drain open.
    const pinned = await h.submit({
      job: { id: 'pinned', constraints: [{ attribute: '${node.class}', operator: '=', value: 'gpu' }], groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] },
    });
    assert.equal(pinned.status, 200, pinned.text);
    const at = index(await h.call('GET', `/v1/node/${ids['n-b']}`));
    const waiting = h.call('GET', `/v1/node/${ids['n-b']}?index=${at}&wait=30s`);
    const body: Api.NodeUpdateDrainRequest = { DrainSpec: { Deadline: 600e9, IgnoreSystemJobs: true }, MarkEligible: false, Meta: { message: 'kernel upgrade' } };
    const res = await h.call('POST', `/v1/node/${ids['n-b']}/drain`, { body });
    assert.equal(res.status, 200, res.text);
    const out = assertShape(Api.NodeDrainUpdateResponse, res.body, 'POST /v1/node/:id/drain');
    assert.equal(index(res), out.Index);
    assert.ok(out.NodeModifyIndex > at);

    const woke = await waiting;
    assert.ok(index(woke) > at);
    const n = assertShape(Api.Node, woke.body, 'the drained node');
    assert.equal(n.Drain, true);
    assert.equal(n.SchedulingEligibility, 'ineligible');
    assert.equal(n.DrainStrategy?.Deadline, 600e9);
    assert.equal(n.DrainStrategy?.IgnoreSystemJobs, true);
    assert.equal(Date.parse(n.DrainStrategy?.ForceDeadline ?? '') - Date.parse(n.DrainStrategy?.StartedAt ?? ''), 600_000);
    assert.equal(n.LastDrain?.Status, 'draining');
    assert.deepEqual(n.LastDrain?.Meta, { message: 'kernel upgrade' });
    assert.equal(n.Events?.at(-1)?.Message, 'Node drain strategy set');

    // A draining node cannot be made eligible: cancel the drain first.
    const refused = await h.call('POST', `/v1/node/${ids['n-b']}/eligibility`, { body: { Eligibility: 'eligible' } });
    assert.equal(refused.status, 409);
    assert.match(refused.text, /draining/);

    // Nomad's Go client sends PUT; a null DrainSpec cancels, MarkEligible makes it eligible again.
    const cancel = await h.call('PUT', `/v1/node/${ids['n-b']}/drain`, { body: { DrainSpec: null, MarkEligible: true } });
    assert.equal(cancel.status, 200, cancel.text);
    assertShape(Api.NodeDrainUpdateResponse, cancel.body, 'PUT /v1/node/:id/drain');
    const after = assertShape(Api.Node, (await h.call('GET', `/v1/node/${ids['n-b']}`)).body, 'the node after the cancel');
    assert.equal(after.Drain, false);
    assert.equal(after.SchedulingEligibility, 'eligible');
    assert.equal(after.LastDrain?.Status, 'canceled');
    assert.deepEqual(after.LastDrain?.Meta, { message: 'kernel upgrade' }, 'the drain meta is kept');
    assert.equal(after.Events?.at(-1)?.Message, 'Node drain disabled');
    assert.equal((await h.call('DELETE', '/v1/job/pinned?purge=true')).status, 200);
  });

  it('refuses a malformed drain or eligibility body with 400 naming the field', async () => {
    const drain = await h.call('POST', `/v1/node/${ids['n-b']}/drain`, { body: { DrainSpec: { Deadline: 'soon' } } });
    assert.equal(drain.status, 400);
    assert.match(drain.text, /DrainSpec\.Deadline/);
    const elig = await h.call('POST', `/v1/node/${ids['n-b']}/eligibility`, { body: { Eligibility: 'maybe' } });
    assert.equal(elig.status, 400);
    assert.match(elig.text, /Eligibility/);
    const unknown = await h.call('POST', '/v1/node/nobody/drain', { body: { DrainSpec: { Deadline: 0, IgnoreSystemJobs: false } } });
    assert.equal(unknown.status, 404);
  });

  it('sets eligibility with Nomad\'s body and answers NodeEligibilityUpdateResponse, with a node event', async () => {
    const res = await h.call('POST', `/v1/node/${ids['n-a']}/eligibility`, { body: { NodeID: ids['n-a'], Eligibility: 'ineligible' } });
    assert.equal(res.status, 200, res.text);
    assertShape(Api.NodeEligibilityUpdateResponse, res.body, 'POST /v1/node/:id/eligibility');
    const n = (await h.call<Api.Node>('GET', `/v1/node/${ids['n-a']}`)).body;
    assert.equal(n.SchedulingEligibility, 'ineligible');
    assert.equal(n.Events?.at(-1)?.Message, 'Node marked as ineligible for scheduling');
    assert.equal((await h.call('PUT', `/v1/node/${ids['n-a']}/eligibility`, { body: { Eligibility: 'eligible' } })).status, 200);
  });

  it('force-evaluates the node\'s jobs, answering their evaluations', async () => {
    const sys = await h.submit({ job: { id: 'everywhere', type: 'system', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] } });
    assert.equal(sys.status, 200, sys.text);
    const res = await h.call('POST', `/v1/node/${ids['n-a']}/evaluate`);
    assert.equal(res.status, 200, res.text);
    const out = assertShape(Api.NodeUpdateResponse, res.body, 'POST /v1/node/:id/evaluate');
    assert.equal(out.EvalIDs?.length, 1, 'the system job is evaluated for the node');
    const evaluation = (await h.call<Api.Evaluation>('GET', `/v1/evaluation/${out.EvalIDs?.[0]}`)).body;
    assert.equal(evaluation.TriggeredBy, 'node-update');
    assert.equal(evaluation.NodeID, ids['n-a']);
    assert.equal((await h.call('PUT', '/v1/node/nobody/evaluate')).status, 404);
  });

  it('purges a node: gone from reads, its jobs evaluated; the node agent registers again to come back', async () => {
    const res = await h.call('POST', `/v1/node/${ids['n-a']}/purge`);
    assert.equal(res.status, 200, res.text);
    const out = assertShape(Api.NodeUpdateResponse, res.body, 'POST /v1/node/:id/purge');
    assertShape(Api.NodePurgeResponse, { EvalIDs: out.EvalIDs, EvalCreateIndex: out.EvalCreateIndex, NodeModifyIndex: out.NodeModifyIndex }, 'what api.NodePurgeResponse reads');
    assert.equal(out.EvalIDs?.length, 1, 'the system job that ran there is evaluated');
    assert.equal((await h.call('GET', `/v1/node/${ids['n-a']}`)).status, 404);
    assert.deepEqual((await h.call<Api.NodeListStub[]>('GET', '/v1/nodes')).body.map((n) => n.Name), ['n-b', 'n-c']);
    assert.equal((await h.call('POST', `/v1/node/${ids['n-a']}/heartbeat`, { token: TOKENS.node, body: {} })).status, 404, 'the agent is told to register again');
    assert.equal((await h.call('POST', `/v1/node/${ids['n-a']}/purge`)).status, 404);
    const back = await h.call('POST', '/v1/node/register', { token: TOKENS.node, body: { id: ids['n-a'], fingerprint: fingerprint('n-a') } });
    assert.equal(back.status, 200);
    assert.equal((await h.call('GET', `/v1/node/${ids['n-a']}`)).status, 200);
  });

  it('refuses node writes to a read-only token', async () => {
    for (const [method, path] of [
      ['POST', 'drain'],
      ['POST', 'eligibility'],
      ['POST', 'purge'],
      ['POST', 'evaluate'],
    ] as const) {
      assert.equal((await h.call(method, `/v1/node/${ids['n-c']}/${path}`, { token: TOKENS.readOnly, body: {} })).status, 403, path);
    }
  });
});
