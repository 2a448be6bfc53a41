// The main thread's registration fast path (src/server/http/main-fast-register.ts):
// a registration sent with a Content-Length is served before fastify, one
// sent chunked (no Content-Length) goes through fastify's route; both must
// answer alike, the refusals word for word (the fast path gives those to
// fastify with the body it read). The request log says which path served
// each request. A real server on a real socket.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jobBody, LoggedServer, REFUSED_REGISTRATIONS, TOKEN, type RefusedRegistration, type Answer, type LogLine } from './_logged-server.js';

const served = new LoggedServer(0, 'berth-fastreg-');
before(() => served.start());
after(() => served.stop());

/** Sends one request on a connection of its own (`chunked`: no Content-Length, so fastify serves it); the answer and its log line. */
const send = (method: string, path: string, body: string, opts: { token?: string; accept?: string; chunked?: boolean } = {}): Promise<{ answer: Answer; line: LogLine }> =>
  served.send(method, path, { ...opts, body });

describe('registrations on the main fast path', () => {
  it('answer as fastify\'s route answers them, and register the job', async () => {
    const fast = await send('PUT', '/v1/jobs', jobBody('fast'), { token: TOKEN });
    const slow = await send('PUT', '/v1/jobs', jobBody('slow'), { token: TOKEN, chunked: true });
    assert.equal(fast.line.fastPath, true, 'served before fastify');
    assert.equal(slow.line.fastPath, undefined, 'served by fastify');
    assert.equal(fast.line.caller, 'ops');
    assert.equal(fast.line.route, '/v1/jobs');
    assert.equal(fast.answer.status, 200);
    assert.deepEqual(Object.keys(fast.answer.headers).sort(), Object.keys(slow.answer.headers).sort());
    for (const h of ['content-type', 'x-nomad-knownleader', 'x-nomad-lastcontact', 'connection']) assert.equal(fast.answer.headers[h], slow.answer.headers[h], h);
    assert.equal(fast.answer.headers['content-length'], String(Buffer.byteLength(fast.answer.body)));
    const a = JSON.parse(fast.answer.body) as Record<string, unknown>;
    const b = JSON.parse(slow.answer.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(a), Object.keys(b));
    assert.equal(String(a['Index']), fast.answer.headers['x-nomad-index']);
    assert.deepEqual({ ...a, EvalID: '', Index: 0, JobModifyIndex: 0, EvalCreateIndex: 0 }, { ...b, EvalID: '', Index: 0, JobModifyIndex: 0, EvalCreateIndex: 0 });
    const job = await (await fetch(`${served.url}/v1/job/fast`, { headers: { 'x-nomad-token': TOKEN } })).json() as { ID: string; JobModifyIndex: number };
    assert.equal(job.ID, 'fast');
    assert.equal(job.JobModifyIndex, a['JobModifyIndex']);
    const byPath = await send('POST', '/v1/job/fast-path', jobBody('fast-path'), { token: TOKEN });
    assert.equal(byPath.line.fastPath, true);
    assert.equal(byPath.line.route, '/v1/job/:id');
    assert.equal(byPath.answer.status, 200);
  });

  it('answer refusals word for word as fastify does', async () => {
    const cases: RefusedRegistration[] = [
      ...REFUSED_REGISTRATIONS,
      { what: 'a prototype key', token: TOKEN, body: jobBody('p').replace('"Count":1', '"Count":1,"__proto__":{}'), fast: false },
      { what: 'no body', token: TOKEN, body: '', fast: false },
      { what: 'an ID not the path\'s', path: '/v1/job/other', token: TOKEN, body: jobBody('mine'), fast: false },
      { what: 'an unknown namespace', path: '/v1/jobs?namespace=nowhere', token: TOKEN, body: jobBody('ns'), fast: true },
    ];
    for (const c of cases) {
      const opts = { ...(c.token ? { token: c.token } : {}), ...(c.accept ? { accept: c.accept } : {}) };
      const fast = await send('PUT', c.path ?? '/v1/jobs', c.body, opts);
      const slow = await send('PUT', c.path ?? '/v1/jobs', c.body, { ...opts, chunked: true });
      assert.ok(fast.answer.status >= 400, `${c.what}: refused (${fast.answer.status} ${fast.answer.body})`);
      assert.equal(fast.line.fastPath === true, c.fast, `${c.what}: ${c.fast ? 'answered on the fast path' : 'given to fastify'}`);
      assert.equal(slow.line.fastPath, undefined);
      // A chunked body has no Content-Length to echo; everything else is the same.
      assert.deepEqual(fast.answer, slow.answer, c.what);
      if (c.says) assert.match(fast.answer.body, c.says, c.what);
    }
  });

  it('wake a blocking read of the jobs with the registration, at its index', async () => {
    const first = JSON.parse((await send('PUT', '/v1/jobs', jobBody('wake-a'), { token: TOKEN })).answer.body) as { Index: number };
    // Read at the first job's index until the list holds the second (the evaluation worker's writes may wake it first).
    const woken = (async (): Promise<number> => {
      let index = first.Index;
      for (;;) {
        const res = await fetch(`${served.url}/v1/jobs?index=${index}&wait=60s`, { headers: { 'x-nomad-token': TOKEN } });
        const ids = ((await res.json()) as Array<{ ID: string }>).map((j) => j.ID);
        index = Number(res.headers.get('x-nomad-index'));
        if (ids.includes('wake-b')) return index;
      }
    })();
    const { answer, line } = await send('PUT', '/v1/jobs', jobBody('wake-b'), { token: TOKEN });
    assert.equal(line.fastPath, true);
    const at = await woken;
    assert.ok(at >= (JSON.parse(answer.body) as { Index: number }).Index, `the read that saw it is at ${at}`);
  });
});
