// The API's readers (src/server/http/api-workers/readers.ts): a server whose
// main thread hands a burst's registration bodies to a reader thread answers
// every one as a server without readers does, refusals word for word, and
// loses none when its reader ends mid-burst. Real servers on real sockets,
// real worker threads.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MAX_PENDING_READS, type ApiReaders } from '../../src/server/http/index.js';
import { jobBody, LoggedServer, TOKEN, type Answer } from './_logged-server.js';

const withReader = new LoggedServer(0, 'berth-apir-', { apiReaders: 1, apiReadersAfterMs: 0 });
const alone = new LoggedServer(0, 'berth-apir-');

/** The server's readers once started and warmed. */
async function warmedReaders(s: LoggedServer): Promise<ApiReaders> {
  const deadline = Date.now() + 60_000;
  while (!s.server.apiReaders && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const readers = s.server.apiReaders;
  assert.ok(readers, 'the readers started');
  await readers.whenWarmed(60_000);
  assert.equal(readers.warmed, 1, 'the reader warmed');
  return readers;
}

/** Sends `bodies` at once, each on a connection of its own (a burst: the main thread has other writes in flight as it reads each). */
async function burst(url: string, bodies: string[]): Promise<Answer[]> {
  return Promise.all(
    bodies.map(async (body) => {
      const res = await fetch(`${url}/v1/jobs`, { method: 'PUT', headers: { connection: 'close', 'x-nomad-token': TOKEN }, body });
      const headers: Record<string, string> = {};
      for (const [k, v] of res.headers) if (k !== 'date') headers[k] = v;
      return { status: res.status, headers, body: await res.text() };
    }),
  );
}

/** Each 200 answer's index is its job's modify index (the job reads back at it). */
async function assertRegistered(s: LoggedServer, answers: Answer[], ids: string[]): Promise<void> {
  for (const [i, a] of answers.entries()) {
    const id = ids[i];
    if (id === undefined) continue;
    assert.equal(a.status, 200, `${id}: ${a.body}`);
    const out = JSON.parse(a.body) as { Index: number; JobModifyIndex: number };
    assert.equal(String(out.Index), a.headers['x-nomad-index']);
    const job = (await (await fetch(`${s.url}/v1/job/${id}`, { headers: { 'x-nomad-token': TOKEN } })).json()) as { JobModifyIndex: number };
    assert.equal(job.JobModifyIndex, out.Index, id);
  }
}

before(async () => {
  await Promise.all([withReader.start(), alone.start()]);
});
after(async () => {
  await Promise.all([withReader.stop(), alone.stop()]);
});

describe('API readers', () => {
  it("read a burst's registrations off the main thread and answer each as the main thread does, refusals word for word", async () => {
    const readers = await warmedReaders(withReader);
    const servedBefore = readers.served;
    const N = 40;
    const refusals = new Map<number, string>([
      [10, jobBody('burst-bad').replace('"Count":1', '"Count":-3')],
      [20, jobBody('burst-enforced', { EnforceIndex: true, JobModifyIndex: 7 })],
      [30, jobBody('burst-unknown').replace('"Count":1', '"Count":1,"Spreads":7')],
    ]);
    const bodies = Array.from({ length: N }, (_, i) => refusals.get(i) ?? jobBody(`burst-${i}`));
    const answers = await burst(withReader.url, bodies);
    assert.ok(readers.served - servedBefore >= 2, `the reader read ${readers.served - servedBefore} of the burst`);
    for (const [i, body] of refusals) {
      const { answer: onMain } = await alone.send('PUT', '/v1/jobs', { token: TOKEN, body });
      assert.ok(onMain.status >= 400, `refusal ${i}: ${onMain.status}`);
      assert.deepEqual(answers[i], onMain, `refusal ${i}`);
    }
    await assertRegistered(withReader, answers, bodies.map((_, i) => (refusals.has(i) ? undefined : `burst-${i}`)) as string[]);
    // A burst on the server without readers answers the same ids the same way (the same fields).
    const plain = await burst(alone.url, [jobBody('burst-1')]);
    assert.deepEqual(Object.keys(JSON.parse(plain[0]!.body) as object).sort(), Object.keys(JSON.parse(answers[1]!.body) as object).sort());
  });

  it('hand back what a reader that ended was reading, start another, and read with it', async () => {
    const readers = await warmedReaders(withReader);
    const [thread] = readers.threadIds;
    const reads = Array.from({ length: MAX_PENDING_READS }, (_, i) => readers.read(jobBody(`ended-${i}`), '/v1/jobs', undefined));
    assert.ok(reads.every((r) => r !== undefined), 'a warmed reader takes reads');
    assert.equal(readers.read(jobBody('one-more'), '/v1/jobs', undefined), undefined, 'a reader holding its bound of reads takes no more: main reads it');
    await readers.crash(thread!);
    const settled = await Promise.allSettled(reads as Array<Promise<unknown>>);
    // What the reader answered before it ended is the job read; the rest is handed back, for main to read.
    for (const [i, s] of settled.entries()) {
      if (s.status === 'rejected') assert.match(String(s.reason), /the API reader ended/);
      else assert.equal((s.value as { spec: { id: string } }).spec.id, `ended-${i}`);
    }
    assert.ok(settled.some((s) => s.status === 'rejected'), 'reads in flight were handed back');
    assert.equal(readers.read(jobBody('none'), '/v1/jobs', undefined), undefined, 'no reader warmed: main reads');
    await readers.whenWarmed(60_000);
    assert.notEqual(readers.threadIds[0], thread, 'another reader took its place');
    const again = await readers.read(jobBody('again'), '/v1/jobs?namespace=default', undefined);
    assert.equal(again?.spec.id, 'again');
    assert.equal(await readers.read('{"Job": ', '/v1/jobs', undefined), undefined, 'bad JSON: left to fastify');
    assert.ok(withReader.lines.some((l) => l.msg === 'an API reader ended; its reads are done on the main thread; starting another'));
  });

  it('lose no registration of a burst when the reader ends in the middle of it', async () => {
    const readers = await warmedReaders(withReader);
    const ids = Array.from({ length: 40 }, (_, i) => `mid-${i}`);
    const answers = burst(withReader.url, ids.map((id) => jobBody(id)));
    // Ended as the burst's first bodies reach it: what it held is read on main.
    const deadline = Date.now() + 30_000;
    const servedBefore = readers.served;
    while (readers.served === servedBefore && Date.now() < deadline) await new Promise((r) => setImmediate(r));
    await readers.crash(readers.threadIds[0]!);
    await assertRegistered(withReader, await answers, ids);
  });
});
