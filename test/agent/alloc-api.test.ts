// The allocation routes as a Nomad client sees them, against a real dev
// agent (server and client in one process): every answer is parsed with its
// src/api schema (strict objects, so a field missing or extra fails), the
// headers are Nomad's, a blocking query is woken by a change, log and file
// frames are decoded and followed, and a command runs over the exec
// WebSocket in Nomad's frames.

import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { z } from 'zod';
import * as api from '../../src/api/index.js';
import { jsonObjects } from '../../src/lib/index.js';
import { until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

/** Two allocations whose task prints a numbered line to stdout (and one to stderr) every 200 ms and keeps a file it appends to. */
const JOB = `job "contract" {
  group "g" {
    count = 2
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "touch \\"$NOMAD_TASK_DIR/quiet\\"; i=0; while :; do echo \\"line $i\\"; echo \\"err $i\\" >&2; echo \\"file $i\\" >> \\"$NOMAD_TASK_DIR/out\\"; i=$((i+1)); sleep 0.2; done"]
      }
    }
  }
}
`;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

describe('the allocation API in Nomad shapes (contract)', () => {
  let dir = '';
  let agent: AgentUnderTest;
  let allocs: api.AllocationListStub[] = [];
  let first = '';

  const call = async (p: string, init: { method?: string; body?: unknown; accept?: string; token?: string | null } = {}): Promise<Answer> => {
    const headers: Record<string, string> = {};
    if (init.token !== null) headers['X-Nomad-Token'] = init.token ?? agent.token;
    if (init.accept) headers['accept'] = init.accept;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(agent.addr + p, { method: init.method ?? 'GET', headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) });
    return { status: res.status, headers: res.headers, text: await res.text() };
  };
  /** A 200 answer's body parsed with `schema`. */
  const read = async <S extends z.ZodType>(schema: S, p: string, init: Parameters<typeof call>[1] = {}): Promise<{ body: z.infer<S>; headers: Headers }> => {
    const res = await call(p, init);
    assert.equal(res.status, 200, `${init.method ?? 'GET'} ${p}: ${res.status} ${res.text}`);
    return { body: schema.parse(JSON.parse(res.text)), headers: res.headers };
  };
  /** A streamed GET: its frames, as they come, until `done` says so (or the stream ends). */
  const frames = async (p: string, done: (seen: api.StreamFrame[]) => boolean, ms = 15_000): Promise<api.StreamFrame[]> => {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), ms);
    const seen: api.StreamFrame[] = [];
    try {
      const res = await fetch(agent.addr + p, { headers: { 'X-Nomad-Token': agent.token }, signal: ac.signal });
      if (res.status !== 200) assert.fail(`GET ${p}: ${res.status} ${await res.text()}`);
      assert.equal(res.headers.get('content-type'), 'application/json');
      for await (const f of jsonObjects(res.body as unknown as AsyncIterable<Uint8Array>)) {
        seen.push(api.StreamFrame.parse(f));
        if (done(seen)) break;
      }
    } catch (err) {
      if (!ac.signal.aborted) throw err;
    } finally {
      clearTimeout(timer);
      ac.abort();
    }
    return seen;
  };
  const data = (fs: api.StreamFrame[]): string => fs.map((f) => (f.Data ? Buffer.from(f.Data, 'base64').toString() : '')).join('');

  before(async () => {
    dir = await tempDir('bapi-');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).ready(true);
    writeFileSync(path.join(dir, 'contract.hcl'), JOB);
    const r = await agent.cli(['job', 'run', path.join(dir, 'contract.hcl')]);
    assert.equal(r.code, 0, r.stderr);
    allocs = await until('both allocations running', async () => {
      const { body } = await read(z.array(api.AllocationListStub), '/v1/job/contract/allocations');
      return body.length === 2 && body.every((a) => a.ClientStatus === 'running') ? body : undefined;
    });
    first = (allocs[0] as api.AllocationListStub).ID;
    await until('the task to have printed', async () => (await call(`/v1/client/fs/cat/${first}?path=t/local/out`)).text.includes('file 2'));
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists allocations as stubs: namespace, prefix, filter, paging, reverse, resources and task_states', async () => {
    const { body: list, headers } = await read(z.array(api.AllocationListStub), '/v1/allocations');
    assert.equal(list.length, 2);
    assert.ok(Number(headers.get('x-nomad-index')) > 0);
    assert.equal(headers.get('x-nomad-knownleader'), 'true');
    assert.equal(headers.get('x-nomad-lastcontact'), '0');
    const a = list[0] as api.AllocationListStub;
    assert.equal(a.JobID, 'contract');
    assert.equal(a.JobType, 'service');
    assert.match(a.Name, /^contract\.g\[[01]\]$/);
    assert.ok(a.NodeName, 'the node is named');
    assert.equal(a.TaskStates?.['t']?.State, 'running');
    assert.ok(a.TaskStates?.['t']?.Events?.some((e) => e.Type === 'Started'));
    assert.ok(a.CreateTime > 1e18, 'times are nanoseconds');
    assert.equal(a.AllocatedResources, undefined, 'resources only when asked');

    assert.equal((await read(z.array(api.AllocationListStub), '/v1/allocations?namespace=other')).body.length, 0);
    assert.equal((await read(z.array(api.AllocationListStub), '/v1/allocations?namespace=*')).body.length, 2);
    const byPrefix = await read(z.array(api.AllocationListStub), `/v1/allocations?prefix=${first.slice(0, 6)}`);
    assert.deepEqual(byPrefix.body.map((x) => x.ID), [first]);
    const filtered = await read(z.array(api.AllocationListStub), `/v1/allocations?filter=${encodeURIComponent(`ID == "${first}" and ClientStatus == "running"`)}`);
    assert.deepEqual(filtered.body.map((x) => x.ID), [first]);
    const bad = await call(`/v1/allocations?filter=${encodeURIComponent('ID ==')}`);
    assert.equal(bad.status, 400);

    const page1 = await read(z.array(api.AllocationListStub), '/v1/allocations?per_page=1');
    const token = page1.headers.get('x-nomad-nexttoken');
    assert.ok(token, 'a next token');
    const page2 = await read(z.array(api.AllocationListStub), `/v1/allocations?per_page=1&next_token=${encodeURIComponent(token)}`);
    assert.equal(page2.headers.get('x-nomad-nexttoken'), null);
    assert.deepEqual([...page1.body, ...page2.body].map((x) => x.ID), list.map((x) => x.ID), 'the pages make the list, ordered by create index');
    const reversed = await read(z.array(api.AllocationListStub), '/v1/allocations?reverse=true');
    assert.deepEqual(reversed.body.map((x) => x.ID), list.map((x) => x.ID).reverse());

    const withResources = await read(z.array(api.AllocationListStub), '/v1/allocations?resources=true&task_states=false');
    for (const x of withResources.body) {
      assert.equal(x.TaskStates, null);
      assert.equal(x.AllocatedResources?.Tasks?.['t']?.Memory.MemoryMB, 300);
      assert.equal(x.AllocatedResources?.Shared.DiskMB, 300);
    }
    assert.equal((await call('/v1/allocations?resources=maybe')).status, 400);
  });

  it('answers a blocking query when a change passes its index, and at its wait otherwise', async () => {
    const { headers } = await read(z.array(api.AllocationListStub), '/v1/allocations');
    const index = Number(headers.get('x-nomad-index'));
    const t0 = Date.now();
    const idle = await read(z.array(api.AllocationListStub), `/v1/allocations?index=${index}&wait=1s`);
    assert.ok(Date.now() - t0 >= 900, 'it waited');
    assert.equal(Number(idle.headers.get('x-nomad-index')), index);
    const woken = read(z.array(api.AllocationListStub), `/v1/allocations?index=${index}&wait=60s`);
    await new Promise((r) => setTimeout(r, 200));
    const restart = await read(api.GenericResponse, `/v1/client/allocation/${first}/restart`, { method: 'PUT', body: { TaskName: 't' } });
    assert.deepEqual(restart.body, { Index: 0 });
    const answer = await woken;
    assert.ok(Number(answer.headers.get('x-nomad-index')) > index, 'woken past the index');
    await until('the task restarted and running', async () => {
      const a = (await read(api.Allocation, `/v1/allocation/${first}`)).body;
      return a.TaskStates?.['t']?.Restarts === 1 && a.TaskStates['t'].State === 'running' && a.TaskStates['t'].LastRestart !== '0001-01-01T00:00:00Z';
    });
  });

  it('reads one allocation in full, its checks, and says "alloc not found" in plain text (JSON to a caller that asks)', async () => {
    const { body: a } = await read(api.Allocation, `/v1/allocation/${first}`);
    assert.equal(a.ID, first);
    assert.equal(a.Job?.ID, 'contract');
    assert.equal(a.Job?.Version, (allocs[0] as api.AllocationListStub).JobVersion, 'the job at the version the allocation runs');
    assert.equal(a.TaskResources?.['t']?.MemoryMB, 300);
    assert.equal(a.Resources?.DiskMB, 300);
    assert.equal(a.AllocatedResources?.Shared.Networks?.[0]?.Mode, 'host');
    assert.ok(a.Metrics && a.Metrics.NodesEvaluated >= 1, 'placement metrics');
    assert.deepEqual((await read(api.AllocCheckStatuses, `/v1/allocation/${first}/checks`)).body, {});
    const missing = await call('/v1/allocation/00000000-0000-0000-0000-000000000000');
    assert.equal(missing.status, 404);
    assert.equal(missing.text, 'alloc not found');
    assert.match(missing.headers.get('content-type') ?? '', /^text\/plain/);
    const asJson = await call('/v1/allocation/00000000-0000-0000-0000-000000000000', { accept: 'application/json' });
    assert.deepEqual(JSON.parse(asJson.text), { code: 'NOT_FOUND', message: 'alloc not found', details: {} });
  });

  it("lists a job's allocations (stubs) and a node's (in full)", async () => {
    const { body: jobAllocs } = await read(z.array(api.AllocationListStub), '/v1/job/contract/allocations?all=true');
    assert.deepEqual(jobAllocs.map((a) => a.ID).sort(), allocs.map((a) => a.ID).sort());
    assert.deepEqual((await read(z.array(api.AllocationListStub), '/v1/job/nope/allocations')).body, []);
    const nodeId = (allocs[0] as api.AllocationListStub).NodeID;
    const { body: onNode } = await read(z.array(api.Allocation), `/v1/node/${nodeId}/allocations`);
    assert.deepEqual(onNode.map((a) => a.ID).sort(), allocs.map((a) => a.ID).sort());
    assert.deepEqual((await read(z.array(api.Allocation), '/v1/node/nope/allocations')).body, []);
  });

  it("reports the running task's resource usage", async () => {
    const { body } = await read(api.AllocResourceUsage, `/v1/client/allocation/${first}/stats`);
    const t = body.Tasks?.['t'];
    assert.ok(t?.ResourceUsage?.MemoryStats && t.ResourceUsage.MemoryStats.RSS > 0, 'memory measured');
    assert.ok(t.ResourceUsage.CpuStats, 'CPU measured');
    assert.ok(body.Timestamp > 1e18);
    assert.equal((await call('/v1/client/allocation/nope/stats')).status, 404);
  });

  it('lists, stats, reads and reads at an offset in the allocation directory; never outside it', async () => {
    const { body: root } = await read(z.array(api.AllocFileInfo), `/v1/client/fs/ls/${first}`);
    assert.deepEqual(root.map((f) => f.Name).sort(), ['alloc', 't']);
    assert.ok(root.every((f) => f.IsDir && f.FileMode.startsWith('d')));
    const { body: st } = await read(api.AllocFileInfo, `/v1/client/fs/stat/${first}?path=t/local/out`);
    assert.equal(st.Name, 'out');
    assert.equal(st.IsDir, false);
    assert.equal(st.ContentType, 'text/plain; charset=utf-8');
    const cat = await call(`/v1/client/fs/cat/${first}?path=t/local/out`);
    assert.equal(cat.status, 200);
    assert.match(cat.text, /^file 0\nfile 1\n/);
    const at = await call(`/v1/client/fs/readat/${first}?path=t/local/out&offset=7&limit=6`);
    assert.equal(at.text, 'file 1');
    const escape = await call(`/v1/client/fs/cat/${first}?path=../../etc/passwd`);
    assert.equal(escape.status, 403);
    assert.match(escape.text, /outside the allocation directory/);
    assert.equal((await call(`/v1/client/fs/stat/${first}`)).text, 'must provide a file name');
  });

  it('streams a file as frames: from the end, followed, with heartbeats while it is idle', async () => {
    const followed = await frames(`/v1/client/fs/stream/${first}?path=t/local/out&origin=end&offset=7`, (seen) => (data(seen).match(/\n/g) ?? []).length >= 3);
    const lines = data(followed).split('\n').filter(Boolean);
    const n = Number(/^file (\d+)$/.exec(lines[1] ?? '')?.[1]);
    assert.deepEqual(lines.slice(1, 3), [`file ${n}`, `file ${n + 1}`], 'appended lines arrive in order');
    assert.ok(followed.every((f) => !f.Data || f.File === 't/local/out'));
    const idle = await frames(`/v1/client/fs/stream/${first}?path=t/local/quiet`, (seen) => seen.length >= 2);
    assert.deepEqual(idle.slice(0, 2), [{}, {}], 'an empty idle file gets heartbeats');
    const once = await frames(`/v1/client/fs/stream/${first}?path=t/local/out&follow=false`, () => false);
    assert.match(data(once), /^file 0\n/, 'without follow the stream ends at the end of the file');
  });

  it("streams a task's logs as frames, followed across what is written after, or as plain bytes", async () => {
    const followed = await frames(`/v1/client/fs/logs/${first}?task=t&type=stdout&follow=true&origin=end&offset=0`, (seen) => (data(seen).match(/\n/g) ?? []).length >= 2);
    assert.match(data(followed), /^line \d+\nline \d+\n/);
    assert.ok(followed.filter((f) => f.Data).every((f) => f.File === 'alloc/logs/t.stdout.0' && (f.Offset ?? 0) > 0));
    const stderr = await frames(`/v1/client/fs/logs/${first}?task=t&type=stderr`, () => false);
    assert.match(data(stderr), /^err 0\nerr 1\n/, 'without follow: the whole log, then the end');
    const plain = await call(`/v1/client/fs/logs/${first}?task=t&type=stdout&plain=true&origin=end&offset=16`);
    assert.equal(plain.headers.get('content-type'), 'text/plain');
    assert.match(plain.text, /line \d+\n$/);
    assert.ok(plain.text.length === 16);
    assert.equal((await call(`/v1/client/fs/logs/${first}?task=nope&type=stdout`)).status, 400);
    assert.equal((await call(`/v1/client/fs/logs/${first}?task=t&type=stdout&origin=middle`)).text, 'origin must be start or end');
  });

  it("runs a command in the task over Nomad's exec WebSocket: stdin, stdout, stderr, the exit code; a handshake token; refusals close with the reason", async () => {
    const exec = (query: Record<string, string>, headers: Record<string, string>, send: unknown[]): Promise<{ frames: api.ExecStreamingOutput[]; code: number; reason: string }> =>
      new Promise((resolve, reject) => {
        const url = new URL(`${agent.addr.replace(/^http/, 'ws')}/v1/client/allocation/${first}/exec`);
        for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
        const ws = new WebSocket(url, { headers });
        const got: api.ExecStreamingOutput[] = [];
        ws.on('open', () => send.forEach((m) => ws.send(JSON.stringify(m))));
        ws.on('message', (m: Buffer) => got.push(api.ExecStreamingOutput.parse(JSON.parse(m.toString()))));
        ws.on('close', (code, reason) => resolve({ frames: got, code, reason: reason.toString() }));
        ws.on('error', reject);
      });
    const command = JSON.stringify(['/bin/sh', '-c', 'read x; echo "got $x in $NOMAD_TASK_NAME"; echo oops >&2; exit 3']);
    const input = [{ stdin: { data: Buffer.from('hello\n').toString('base64') } }, { tty_size: { height: 24, width: 80 } }, {}, { stdin: { close: true } }];
    const out = await exec({ task: 't', tty: 'false', command }, { 'X-Nomad-Token': agent.token }, input);
    const bytes = (k: 'stdout' | 'stderr'): string => out.frames.map((f) => (f[k]?.data ? Buffer.from(f[k].data, 'base64').toString() : '')).join('');
    assert.equal(bytes('stdout'), 'got hello in t\n');
    assert.equal(bytes('stderr'), 'oops\n');
    assert.deepEqual(out.frames.at(-1), { exited: true, result: { exit_code: 3 } });
    assert.equal(out.code, 1000);

    const browser = await exec({ task: 't', command: JSON.stringify(['echo', 'hi']), ws_handshake: 'true' }, {}, [{ version: 1, auth_token: agent.token }]);
    assert.deepEqual(browser.frames.at(-1), { exited: true, result: { exit_code: 0 } });
    const badToken = await exec({ task: 't', command: JSON.stringify(['echo', 'hi']), ws_handshake: 'true' }, {}, [{ version: 1, auth_token: 'not-a-token-at-all' }]);
    assert.deepEqual([badToken.code, badToken.reason, badToken.frames], [1008, 'unknown token', []]);
    const noCommand = await exec({ task: 't', command: '"ls"' }, { 'X-Nomad-Token': agent.token }, []);
    assert.equal(noCommand.code, 1008);
    assert.match(noCommand.reason, /command must be/);
    const refused = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`${agent.addr.replace(/^http/, 'ws')}/v1/client/allocation/${first}/exec?task=t&command=%5B%22ls%22%5D`);
      ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.on('open', () => reject(new Error('upgraded without a token')));
      ws.on('error', reject);
    });
    assert.equal(refused, 401, 'no token: refused before the upgrade');
  });

  it('answers a plain GET of the exec route (no WebSocket) 400 with the reason, as Nomad does, not an empty 404', async () => {
    const plain = await call(`/v1/client/allocation/${first}/exec?task=t&command=${encodeURIComponent('["ls"]')}`);
    assert.equal(plain.status, 400, plain.text);
    assert.match(plain.text, /not using the websocket protocol/);
    assert.equal((await call(`/v1/client/allocation/${first}/exec?task=t`, { token: null })).status, 401, 'the token is checked first');
  });

  it('signals a task and stops an allocation (AllocStopResponse), whose replacement the stopped one names', async () => {
    assert.deepEqual((await read(api.GenericResponse, `/v1/client/allocation/${first}/signal`, { method: 'POST', body: { Task: 't', Signal: 'SIGHUP' } })).body, { Index: 0 });
    await until('the Signaling event', async () => (await read(api.Allocation, `/v1/allocation/${first}`)).body.TaskStates?.['t']?.Events?.some((e) => e.Type === 'Signaling' && e.TaskSignal === 'SIGHUP'));
    const unknownTask = await call(`/v1/client/allocation/${first}/signal`, { method: 'POST', body: { Task: 'nope' } });
    assert.equal(unknownTask.status, 404);
    const { body: stop, headers } = await read(api.AllocStopResponse, `/v1/allocation/${first}/stop`, { method: 'PUT' });
    assert.ok(stop.EvalID, 'the evaluation that places the replacement');
    assert.equal(Number(headers.get('x-nomad-index')), stop.Index);
    const next = await until('the replacement named', async () => (await read(api.Allocation, `/v1/allocation/${first}`)).body.NextAllocation || undefined);
    const { body: replacement } = await read(api.Allocation, `/v1/allocation/${next}`);
    assert.equal(replacement.PreviousAllocation, first);
    assert.equal((await call('/v1/allocation/nope/stop', { method: 'POST' })).status, 404);
  });
});
