// The API's front workers (src/server/http/api-workers): a server with
// workers answers as one without them, whichever thread took the
// connection. Each request here is matched to the request log's line for it
// (the log names the worker that served or relayed it), so each case is
// checked on the path it names. Real servers on real sockets.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jobBody, LoggedServer, REFUSED_REGISTRATIONS, TOKEN, type Answer } from './_logged-server.js';

/** Sends the request to `s` until a worker took it (`fast`: served it itself; else relayed it). */
async function sendViaWorker(s: LoggedServer, method: string, path: string, opts: { token?: string; body?: (i: number) => string; accept?: string; fast: boolean }): Promise<Answer> {
  for (let i = 0; i < 200; i++) {
    const { body, fast: _fast, ...rest } = opts;
    const { answer, line } = await s.send(method, path, { ...rest, ...(body ? { body: body(i) } : {}) });
    if (line.worker !== undefined && (line.fastPath === true) === opts.fast) return answer;
  }
  throw new Error(`no worker took ${method} ${path} in 200 tries`);
}

const withWorkers = new LoggedServer(2, 'berth-apiw-');
const alone = new LoggedServer(0, 'berth-apiw-');

before(async () => {
  await Promise.all([withWorkers.start(), alone.start()]);
});
after(async () => {
  await Promise.all([withWorkers.stop(), alone.stop()]);
});

describe('API front workers', () => {
  it('warm their registration path in many rounds while nothing comes, and say so', async () => {
    // A server no request reaches: nothing but the warm-up itself wakes a worker's event loop.
    const quiet = new LoggedServer(2, 'berth-apiw-');
    await quiet.start();
    try {
      const rounds = await quiet.server.apiWorkers!.whenWarmed(60_000);
      assert.equal(rounds.length, 2);
      // 300 rounds unless its 3 s ran out first (a loaded machine); a round that waited for something to wake
      // the loop ran 3-6 rounds in those 3 s.
      for (const r of rounds) assert.ok(r !== undefined && r > 20, `a worker's warm-up ran its rounds one after another (rounds: ${String(r)})`);
    } finally {
      await quiet.stop();
    }
  });

  it('give back the memory their warm-up grew once quiet, each its own heap', async () => {
    // A server no request reaches: each worker's first quiet interval after its warm-up reclaims.
    const quiet = new LoggedServer(2, 'berth-apiw-');
    await quiet.start();
    try {
      const pool = quiet.server.apiWorkers!;
      await pool.whenWarmed(60_000);
      assert.ok((await pool.whenReclaimed(2, 60_000)) >= 2, `both workers reclaimed (reclaims: ${pool.reclaims})`);
      const lines = quiet.lines.filter((l) => l.msg === 'API worker gave back memory in a quiet interval') as Array<Record<string, unknown>>;
      assert.equal(new Set(lines.map((l) => l['thread'])).size, 2, 'one line from each worker thread');
      for (const l of lines) assert.ok(Number(l['afterMiB']) <= Number(l['beforeMiB']), `the heap did not grow (${String(l['beforeMiB'])} -> ${String(l['afterMiB'])} MiB)`);
    } finally {
      await quiet.stop();
    }
  });

  it('answer a registration a worker served as the main thread does', async () => {
    const viaWorker = await sendViaWorker(withWorkers, 'PUT', '/v1/jobs', { token: TOKEN, body: (i) => jobBody(`fast-${i}`), fast: true });
    const { answer: onMain, line } = await alone.send('PUT', '/v1/jobs', { token: TOKEN, body: jobBody('main') });
    assert.equal(line.worker, undefined, 'a server without workers serves on its main thread');
    assert.equal(viaWorker.status, 200);
    assert.deepEqual(Object.keys(viaWorker.headers).sort(), Object.keys(onMain.headers).sort());
    for (const h of ['content-type', 'x-nomad-knownleader', 'x-nomad-lastcontact', 'connection']) assert.equal(viaWorker.headers[h], onMain.headers[h], h);
    const a = JSON.parse(viaWorker.body) as Record<string, unknown>;
    const b = JSON.parse(onMain.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(a), Object.keys(b));
    assert.equal(String(a['Index']), viaWorker.headers['x-nomad-index']);
    assert.equal(a['JobModifyIndex'], a['Index']);
    assert.equal(a['EvalCreateIndex'], a['Index']);
    assert.deepEqual({ ...a, EvalID: '', Index: 0, JobModifyIndex: 0, EvalCreateIndex: 0 }, { ...b, EvalID: '', Index: 0, JobModifyIndex: 0, EvalCreateIndex: 0 });
    assert.equal(viaWorker.headers['content-length'], String(Buffer.byteLength(viaWorker.body)));
  });

  it('answer refusals through a worker word for word as the main thread does', async () => {
    const cases = REFUSED_REGISTRATIONS;
    for (const c of cases) {
      const viaWorker = await sendViaWorker(withWorkers, 'PUT', '/v1/jobs', { ...(c.token ? { token: c.token } : {}), body: () => c.body, ...(c.accept ? { accept: c.accept } : {}), fast: c.fast });
      const { answer: onMain } = await alone.send('PUT', '/v1/jobs', { ...(c.token ? { token: c.token } : {}), body: c.body, ...(c.accept ? { accept: c.accept } : {}) });
      assert.ok(viaWorker.status >= 400, `${c.what}: refused (${viaWorker.status} ${viaWorker.body})`);
      assert.deepEqual(viaWorker, onMain, c.what);
      if (c.says) assert.match(viaWorker.body, c.says, c.what);
    }
  });

  it('wake a blocking read held open on main with a registration a worker served, at its index', async () => {
    const blocking = async (index: number): Promise<{ index: number; ids: string[] }> => {
      const res = await Promise.race([
        fetch(`${withWorkers.url}/v1/jobs?index=${index}&wait=5m`, { headers: { 'x-nomad-token': TOKEN } }),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the blocking read was not woken')), 60_000)),
      ]);
      const jobs = (await res.json()) as Array<{ ID: string }>;
      return { index: Number(res.headers.get('x-nomad-index')), ids: jobs.map((j) => j.ID) };
    };
    for (let i = 0; i < 200; i++) {
      const list = await fetch(`${withWorkers.url}/v1/jobs`, { headers: { 'x-nomad-token': TOKEN } });
      const index = Number(list.headers.get('x-nomad-index'));
      await list.text();
      const held = blocking(index);
      const id = `woken-${i}`;
      const { answer, line } = await withWorkers.send('PUT', '/v1/jobs', { token: TOKEN, body: jobBody(id) });
      let woken = await held;
      assert.ok(woken.index > index);
      // Main took this connection itself: try again until a worker serves one.
      if (!line.fastPath) continue;
      const registered = (JSON.parse(answer.body) as { Index: number }).Index;
      // An earlier write (the previous job's evaluation) may wake the read first: each read
      // then holds from where the last one answered, until the store passed the registration.
      while (woken.index < registered) {
        assert.ok(!woken.ids.includes(id), 'a read before the write does not list the job');
        woken = await blocking(woken.index);
      }
      assert.ok(woken.ids.includes(id), 'the read at or past the registration lists the job');
      return;
    }
    assert.fail('no registration through a worker woke the read');
  });

  it('stream the events of registrations workers served, in index order', async () => {
    const ac = new AbortController();
    const res = await fetch(`${withWorkers.url}/v1/event/stream?topic=Job`, { headers: { 'x-nomad-token': TOKEN }, signal: ac.signal });
    const reader = res.body!.getReader();
    const ids: string[] = [];
    for (let i = 0; ids.length < 3 && i < 200; i++) {
      const { line } = await withWorkers.send('PUT', '/v1/jobs', { token: TOKEN, body: jobBody(`streamed-${i}`) });
      if (line.fastPath) ids.push(`streamed-${i}`);
    }
    assert.equal(ids.length, 3);
    const seen: Array<{ id: string; index: number }> = [];
    let text = '';
    const deadline = Date.now() + 60_000;
    while (!ids.every((id) => seen.some((s) => s.id === id)) && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
      let nl: number;
      while ((nl = text.indexOf('\n')) >= 0) {
        const frame = JSON.parse(text.slice(0, nl) || '{}') as { Index?: number; Events?: Array<{ Type: string; Key: string; Index: number }> };
        text = text.slice(nl + 1);
        for (const e of frame.Events ?? []) if (e.Type === 'JobRegistered' && e.Key.startsWith('streamed-')) seen.push({ id: e.Key, index: e.Index });
      }
    }
    ac.abort();
    for (const id of ids) assert.ok(seen.some((s) => s.id === id), `the stream has ${id}'s registration`);
    const indexes = seen.map((s) => s.index);
    assert.deepEqual(indexes, [...indexes].sort((x, y) => x - y), 'events in index order');
  });

  it('answer each registration of a burst the workers hand to main together, a refused one alone, and stream them in index order', async () => {
    const ac = new AbortController();
    const stream = await fetch(`${withWorkers.url}/v1/event/stream?topic=Job`, { headers: { 'x-nomad-token': TOKEN }, signal: ac.signal });
    const reader = stream.body!.getReader();
    // A burst on connections of their own, so that a worker reads several in one turn and hands them to main in one message.
    const N = 40;
    const conflict = jobBody('burst-enforced', { EnforceIndex: true, JobModifyIndex: 7 });
    const before = withWorkers.requests().length;
    const writesBefore = withWorkers.server.userWritesSeen;
    const answers = await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const res = await fetch(`${withWorkers.url}/v1/jobs`, { method: 'PUT', headers: { connection: 'close', 'x-nomad-token': TOKEN }, body: i === N / 2 ? conflict : jobBody(`burst-${i}`) });
        const headers: Record<string, string> = {};
        for (const [k, v] of res.headers) if (k !== 'date') headers[k] = v;
        return { status: res.status, headers, body: await res.text() };
      }),
    );
    const deadline = Date.now() + 30_000;
    while (withWorkers.requests().slice(before).filter((l) => l.method === 'PUT').length < N && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    const served = withWorkers.requests().slice(before).filter((l) => l.method === 'PUT' && l.worker !== undefined && l.fastPath);
    assert.ok(served.length >= 2, `workers served ${served.length} of the burst themselves`);
    // Every request of the burst was counted as a user's write, and each one's end too: the API is quiet again.
    assert.ok(withWorkers.server.userWritesSeen - writesBefore >= N);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([withWorkers.server.whenWritesQuiet(0), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('writes still in flight')), 30_000)))]);
    clearTimeout(timer);

    // The refused one gets its own error, word for word as a server without workers gives it; the others are not refused with it.
    const { answer: onMain } = await alone.send('PUT', '/v1/jobs', { token: TOKEN, body: conflict });
    assert.deepEqual(answers[N / 2], onMain);
    const indexOf = new Map<string, number>();
    answers.forEach((a, i) => {
      if (i === N / 2) return;
      assert.equal(a.status, 200, a.body);
      const out = JSON.parse(a.body) as { Index: number; JobModifyIndex: number };
      assert.equal(String(out.Index), a.headers['x-nomad-index']);
      assert.equal(out.JobModifyIndex, out.Index);
      indexOf.set(`burst-${i}`, out.Index);
    });
    // Each answer's index is its job's: the job reads back at it.
    for (const [id, index] of indexOf) {
      const job = (await (await fetch(`${withWorkers.url}/v1/job/${id}`, { headers: { 'x-nomad-token': TOKEN } })).json()) as { JobModifyIndex: number };
      assert.equal(job.JobModifyIndex, index, id);
    }

    // The stream has every registration, at its answer's index, in index order.
    const seen: Array<{ id: string; index: number }> = [];
    let text = '';
    const until = Date.now() + 60_000;
    while (seen.length < indexOf.size && Date.now() < until) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString();
      let nl: number;
      while ((nl = text.indexOf('\n')) >= 0) {
        const frame = JSON.parse(text.slice(0, nl) || '{}') as { Events?: Array<{ Type: string; Key: string; Index: number }> };
        text = text.slice(nl + 1);
        for (const e of frame.Events ?? []) if (e.Type === 'JobRegistered' && e.Key.startsWith('burst-')) seen.push({ id: e.Key, index: e.Index });
      }
    }
    ac.abort();
    assert.deepEqual(new Map(seen.map((s) => [s.id, s.index])), indexOf);
    const indexes = seen.map((s) => s.index);
    assert.deepEqual(indexes, [...indexes].sort((x, y) => x - y), 'events in index order');
  });

  it('leave every connection to the workers once they all accept, and serve on main when none does', async () => {
    const pool = withWorkers.server.apiWorkers!;
    const deadline = Date.now() + 60_000;
    while (pool.mainAccepting && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(pool.mainAccepting, false, 'main stopped accepting');
    for (let i = 0; i < 20; i++) {
      const { answer, line } = await withWorkers.send('PUT', '/v1/jobs', { token: TOKEN, body: jobBody(`workers-only-${i}`) });
      assert.equal(answer.status, 200);
      assert.notEqual(line.worker, undefined, 'a worker took the connection');
    }
    // Every worker ends: main takes the socket again at once, and the API answers throughout.
    await Promise.all(pool.threadIds.map((id) => pool.crash(id)));
    assert.equal(pool.ready, 0);
    assert.equal(pool.mainAccepting, true, 'main accepts again');
    const { answer } = await withWorkers.send('PUT', '/v1/jobs', { token: TOKEN, body: jobBody('no-worker') });
    assert.equal(answer.status, 200);
    await pool.whenReady(120_000);
    while (pool.mainAccepting && Date.now() < deadline + 60_000) await new Promise((r) => setTimeout(r, 20));
    assert.equal(pool.mainAccepting, false, 'main leaves the socket to the replacements');
  });

  it('replace a worker that ended, and keep answering', async () => {
    const pool = withWorkers.server.apiWorkers!;
    const [first] = pool.threadIds;
    await pool.crash(first as number);
    const deadline = Date.now() + 120_000;
    while ((pool.ready < 2 || pool.threadIds.includes(first as number)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(pool.ready, 2);
    assert.ok(!pool.threadIds.includes(first as number));
    const answer = await sendViaWorker(withWorkers, 'PUT', '/v1/jobs', { token: TOKEN, body: (i) => jobBody(`after-crash-${i}`), fast: true });
    assert.equal(answer.status, 200);
  });
});
