// End to end over the real HTTP API: the server, and a fake node agent that
// registers over HTTP, opens the node connection (a real WebSocket), runs a
// real FakePlugin through a CsiClient and answers the server's node calls.
// Volume create -> job placement -> claim (ControllerPublish through the
// connection) -> allocation finished -> claim released by the watcher.
// Secrets and mount flags never appear in a response, an event or a log line.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { WebSocket } from 'ws';
import { EVENT_PAYLOADS, Events, type CSIPluginListStub, type CSIVolume, type CSIVolumeCreateResponse, type JobRegisterResponse } from '../../src/api/index.js';
import { FakePlugin } from '../support/csi-fake/index.js';
import { registration } from '../support/nomad-jobs.js';
import { createLogger, systemClock } from '../../src/lib/index.js';
import { FakeNodeAgent, socketBridge } from '../support/node-agent-fake/index.js';
import type { Allocation, NodeRpcRequest, VolumeClaim } from '../../src/structs/index.js';
import { startServer, TOKENS, type Answer, type Harness } from './_harness.js';
import { eventually } from '../support/eventually.js';
import { assertShape } from '../support/strict-schema.js';

const SECRET = 'hunter2-very-secret';
const FLAG = `password=${SECRET}`;

/**
 * Every answer body seen, to search for secrets at the end, except the
 * answers to the node's own claim calls: those carry the volume's secrets to
 * the node that must pass them to NodeStage/NodePublish (checked apart).
 */
const seen: string[] = [];
const nodeClaimAnswers: string[] = [];
const logLines: string[] = [];

let h: Harness;
let dir: string;
let plugin: FakePlugin;
let agent: FakeNodeAgent;
let ws: WebSocket;


async function call<T>(method: string, path: string, opts: { body?: unknown; token?: string | null } = {}): Promise<Answer<T>> {
  const res = await h.call<T>(method, path, opts);
  if (/\/claim(\?|$)/.test(path) && opts.token === TOKENS.node) nodeClaimAnswers.push(res.text);
  else seen.push(res.text);
  return res;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'berth-e2e-'));
  const logs = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logLines.push(chunk.toString());
      cb();
    },
  });
  // The real clock: the claim watcher's backoff and the node TTL run as in production.
  h = await startServer({ clock: systemClock, logger: createLogger({ level: 'debug', destination: logs }) });
  plugin = new FakePlugin({ socketPath: join(dir, 'plugin.sock'), nodeId: 'ext-node-1' });
  await plugin.start();

  // Register first (the connection is refused for unknown nodes), then connect.
  const bridge = socketBridge(() => ws);
  agent = new FakeNodeAgent({ nodeId: 'node-1', connections: bridge.connections, plugins: { fake: `unix://${join(dir, 'plugin.sock')}` } });
  const fp = await agent.fingerprint({ now: Date.now() });
  const reg = await call('POST', '/v1/node/register', { token: TOKENS.node, body: { id: 'node-1', fingerprint: fp } });
  assert.equal(reg.status, 200, reg.text);
  ws = new WebSocket(`${h.url.replace('http', 'ws')}/v1/node/connect?nodeId=node-1`, { headers: { authorization: `Bearer ${TOKENS.node}` } });
  ws.on('message', (data) => bridge.deliver(JSON.parse(String(data)) as NodeRpcRequest));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  agent.connect();
  await eventually('the node connection', async () =>
    (await call<{ stats: Record<string, Record<string, string>> }>('GET', '/v1/agent/self')).body.stats['berth']?.['connected_nodes'] === '1' ? true : undefined,
  );
});

after(async () => {
  ws?.close();
  await agent?.close();
  await h?.close();
  await plugin?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('server with a fake node agent over the real HTTP API', () => {
  it('refuses a node connection without a node token (401) and for an unknown node', async () => {
    const res = await fetch(`${h.url}/v1/node/connect?nodeId=node-1`, { headers: { authorization: `Bearer ${TOKENS.readOnly}` } });
    assert.equal(res.status, 403);
    const closed = await new Promise<number>((resolve) => {
      const s = new WebSocket(`${h.url.replace('http', 'ws')}/v1/node/connect?nodeId=nobody`, { headers: { authorization: `Bearer ${TOKENS.node}` } });
      s.on('close', (code) => resolve(code));
      s.on('error', () => resolve(-1));
    });
    assert.equal(closed, 4404);
  });

  it('creates a volume through the controller on the node, places a job, claims and releases it', async () => {
    const plugins = await eventually('the plugin to be derived', async () => {
      const p = await call<CSIPluginListStub[]>('GET', '/v1/plugins?type=csi', { token: TOKENS.readOnly });
      return p.body.find((x) => x.ID === 'fake' && x.NodesHealthy === 1 && x.ControllersHealthy === 1);
    });
    assert.ok(plugins);

    const created = await call<CSIVolumeCreateResponse>('PUT', '/v1/volume/csi/data/create', {
      body: {
        Volumes: [
          {
            ID: 'data',
            PluginID: 'fake',
            Name: 'data',
            RequestedCapabilities: [{ AccessMode: 'single-node-writer', AttachmentMode: 'file-system' }],
            MountOptions: { FSType: 'ext4', MountFlags: [FLAG] },
            Secrets: { password: SECRET },
            RequestedCapacityMin: 1024 * 1024,
          },
        ],
      },
    });
    assert.equal(created.status, 200, created.text);
    assert.deepEqual(created.body.Volumes?.[0]?.BerthSecretNames, ['password']);
    assert.equal(plugin.callsTo('CreateVolume').length, 1);

    // Registering a volume the plugin does not have fails with the plugin's answer, as an error envelope.
    const missing = await call<string>('PUT', '/v1/volume/csi/ghost', {
      body: { Volumes: [{ ID: 'ghost', PluginID: 'fake', ExternalID: 'no-such-volume', RequestedCapabilities: [{ AccessMode: 'single-node-writer', AttachmentMode: 'file-system' }] }] },
    });
    assert.ok(missing.status >= 400 && missing.status < 500, missing.text);
    assert.ok(missing.text.length > 0, 'the error in plain text');

    const job = await call<JobRegisterResponse>('PUT', '/v1/jobs', {
      body: registration({
          id: 'db',
          groups: [
            {
              name: 'db',
              volumes: { data: { type: 'csi', source: 'data', accessMode: 'single-node-writer', attachmentMode: 'file-system', mountOptions: { mountFlags: [FLAG] } } },
              tasks: [{ name: 'pg', driver: 'exec', volumeMounts: [{ volume: 'data', destination: '/data' }] }],
            },
          ],
      }),
    });
    assert.equal(job.status, 200, job.text);
    assert.equal((await h.settled(job.body.EvalID)).Status, 'complete');
    // The node itself gets the job's mount flags (it mounts with them); nobody else does.
    const allocs = await h.call<Allocation[]>('GET', '/v1/internal/node/node-1/allocations', { token: TOKENS.node });
    assert.equal(allocs.body.length, 1);
    assert.ok(allocs.text.includes(FLAG));
    const asReader = await call<Allocation[]>('GET', '/v1/internal/node/node-1/allocations', { token: TOKENS.readOnly });
    assert.ok(!asReader.text.includes(FLAG) && asReader.text.includes('[REDACTED]'));
    const alloc = allocs.body[0]!;

    // The agent claims the volume for its allocation: ControllerPublish travels over the node connection.
    const claim = await call<VolumeClaim>('POST', '/v1/volume/csi/data/claim', { token: TOKENS.node, body: { allocId: alloc.id, mode: 'write' } });
    assert.equal(claim.status, 200, claim.text);
    assert.equal(claim.body.state, 'taken');
    assert.equal(plugin.callsTo('ControllerPublishVolume').length, 1);
    assert.equal(plugin.callsTo('ControllerPublishVolume')[0]!.request['nodeId'], 'ext-node-1', "the plugin's own node ID");

    // A second writer is refused while the first holds the single-node-writer volume.
    const second = await call<{ code: string }>('POST', '/v1/volume/csi/data/claim', { token: TOKENS.node, body: { allocId: 'other-alloc', mode: 'write' } });
    assert.ok(second.status === 409 || second.status === 404, second.text);

    const volume = await call<CSIVolume>('GET', '/v1/volume/csi/data', { token: TOKENS.readOnly });
    assert.equal(volume.body.BerthClaims.length, 1);

    // The allocation finishes: the claim watcher releases the claim (node detach, then ControllerUnpublish).
    await call('POST', '/v1/internal/node/node-1/allocations', { token: TOKENS.node, body: { allocations: [{ id: alloc.id, clientStatus: 'complete' }] } });
    await eventually('the claim to be released', async () => {
      const v = await call<CSIVolume>('GET', '/v1/volume/csi/data', { token: TOKENS.readOnly });
      return v.body.BerthClaims.length === 0 ? true : undefined;
    });
    assert.equal(plugin.callsTo('ControllerUnpublishVolume').length, 1);
    assert.ok(agent.callsOf('csi.node.detach').length >= 1, 'the node was asked to unpublish and unstage');

    // Deregistering while no claims remain works; the volume is gone.
    const dereg = await call('DELETE', '/v1/volume/csi/data?force=false');
    assert.equal(dereg.status, 200, dereg.text);
    assert.equal((await call('GET', '/v1/volume/csi/data')).status, 404);
  });

  it('never shows a secret or mount flag in a response, an event or a log line', async () => {
    // Everything the event stream holds, from the beginning, in every namespace.
    const res = await fetch(`${h.url}/v1/event/stream?index=0&namespace=*&until=now`, { headers: { authorization: `Bearer ${TOKENS.readOnly}` } });
    const text = await res.text();
    assert.match(text, /"Topic":"CSIVolume"/);
    assert.match(text, /"Topic":"claim"/);
    // Each event's payload in its topic's shape (strict), as the routes answer it.
    for (const line of text.split('\n').filter((l) => l.trim() && l !== '{}')) {
      for (const ev of assertShape(Events, JSON.parse(line), 'frame').Events) {
        assertShape(EVENT_PAYLOADS[ev.Topic as keyof typeof EVENT_PAYLOADS], ev.Payload, `${ev.Topic} ${ev.Type} payload`);
      }
    }
    seen.push(text);
    for (const path of ['/v1/jobs', '/v1/job/db', '/v1/volumes?type=csi', '/v1/nodes', '/v1/plugins?type=csi', '/v1/plugin/csi/fake', '/v1/allocations', '/v1/evaluations']) {
      await call('GET', path, { token: TOKENS.readOnly });
    }
    const all = seen.join('\n');
    assert.ok(all.length > 1000);
    assert.ok(!all.includes(SECRET), 'a secret reached a response or event');
    assert.ok(!logLines.join('').includes(SECRET), 'a secret reached the log');
    // The plugin itself did get them: the secrets were used, just never shown.
    const publish = plugin.callsTo('ControllerPublishVolume')[0]!;
    assert.equal((publish.request['secrets'] as { reveal(): Record<string, string> }).reveal()['password'], SECRET);
    // And the node that mounts the volume got them in its claim answer, for NodeStage/NodePublish.
    assert.ok(nodeClaimAnswers.some((t) => t.includes(SECRET)), 'the node was not given the secrets it must pass on');
  });
});
