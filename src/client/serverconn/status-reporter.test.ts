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
  let server: http.Server;
  let url = '';

  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (body += d));
      req.on('end', () => {
        posts.push((JSON.parse(body) as { allocations: AllocStatusReport[] }).allocations.map((a) => `${a.id}:${a.clientStatus}`));
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ index: posts.length }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const update = (id: string, clientStatus: AllocStatusReport['clientStatus']): AllocStatusReport => ({ id, clientStatus, clientDescription: '', taskStates: {} });

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

  it('while POSTs follow each other within twice burstBatchMs, the next waits burstBatchMs; after a pause, batchMs again', async () => {
    posts.length = 0;
    const clock = new ManualClock(2_000_000);
    const api = new ServerApi({ address: url, token: 't' });
    const reporter = new StatusReporter({ api, nodeId: 'n1', clock, batchMs: 20, burstBatchMs: 100 });
    const settle = async (): Promise<void> => {
      for (let i = 0; i < 20; i++) await nextTurn();
    };
    try {
      reporter.report(update('a', 'running'));
      await reporter.flush();
      reporter.report(update('b', 'running'));
      await settle();
      await clock.advance(20);
      await reporter.flush();
      assert.deepEqual(posts, [['a:running'], ['b:running']], 'a second update 20 ms after the first');

      reporter.report(update('c', 'running'));
      await settle();
      await clock.advance(20);
      await settle();
      assert.equal(posts.length, 2, 'two POSTs 20 ms apart: updates keep coming, the third waits longer');
      await clock.advance(80);
      await reporter.flush();
      assert.deepEqual(posts[2], ['c:running'], 'it goes 100 ms after the last');

      reporter.report(update('c2', 'running'));
      await settle();
      await clock.advance(20);
      await settle();
      assert.equal(posts.length, 3, 'POSTs 100 ms apart stay in the burst');
      await clock.advance(80);
      await reporter.flush();
      assert.deepEqual(posts[3], ['c2:running']);

      await clock.advance(500);
      reporter.report(update('d', 'running'));
      await reporter.flush();
      assert.deepEqual(posts[4], ['d:running'], 'after a quiet spell an update goes at once');
      reporter.report(update('e', 'running'));
      await settle();
      await clock.advance(20);
      await reporter.flush();
      assert.deepEqual(posts[5], ['e:running'], 'and the next 20 ms after it');
    } finally {
      await reporter.stop();
      api.close();
    }
  });
});
