// A server agent answers the allocation's client routes (/v1/client/fs/...,
// /v1/client/allocation/:id/...) by forwarding them to the agent of the node
// that runs the allocation, as Nomad's servers do: one server agent and one
// client agent, real processes; every call here goes to the SERVER's address.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import * as api from '../../src/api/index.js';
import { jsonObjects } from '../../src/lib/index.js';
import { until } from '../support/agent-run.js';
import { Cluster } from '../support/process-cluster.js';
import { NOTE, startTalkerCluster } from '../support/ui-tools.js';

const cluster = new Cluster();
let allocId = '';
const server = () => cluster.servers[0]!;

/** A call to the server: status, text, headers. */
async function call(p: string, opts: { token?: string | null; method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<{ status: number; text: string; headers: Headers }> {
  const token = opts.token === undefined ? cluster.mgmt : opts.token;
  const res = await fetch(server().url + p, {
    method: opts.method ?? 'GET',
    headers: { ...(token ? { 'X-Nomad-Token': token } : {}), ...(opts.body ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    ...(opts.body ? { body: JSON.stringify(opts.body) } : {}),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

/** A streamed GET on the server: its frames' data as it comes, until `done` says so. */
async function streamed(p: string, done: (text: string) => boolean, ms = 20_000): Promise<string> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), ms);
  let text = '';
  try {
    const res = await fetch(server().url + p, { headers: { 'X-Nomad-Token': cluster.mgmt }, signal: ac.signal });
    if (res.status !== 200) assert.fail(`GET ${p}: ${res.status} ${await res.text()}`);
    for await (const f of jsonObjects(res.body as unknown as AsyncIterable<Uint8Array>)) {
      const frame = api.StreamFrame.parse(f);
      if (frame.Data) text += Buffer.from(frame.Data, 'base64').toString();
      if (done(text)) break;
    }
  } catch (err) {
    if (!ac.signal.aborted) throw err;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  return text;
}

/** An exec session through the server: the frames the caller got and how the socket closed. */
function exec(query: Record<string, string>, headers: Record<string, string>, send: unknown[]): Promise<{ frames: api.ExecStreamingOutput[]; code: number; reason: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${server().url.replace(/^http/, 'ws')}/v1/client/allocation/${allocId}/exec`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    const ws = new WebSocket(url, { headers });
    const got: api.ExecStreamingOutput[] = [];
    ws.on('open', () => send.forEach((m) => ws.send(JSON.stringify(m))));
    ws.on('message', (m: Buffer) => got.push(api.ExecStreamingOutput.parse(JSON.parse(m.toString()))));
    ws.on('close', (code, reason) => resolve({ frames: got, code, reason: reason.toString() }));
    ws.on('error', reject);
  });
}
const stdout = (frames: api.ExecStreamingOutput[]): string => frames.map((f) => (f.stdout?.data ? Buffer.from(f.stdout.data, 'base64').toString() : '')).join('');

before(async () => {
  allocId = await startTalkerCluster(cluster);
});

after(async () => {
  await cluster.close();
});

describe("a server agent forwards the allocation's client routes to its node's agent", { timeout: 240_000 }, () => {
  it('logs, plain and followed; fs ls and cat; stats and checks', async () => {
    const plain = await until('the task to have printed', async () => {
      const r = await call(`/v1/client/fs/logs/${allocId}?task=talk&type=stdout&plain=true`);
      assert.equal(r.status, 200, r.text);
      return /^out 3$/m.test(r.text) ? r.text : undefined;
    });
    assert.match(plain, /^out 1$/m);
    // Followed: lines keep arriving through the server after the ones already written.
    const last = Number([...plain.matchAll(/^out (\d+)$/gm)].at(-1)?.[1]);
    const later = `out ${last + 3}\n`;
    const followed = await streamed(`/v1/client/fs/logs/${allocId}?task=talk&type=stdout&follow=true&origin=end&offset=0`, (t) => t.includes(later));
    assert.ok(followed.includes(later), followed.slice(-200));

    const ls = await call(`/v1/client/fs/ls/${allocId}?path=/talk/local`);
    assert.equal(ls.status, 200, ls.text);
    assert.ok((JSON.parse(ls.text) as api.AllocFileInfo[]).some((f) => f.Name === 'note.txt'), ls.text);
    const cat = await call(`/v1/client/fs/cat/${allocId}?path=/talk/local/note.txt`);
    assert.deepEqual([cat.status, cat.text], [200, `${NOTE}\n`]);
    const missing = await call(`/v1/client/fs/cat/${allocId}?path=/talk/local/nothing-here`);
    assert.equal(missing.status, 404, "the node's own refusal comes back as it is");

    const stats = await call(`/v1/client/allocation/${allocId}/stats`);
    assert.equal(stats.status, 200, stats.text);
    const usage = JSON.parse(stats.text) as api.AllocResourceUsage;
    assert.ok(usage.Tasks?.['talk']?.ResourceUsage?.MemoryStats, stats.text);
    // The node's check results: the job has no service check, so none (not the server's 404).
    const checks = await call(`/v1/client/allocation/${allocId}/checks`);
    assert.equal(checks.status, 200, checks.text);
    assert.deepEqual(JSON.parse(checks.text), {});
  });

  it('restarts a task through the server; a read-only token may read but not restart', async () => {
    const before = await cluster.read<api.Allocation>(`/v1/allocation/${allocId}`);
    const restarts = before.TaskStates?.['side']?.Restarts ?? 0;
    const refused = await call(`/v1/client/allocation/${allocId}/restart`, { method: 'POST', body: { TaskName: 'side' }, token: cluster.readOnly });
    assert.equal(refused.status, 403, refused.text);
    assert.equal((await call(`/v1/client/allocation/${allocId}/stats`, { token: cluster.readOnly })).status, 200);
    const r = await call(`/v1/client/allocation/${allocId}/restart`, { method: 'POST', body: { TaskName: 'side' } });
    assert.equal(r.status, 200, r.text);
    await until('the restart to show in the allocation', async () => {
      const a = await cluster.read<api.Allocation>(`/v1/allocation/${allocId}`);
      return (a.TaskStates?.['side']?.Restarts ?? 0) > restarts || undefined;
    });
    const unknownTask = await call(`/v1/client/allocation/${allocId}/restart`, { method: 'POST', body: { TaskName: 'nope' } });
    assert.equal(unknownTask.status, 404);
    assert.match(unknownTask.text, /has no task "nope"/, "the node's words");
  });

  it('runs a command over the exec WebSocket through the server, with a header token or a handshake; refusals close with the reason', async () => {
    const command = JSON.stringify(['/bin/sh', '-c', 'read x; echo "hi $x"; exit 3']);
    const input = [{ stdin: { data: Buffer.from('there\n').toString('base64') } }, { stdin: { close: true } }];
    const out = await exec({ task: 'talk', command }, { 'X-Nomad-Token': cluster.mgmt }, input);
    assert.equal(stdout(out.frames), 'hi there\n');
    assert.deepEqual(out.frames.at(-1), { exited: true, result: { exit_code: 3 } });
    assert.equal(out.code, 1000);

    const browser = await exec({ task: 'talk', command: JSON.stringify(['echo', 'hi']), ws_handshake: 'true' }, {}, [{ version: 1, auth_token: cluster.mgmt }]);
    assert.equal(stdout(browser.frames), 'hi\n');
    assert.deepEqual(browser.frames.at(-1), { exited: true, result: { exit_code: 0 } });

    const reader = await exec({ task: 'talk', command: JSON.stringify(['echo', 'hi']), ws_handshake: 'true' }, {}, [{ version: 1, auth_token: cluster.readOnly }]);
    assert.deepEqual([reader.code, reader.frames], [1008, []]);
    assert.match(reader.reason, /read-only/);
    const unknownTask = await exec({ task: 'nope', command: JSON.stringify(['echo', 'hi']) }, { 'X-Nomad-Token': cluster.mgmt }, []);
    assert.equal(unknownTask.code, 1008);
    assert.match(unknownTask.reason, /unknown task name "nope"/, "the node's refusal, passed through");
  });

  it('answers an unknown allocation 404 in Nomad\'s words, and never forwards a forwarded request', async () => {
    const unknown = '00000000-0000-0000-0000-000000000000';
    const r = await call(`/v1/client/fs/ls/${unknown}?path=/`);
    assert.deepEqual([r.status, r.text], [404, `Unknown allocation "${unknown}"`]);
    const looped = await call(`/v1/client/fs/ls/${allocId}?path=/`, { headers: { 'x-berth-forwarded': '1' } });
    assert.equal(looped.status, 502);
    assert.match(looped.text, /not forwarded again/);
  });

  it("names the node when its agent is gone", async () => {
    const node = cluster.clientNames[0]!;
    await cluster.clients[0]!.stop('SIGINT');
    const r = await call(`/v1/client/fs/ls/${allocId}?path=/`, { headers: { accept: 'application/json' } });
    assert.equal(r.status, 502, r.text);
    const body = JSON.parse(r.text) as { code: string; message: string };
    assert.equal(body.code, 'NODE_AGENT_UNREACHABLE');
    assert.match(body.message, new RegExp(`^node ${node} \\([0-9a-f]{8}\\) runs this allocation, but (its agent at \\S+ cannot be reached|the node is down)`));
    const ws = await exec({ task: 'talk', command: JSON.stringify(['echo', 'hi']) }, { 'X-Nomad-Token': cluster.mgmt }, []);
    assert.equal(ws.code, 1011);
    assert.match(ws.reason, new RegExp(`^node ${node} `));
  });
});
