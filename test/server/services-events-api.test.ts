// Contract tests of Nomad's service discovery routes and of the event stream
// against a real server: answers checked against their src/api schemas made
// strict all the way down, the stream's frames (one per store index),
// heartbeats, topic and namespace filters and Nomad's `index`. Most rows are
// written to the store directly, so these tests follow the stream and the
// services routes and nothing of the routes that write them; the last one
// makes an event of every topic through the routes that write them (a node
// agent with a fake CSI plugin, a rolling job, a volume, its claim and
// condition, the drift loop) and checks each payload against its topic's
// schema (EVENT_PAYLOADS), strictly.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { z } from 'zod';
import {
  AllocationListStub,
  EVENT_PAYLOADS,
  EVENT_TYPES,
  EventHeartbeat,
  Events,
  ServiceRegistration,
  ServiceRegistrationListStub,
  type Event,
  type JobRegisterResponse,
} from '../../src/api/index.js';
import { rowKey } from '../../src/server/state/index.js';
import { DriftWatcher } from '../../src/server/volumehealth/index.js';
import { parseJobSpec, type Job, type NodeRpcRequest, type ServiceRegistration as StoredRegistration } from '../../src/structs/index.js';
import { volumeRequest } from '../support/csi-api.js';
import { FakePlugin } from '../support/csi-fake/index.js';
import { eventually } from '../support/eventually.js';
import { FakeNodeAgent, socketBridge } from '../support/node-agent-fake/index.js';
import { testAllocation } from '../support/server-rows.js';
import { assertShape } from '../support/strict-schema.js';
import { startServer, TOKENS, type Harness } from './_harness.js';

let h: Harness;
before(async () => {
  h = await startServer();
});
after(async () => {
  await h.close();
});

function registration(id: string, serviceName: string, extra: Partial<StoredRegistration> = {}): Omit<StoredRegistration, 'createIndex' | 'modifyIndex'> {
  return { id, serviceName, namespace: 'default', nodeId: 'n1', datacenter: 'dc1', jobId: 'shop', allocId: `alloc-${id}`, tags: ['v1'], meta: { team: 'a' }, address: '10.0.0.5', port: 8080, ...extra };
}

function job(id: string, namespace = 'default'): Omit<Job, 'createIndex' | 'modifyIndex'> {
  const spec = parseJobSpec({ id, namespace, groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });
  return { ...spec, stop: false, status: 'pending', version: 0, groupVersions: {}, submitTime: 0 };
}

async function nomadGet(path: string, token: string = TOKENS.readOnly): Promise<{ status: number; body: unknown; text: string; headers: Headers }> {
  const res = await fetch(h.url + path, { headers: { 'X-Nomad-Token': token } });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body, text, headers: res.headers };
}

describe('services', () => {
  it("/v1/services lists each namespace's services with their tags; /v1/service/:name its instances; Nomad's filter applies", async () => {
    await h.server.store.write((txn) => {
      txn.put('services', registration('api-1', 'api', { tags: ['v1', 'blue'] }));
      txn.put('services', registration('api-2', 'api', { tags: ['v2'], nodeId: 'n2', address: '10.0.0.6' }));
      txn.put('services', registration('db-1', 'db', { tags: [] }));
      txn.put('services', registration('other-1', 'api', { namespace: 'prod' }));
    });
    const list = await nomadGet('/v1/services');
    assert.equal(list.status, 200);
    assert.deepEqual(assertShape(z.array(ServiceRegistrationListStub), list.body), [
      { Namespace: 'default', Services: [{ ServiceName: 'api', Tags: ['blue', 'v1', 'v2'] }, { ServiceName: 'db', Tags: [] }] },
    ]);
    assert.ok(Number(list.headers.get('x-nomad-index')) >= 1);
    const all = assertShape(z.array(ServiceRegistrationListStub), (await nomadGet('/v1/services?namespace=*')).body);
    assert.deepEqual(all.map((n) => n.Namespace), ['default', 'prod']);

    const api = await nomadGet('/v1/service/api', TOKENS.node);
    assert.equal(api.status, 200, 'nodes read services (templates)');
    const instances = assertShape(z.array(ServiceRegistration), api.body);
    assert.deepEqual(instances.map((r) => r.ID), ['api-1', 'api-2']);
    assert.deepEqual(instances[0], {
      ID: 'api-1',
      ServiceName: 'api',
      Namespace: 'default',
      NodeID: 'n1',
      Datacenter: 'dc1',
      JobID: 'shop',
      AllocID: 'alloc-api-1',
      Tags: ['v1', 'blue'],
      Meta: { team: 'a' },
      Address: '10.0.0.5',
      Port: 8080,
      CreateIndex: instances[0]!.CreateIndex,
      ModifyIndex: instances[0]!.ModifyIndex,
    });
    const filtered = assertShape(z.array(ServiceRegistration), (await nomadGet(`/v1/service/api?filter=${encodeURIComponent('NodeID == "n2"')}`)).body);
    assert.deepEqual(filtered.map((r) => r.ID), ['api-2']);
    assert.deepEqual(assertShape(z.array(ServiceRegistration), (await nomadGet('/v1/service/api?tag=blue')).body).map((r) => r.ID), ['api-1']);
    assert.deepEqual((await nomadGet('/v1/service/nothing')).body, [], 'an unknown service has no instances');
  });

  it('DELETE /v1/service/:name/:id answers no body and the index, for management tokens only; a blocking read of the service wakes', async () => {
    const first = await nomadGet('/v1/service/db');
    const index = Number(first.headers.get('x-nomad-index'));
    const woke = nomadGet(`/v1/service/db?index=${index}&wait=20s`);
    assert.equal((await h.call('DELETE', '/v1/service/db/db-1', { token: TOKENS.readOnly })).status, 403);
    const del = await h.call('DELETE', '/v1/service/db/db-1');
    assert.equal(del.status, 200);
    assert.equal(del.text, '');
    const deletedAt = Number(del.headers.get('x-nomad-index'));
    assert.ok(deletedAt > index);
    const after = await woke;
    assert.deepEqual(after.body, []);
    assert.equal(Number(after.headers.get('x-nomad-index')), deletedAt);
    assert.equal((await h.call('DELETE', '/v1/service/db/db-1')).status, 404);
  });
});

/** Reads a stream's lines until `done` says so (or it ends), then aborts it. */
async function readLines(path: string, done: (lines: unknown[]) => boolean, token: string = TOKENS.readOnly): Promise<{ lines: unknown[]; headers: Headers }> {
  const ac = new AbortController();
  const res = await fetch(h.url + path, { headers: { 'X-Nomad-Token': token }, signal: ac.signal });
  assert.equal(res.status, 200, await (res.status === 200 ? Promise.resolve('') : res.text()));
  const lines: unknown[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  try {
    while (!done(lines)) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buf.slice(0, nl)));
        buf = buf.slice(nl + 1);
      }
    }
  } finally {
    ac.abort();
  }
  return { lines, headers: res.headers };
}

/** Every frame checked against Events (strict), every payload against its topic's. */
function framesOf(lines: readonly unknown[]): Events[] {
  const frames: Events[] = [];
  for (const line of lines) {
    if (line && typeof line === 'object' && Object.keys(line).length === 0) {
      assertShape(EventHeartbeat, line, 'heartbeat');
      continue;
    }
    const frame = assertShape(Events, line, 'frame');
    for (const ev of frame.Events) {
      assert.equal(ev.Index, frame.Index, "an event's index is its frame's");
      const payload = EVENT_PAYLOADS[ev.Topic as keyof typeof EVENT_PAYLOADS];
      assert.ok(payload, `a payload schema for topic ${ev.Topic}`);
      assertShape(payload, ev.Payload, `${ev.Topic} payload`);
      assert.ok((EVENT_TYPES[ev.Topic as keyof typeof EVENT_TYPES] as readonly string[]).includes(ev.Type), `${ev.Topic} type ${ev.Type}`);
    }
    frames.push(frame);
  }
  return frames;
}

describe('the event stream', () => {
  let start = 0;
  let jobAt = 0;
  let servicesAt = 0;
  before(async () => {
    start = h.server.store.latestIndex() + 1;
    ({ index: jobAt } = await h.server.store.write((txn) => txn.put('jobs', job('shop'))));
    ({ index: servicesAt } = await h.server.store.write((txn) => {
      txn.put('services', registration('web-1', 'web', { jobId: 'shop' }));
      txn.put('services', registration('web-2', 'web', { jobId: 'shop' }));
    }));
    await h.server.store.write((txn) => txn.put('allocations', testAllocation('a-1', 'n1', { jobId: 'shop' })));
    await h.server.store.write((txn) => txn.put('jobs', job('elsewhere', 'prod')));
    await h.server.store.write((txn) => txn.delete('jobs', rowKey('default', 'shop')));
  });

  it('index=N&until=now: one frame per store index from N on (the changes of one write together), in Nomad\'s shapes, then the end', async () => {
    const { lines } = await readLines(`/v1/event/stream?index=${start}&until=now`, () => false);
    const frames = framesOf(lines);
    assert.ok(lines.every((l) => Object.keys(l as object).length > 0), 'a history has no heartbeats');
    assert.equal(frames[0]?.Index, jobAt, 'the frame at `index` is the first');
    const job = frames[0]!.Events[0]!;
    assert.deepEqual([job.Topic, job.Type, job.Key, job.Namespace, job.FilterKeys], ['Job', 'JobRegistered', 'shop', 'default', null]);
    const services = frames.find((f) => f.Index === servicesAt)!;
    assert.deepEqual(services.Events.map((e) => [e.Topic, e.Type, e.Key, e.FilterKeys]), [
      ['Service', 'ServiceRegistration', 'web-1', ['shop', 'web']],
      ['Service', 'ServiceRegistration', 'web-2', ['shop', 'web']],
    ]);
    assertShape(EVENT_PAYLOADS.Service, services.Events[0]!.Payload);
    const alloc = frames.flatMap((f) => f.Events).find((e) => e.Topic === 'Allocation')!;
    assert.deepEqual([alloc.Type, alloc.Key, alloc.FilterKeys], ['PlanResult', 'a-1', ['shop', '']]);
    const gone = frames[frames.length - 1]!.Events[0]!;
    assert.deepEqual([gone.Topic, gone.Type, gone.Payload['Deleted']], ['Job', 'JobDeregistered', true]);
    assert.ok(!frames.some((f) => f.Events.some((e) => e.Namespace === 'prod')), 'the default namespace only');
    const everywhere = framesOf((await readLines(`/v1/event/stream?index=${start}&until=now&namespace=*`, () => false)).lines);
    assert.ok(everywhere.some((f) => f.Events.some((e) => e.Namespace === 'prod' && e.Key === 'elsewhere')), 'namespace=* has every namespace');
  });

  it('topic=Topic:key keeps the events whose key or filter keys name it; topic=Topic every key of that topic', async () => {
    const web = framesOf((await readLines(`/v1/event/stream?index=${start}&until=now&topic=Service:web`, () => false)).lines);
    assert.deepEqual(web.flatMap((f) => f.Events.map((e) => e.Key)), ['web-1', 'web-2'], 'by the service name, a filter key');
    const byJob = framesOf((await readLines(`/v1/event/stream?index=${start}&until=now&topic=Allocation:shop&topic=Service:web-2`, () => false)).lines);
    assert.deepEqual(byJob.flatMap((f) => f.Events.map((e) => `${e.Topic}:${e.Key}`)), ['Service:web-2', 'Allocation:a-1']);
    const jobs = framesOf((await readLines(`/v1/event/stream?index=${start}&until=now&topic=Job&namespace=*`, () => false)).lines);
    assert.deepEqual(jobs.flatMap((f) => f.Events.map((e) => `${e.Type}:${e.Key}`)), ['JobRegistered:shop', 'JobRegistered:elsewhere', 'JobDeregistered:shop']);
    const bad = await nomadGet('/v1/event/stream?topic=Weather');
    assert.equal(bad.status, 400);
    assert.match(bad.text, /^Invalid topic query: unknown topic "Weather"/, "Nomad's plain-text error");
  });

  it('a followed stream opens with a {} heartbeat, sends one while idle, and a frame for each change as it commits', async () => {
    let wrote = 0;
    const reading = readLines('/v1/event/stream?topic=Service', (lines) => {
      const beats = lines.filter((l) => Object.keys(l as object).length === 0).length;
      // Once it opened and was idle for a heartbeat interval, a change.
      if (beats >= 2 && wrote === 0) {
        wrote = 1;
        void h.server.store.write((txn) => txn.put('services', registration('late-1', 'late'))).then(({ index }) => (wrote = index));
      }
      return lines.some((l) => (l as Partial<Events>).Events !== undefined);
    });
    const { lines, headers } = await reading;
    assert.deepEqual(lines[0], {}, 'Nomad opens its stream with a heartbeat');
    assert.ok(Number(headers.get('x-nomad-index')) >= 1);
    const frames = framesOf(lines);
    assert.equal(frames.length, 1);
    assert.deepEqual(frames[0]!.Events.map((e) => e.Key), ['late-1']);
    assert.equal(frames[0]!.Index, wrote);
  });

  it('refuses node tokens and a malformed index', async () => {
    assert.equal((await h.call('GET', '/v1/event/stream?until=now', { token: TOKENS.node })).status, 403);
    assert.equal((await h.call('GET', '/v1/event/stream?index=x&until=now')).status, 400);
  });
});


describe("every topic's events, made by the routes that write them, in their topic's shape", () => {
  let dir = '';
  let plugin: FakePlugin | undefined;
  let agent: FakeNodeAgent | undefined;
  let ws: WebSocket | undefined;
  let start = 0;

  before(async () => {
    start = h.server.store.latestIndex() + 1;
    dir = mkdtempSync(join(tmpdir(), 'berth-events-'));
    plugin = new FakePlugin({ socketPath: join(dir, 'plugin.sock'), nodeId: 'ext-node-1' });
    await plugin.start();
    const b = socketBridge(() => ws!);
    agent = new FakeNodeAgent({ nodeId: 'node-1', connections: b.connections, plugins: { fake: `unix://${join(dir, 'plugin.sock')}` } });
    const reg = await h.call('POST', '/v1/node/register', { token: TOKENS.node, body: { id: 'node-1', fingerprint: await agent.fingerprint({ now: Date.now() }) } });
    assert.equal(reg.status, 200, reg.text);
    ws = new WebSocket(`${h.url.replace('http', 'ws')}/v1/node/connect?nodeId=node-1`, { headers: { authorization: `Bearer ${TOKENS.node}` } });
    ws.on('message', (data) => b.deliver(JSON.parse(String(data)) as NodeRpcRequest));
    await new Promise<void>((resolve, reject) => {
      ws!.once('open', () => resolve());
      ws!.once('error', reject);
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
    await plugin?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('Job, Evaluation, Deployment, Allocation, Service, Node, CSIVolume, CSIPlugin, claim, volume-condition and drift: each payload parses strictly with EVENT_PAYLOADS', async () => {
    // A rolling service job, placed on node-1: Job, Evaluation, Deployment, Allocation.
    const update = { MaxParallel: 1, HealthCheck: 'manual', MinHealthyTime: 0, HealthyDeadline: 60e9, ProgressDeadline: 120e9 };
    const job = {
      ID: 'roll',
      Name: 'roll',
      Type: 'service',
      Datacenters: ['dc1'],
      TaskGroups: [{ Name: 'web', Count: 1, Update: update, Tasks: [{ Name: 'srv', Driver: 'exec', Config: { command: '/bin/true' }, Resources: { CPU: 100, MemoryMB: 64 } }] }],
    };
    const registered = await h.call<JobRegisterResponse>('PUT', '/v1/jobs', { body: { Job: job } });
    assert.equal(registered.status, 200, registered.text);
    const evaluation = await h.settled(registered.body.EvalID);
    assert.equal(evaluation.Status, 'complete', JSON.stringify(evaluation));
    const allocs = assertShape(z.array(AllocationListStub), (await h.call('GET', '/v1/job/roll/allocations')).body);
    const alloc = allocs[0];
    assert.ok(alloc && alloc.NodeID === 'node-1', JSON.stringify(allocs));
    // The node reports it running with a service: AllocationUpdated, Service.
    const running = await h.call('POST', '/v1/internal/node/node-1/allocations', {
      token: TOKENS.node,
      body: { allocations: [{ id: alloc.ID, clientStatus: 'running', services: [{ id: `svc-${alloc.ID}`, serviceName: 'roll-web', tags: ['v1'], meta: {}, address: '10.0.0.9', port: 8080 }] }] },
    });
    assert.equal(running.status, 200, running.text);
    // Volumes through the controller (CSIVolume); one deregistered again (a delete's payload is the row as it was).
    for (const id of ['data', 'scratch']) {
      const made = await h.call('PUT', `/v1/volume/csi/${id}/create`, {
        body: volumeRequest(id, { pluginId: 'fake', capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] }),
      });
      assert.equal(made.status, 200, made.text);
    }
    const dereg = await h.call('DELETE', '/v1/volume/csi/scratch');
    assert.equal(dereg.status, 200, dereg.text);
    // The node claims the volume for the allocation (claim), and reports it abnormal (volume-condition).
    const claim = await h.call('POST', '/v1/volume/csi/data/claim', { token: TOKENS.node, body: { allocId: alloc.ID, mode: 'write' } });
    assert.equal(claim.status, 200, claim.text);
    const stats = await h.call('POST', '/v1/node/node-1/volume-stats', {
      token: TOKENS.node,
      body: { reports: [{ namespace: 'default', volumeId: 'data', pluginId: 'fake', reportedAt: Date.now(), allocIds: [alloc.ID], condition: { abnormal: true, message: 'disk reports I/O errors' } }] },
    });
    assert.equal(stats.status, 200, stats.text);
    // One comparison of the drift loop (drift).
    await new DriftWatcher({ store: h.server.store, doctor: h.server.doctor }).checkNow();

    const events: Event[] = framesOf((await readLines(`/v1/event/stream?index=${start}&until=now&namespace=*`, () => false)).lines).flatMap((f) => f.Events);
    const topics = new Set(events.map((e) => e.Topic));
    assert.deepEqual(
      Object.keys(EVENT_PAYLOADS).filter((t) => !topics.has(t as Event['Topic'])),
      [],
      'an event of every topic',
    );
    const last = <K extends keyof typeof EVENT_PAYLOADS>(topic: K, pick: (e: Event) => boolean = () => true): z.infer<(typeof EVENT_PAYLOADS)[K]> => {
      const ev = events.filter((e) => e.Topic === topic && pick(e)).at(-1);
      assert.ok(ev, `an event of ${topic}`);
      return EVENT_PAYLOADS[topic].parse(ev.Payload) as z.infer<(typeof EVENT_PAYLOADS)[K]>;
    };
    // What Nomad's api.Event accessors read, as the routes answer it.
    assert.equal(last('Job').Job.ID, 'roll');
    const ev = last('Evaluation', (e) => e.Key === registered.body.EvalID).Evaluation;
    assert.deepEqual([ev.ID, ev.JobID, ev.Status], [registered.body.EvalID, 'roll', 'complete']);
    const deployment = last('Deployment').Deployment;
    assert.deepEqual([deployment.JobID, Object.keys(deployment.TaskGroups ?? {})], ['roll', ['web']]);
    const a = last('Allocation', (e) => e.Key === alloc.ID).Allocation;
    assert.deepEqual([a.ID, a.NodeID, a.JobID, a.Job?.ID, a.ClientStatus, a.DeploymentID], [alloc.ID, 'node-1', 'roll', 'roll', 'running', deployment.ID]);
    assert.deepEqual(last('Service', (e) => e.Key === `svc-${alloc.ID}`).Service.AllocID, alloc.ID);
    const node = last('Node', (e) => e.Key === 'node-1').Node;
    assert.deepEqual([node.ID, node.Status, Object.keys(node.CSINodePlugins ?? {})], ['node-1', 'ready', ['fake']]);
    assert.equal(last('CSIPlugin').Plugin.ID, 'fake');
    const volume = last('CSIVolume', (e) => e.Key === 'data').Volume;
    assert.deepEqual([volume.ID, volume.PluginID, volume.Secrets], ['data', 'fake', null]);
    const gone = events.filter((e) => e.Key === 'scratch').at(-1)!;
    assert.deepEqual([gone.Type, (gone.Payload['Volume'] as { ID: string }).ID], ['CSIVolumeDeregistered', 'scratch'], 'a delete carries the row as it was');
    const c = last('claim').Claim;
    assert.deepEqual([c.VolumeID, c.AllocationID, c.NodeID, c.Mode, c.JobID], ['data', alloc.ID, 'node-1', 'write', 'roll']);
    const condition = last('volume-condition').VolumeCondition;
    assert.deepEqual([condition.VolumeID, condition.PluginID, condition.Abnormal, condition.Message], ['data', 'fake', true, 'disk reports I/O errors']);
    assert.equal(condition.Sources[0]?.NodeID, 'node-1');
    assert.notEqual(last('drift').Drift.CheckedAt, '0001-01-01T00:00:00Z', 'the drift report says when it compared');
  });
});
