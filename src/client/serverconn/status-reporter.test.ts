// The status reporter's pacing: after a quiet spell an update is posted at
// once (no timer stands between a task running and the API saying so);
// updates within the batch interval of the last POST wait out the interval
// and go together. A real HTTP server on loopback records the POSTs; the
// reporter's clock is a manual one, so "at once" means without the clock
// moving.

import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import { eventually, nextTurn } from '../../../test/support/eventually.js';
import { ServerApi, type AllocStatusReport } from './server-api.js';
import { StatusReporter } from './status-reporter.js';

describe('status reporter pacing', () => {
  const posts: string[][] = [];
  /** While set, the server answers a POST only once it resolves. */
  let held: Promise<void> | undefined;
  let server: http.Server;
  let url = '';

  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        posts.push((JSON.parse(body) as { allocations: AllocStatusReport[] }).allocations.map((a) => `${a.id}:${a.clientStatus}`));
        const index = posts.length;
        void (held ?? Promise.resolve()).then(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ index }));
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const update = (id: string, clientStatus: AllocStatusReport['clientStatus']): AllocStatusReport => ({ id, clientStatus, clientDescription: '', taskStates: {} });
  /** Lets what the reporter does without the clock moving happen (its sends, the server's answers). */
  const settle = async (): Promise<void> => {
    for (let i = 0; i < 20; i++) await nextTurn();
  };

  it('posts the first update without waiting, and batches the ones that follow within the interval', async () => {
    const clock = new ManualClock(1_000_000);
    const api = new ServerApi({ address: url, token: 't' });
    const reporter = new StatusReporter({ api, nodeId: 'n1', clock, batchMs: 20 });
    try {
      reporter.report(update('a', 'running'));
      await eventually('the first update posted with the clock standing still', () => (posts.length === 1 ? true : undefined));
      assert.deepEqual(posts[0], ['a:running']);
      await reporter.flush();

      reporter.report(update('b', 'running'));
      reporter.report(update('c', 'running'));
      for (let i = 0; i < 20; i++) await nextTurn();
      assert.equal(posts.length, 1, 'updates within 20 ms of the last POST wait for the interval');
      await clock.advance(20);
      await reporter.flush();
      assert.deepEqual(posts[1], ['b:running', 'c:running'], 'and then go in one POST');
    } finally {
      await reporter.stop();
      api.close();
    }
  });

  it('once the last 200 ms of POSTs carried burstAllocations allocations the next waits burstBatchMs; one allocation\'s steps never do', async () => {
    posts.length = 0;
    const clock = new ManualClock(2_000_000);
    const api = new ServerApi({ address: url, token: 't' });
    const reporter = new StatusReporter({ api, nodeId: 'n1', clock, batchMs: 20, burstBatchMs: 100, burstAllocations: 3 });
    /** Reports `id` as `status` and waits until it was posted, moving the clock by 20 ms when the reporter waits. */
    const step = async (id: string, status: AllocStatusReport['clientStatus']): Promise<void> => {
      const before = posts.length;
      reporter.report(update(id, status));
      await settle();
      if (posts.length === before) await clock.advance(20);
      await reporter.flush();
    };
    try {
      // One allocation's steps, 20 ms apart: each goes as soon as the 20 ms allow.
      await step('a', 'pending');
      await step('a', 'running');
      await step('a', 'running');
      assert.equal(posts.length, 3, 'one allocation, three POSTs 20 ms apart');

      // Three allocations within 200 ms: a burst; the next waits 100 ms from the last POST.
      await step('b', 'running');
      await step('c', 'running');
      reporter.report(update('d', 'running'));
      await settle();
      await clock.advance(20);
      await settle();
      assert.equal(posts.length, 5, 'in a burst, 20 ms is not enough');
      await clock.advance(80);
      await reporter.flush();
      assert.deepEqual(posts[5], ['d:running'], 'it goes 100 ms after the last');

      // Once the burst's POSTs are older than 200 ms, an update goes at once again.
      await clock.advance(300);
      reporter.report(update('e', 'running'));
      await reporter.flush();
      assert.deepEqual(posts[6], ['e:running']);
    } finally {
      await reporter.stop();
      api.close();
    }
  });

  it('allocations started one after another are no burst: with one or none starting, each update goes at the batch interval', async () => {
    posts.length = 0;
    const clock = new ManualClock(2_500_000);
    const api = new ServerApi({ address: url, token: 't' });
    let starting = 0;
    const reporter = new StatusReporter({ api, nodeId: 'n1', clock, batchMs: 20, burstBatchMs: 100, burstAllocations: 3, starting: () => starting });
    /** Reports `id` as `status` 20 ms after the last POST and says whether it was posted then (not held for the burst's 100 ms). */
    const reportAt20 = async (id: string, status: AllocStatusReport['clientStatus']): Promise<boolean> => {
      const before = posts.length;
      reporter.report(update(id, status));
      await settle();
      if (posts.length === before) await clock.advance(20);
      await settle();
      const posted = posts.length > before;
      if (!posted) await clock.advance(80);
      await reporter.flush();
      return posted;
    };
    try {
      // Each job as a script runs them: its allocation starts (the only one starting), then runs, then the next.
      for (const id of ['a', 'b', 'c', 'd', 'e']) {
        starting = 1;
        assert.equal(await reportAt20(id, 'pending'), true, `${id}'s pending goes 20 ms after the last POST`);
        starting = 0;
        assert.equal(await reportAt20(id, 'running'), true, `${id}'s running goes 20 ms after the last POST`);
      }
      assert.equal(posts.length, 10, 'two POSTs an allocation');

      // Many starting at once (the window holds several): the same updates wait the burst's 100 ms.
      starting = 6;
      assert.equal(await reportAt20('f', 'pending'), false, 'with others still starting, the next waits for them');
      assert.deepEqual(posts.at(-1), ['f:pending']);
    } finally {
      await reporter.stop();
      api.close();
    }
  });

  it('an update that comes while a POST is on its way goes as soon as that POST is answered', async () => {
    posts.length = 0;
    const clock = new ManualClock(3_000_000);
    const api = new ServerApi({ address: url, token: 't' });
    const reporter = new StatusReporter({ api, nodeId: 'n1', clock, batchMs: 20 });
    let answer = (): void => undefined;
    held = new Promise<void>((resolve) => (answer = resolve));
    try {
      reporter.report(update('f', 'running'));
      await eventually('the POST reached the server', () => (posts.length === 1 ? true : undefined));
      reporter.report(update('g', 'running'));
      for (let i = 0; i < 20; i++) await nextTurn();
      assert.equal(posts.length, 1, 'one POST on its way at a time');
      held = undefined;
      answer();
      await eventually('the update posted once the first was answered, the clock standing still', () => (posts.length === 2 ? true : undefined));
      assert.deepEqual(posts[1], ['g:running']);
    } finally {
      held = undefined;
      answer();
      await reporter.stop();
      api.close();
    }
  });
  it('a held update goes with the one that replaces it, at once; stop() during a hold posts nothing and ends without the clock moving', async () => {
    posts.length = 0;
    const clock = new ManualClock(4_000_000);
    const api = new ServerApi({ address: url, token: 't' });
    const reporter = new StatusReporter({ api, nodeId: 'n1', clock, batchMs: 20, holdMs: 200 });
    try {
      // A batch allocation running, then its task ending: one POST, with the end, the clock standing still.
      reporter.report(update('h', 'running'), { hold: true });
      for (let i = 0; i < 20; i++) await nextTurn();
      assert.equal(posts.length, 0, 'the running update waits for what replaces it');
      reporter.report(update('h', 'complete'));
      await eventually('the end posted at once', () => (posts.length === 1 ? true : undefined));
      assert.deepEqual(posts[0], ['h:complete']);
      await reporter.flush();

      // Held again, then stopped: the wait ends with stop(), and the held update is not sent.
      await clock.advance(1_000);
      reporter.report(update('i', 'running'), { hold: true });
      for (let i = 0; i < 20; i++) await nextTurn();
      await reporter.stop();
      assert.deepEqual(posts, [['h:complete']]);
    } finally {
      await reporter.stop();
      api.close();
    }
  });
});
