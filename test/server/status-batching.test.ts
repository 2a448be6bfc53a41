// A node's status reports against a real Server over real HTTP, through
// the agent's own ServerApi and StatusReporter: a batch allocation's
// `running` (reported with `hold`, as the agent reports it) waits for its
// end, and a task that ends at once reaches the server as one update, the
// end; a `running` that nothing replaces reaches the server once its hold
// ends; an update that does not wait takes a held one along in its POST.
// The reporter's clock is a manual one: a hold ends only when the test
// moves it.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ManualClock } from '../../src/lib/index.js';
import { ServerApi, StatusReporter, type AllocStatusReport } from '../../src/client/serverconn/index.js';
import type { Node } from '../../src/structs/index.js';
import { eventually, nextTurn } from '../support/eventually.js';
import { registration } from '../support/nomad-jobs.js';
import { fingerprint, startServer, TOKENS, type Harness } from './_harness.js';

const HOLD_MS = 200;

let h: Harness;
let api: ServerApi;
let nodeId: string;
let allocIds: string[];

before(async () => {
  h = await startServer();
  const reg = await h.call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('status-node') } });
  nodeId = reg.body.node.id;
  api = new ServerApi({ address: h.url, token: TOKENS.node });
  const job = { id: 'quick', type: 'batch', groups: [{ name: 'g', count: 5, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 10, memoryMb: 16 } }] }] };
  assert.equal((await h.call('PUT', '/v1/jobs', { body: registration(job) })).status, 200);
  allocIds = await eventually('the five allocations placed', async () => {
    const res = await h.call<Array<{ ID: string }>>('GET', '/v1/job/quick/allocations');
    return res.body.length === 5 ? res.body.map((a) => a.ID) : undefined;
  });
});

after(async () => {
  api?.close();
  await h?.close();
});

/** The allocation's client status as the API answers it. */
async function statusOf(id: string): Promise<string> {
  return (await h.call<{ ClientStatus: string }>('GET', `/v1/allocation/${id}`)).body.ClientStatus;
}

function report(id: string, clientStatus: AllocStatusReport['clientStatus']): AllocStatusReport {
  const now = Date.now();
  const state = clientStatus === 'running' ? 'running' : 'dead';
  return {
    id,
    clientStatus,
    clientDescription: clientStatus,
    taskStates: { t: { state, failed: false, restarts: 0, startedAt: now, finishedAt: state === 'dead' ? now : 0, events: [{ at: now, type: state === 'dead' ? 'Terminated' : 'Started', message: '', details: {} }] } },
  };
}

/** Lets the reporter run a few turns with the clock standing still. */
async function turns(): Promise<void> {
  for (let i = 0; i < 20; i++) await nextTurn();
}

describe('status reports of allocations that may end at once', () => {
  it("sends a held running and the end that replaces it as one update: the server sees the end, not the running", async () => {
    const clock = new ManualClock(1_000_000);
    const reporter = new StatusReporter({ api, nodeId, clock, holdMs: HOLD_MS });
    try {
      const [a, b, , , e] = allocIds as [string, string, string, string, string];
      for (const id of [a, b, e]) reporter.report(report(id, 'running'), { hold: true });
      await turns();
      assert.deepEqual(reporter.counts, { sent: 0, batches: 0 }, 'held: nothing posted while the clock stands still');
      assert.equal(await statusOf(a), 'pending');
      // a and b end together, each from its own timer (as a node's tasks that end at once do).
      for (const id of [a, b]) setTimeout(() => reporter.report(report(id, 'complete')), 0);
      await eventually('a and b complete on the server', async () => ((await statusOf(a)) === 'complete' && (await statusOf(b)) === 'complete' ? true : undefined));
      await reporter.flush();
      assert.deepEqual(reporter.counts, { sent: 3, batches: 1 }, "one POST: a's and b's ends, and e's running along with them");
      assert.equal(await statusOf(e), 'running');
    } finally {
      await reporter.stop();
    }
  });

  it('sends a held running that nothing replaces once its hold ends', async () => {
    const clock = new ManualClock(2_000_000);
    const reporter = new StatusReporter({ api, nodeId, clock, holdMs: HOLD_MS });
    try {
      const c = allocIds[2]!;
      reporter.report(report(c, 'running'), { hold: true });
      await turns();
      await clock.advance(HOLD_MS - 1);
      await turns();
      assert.deepEqual(reporter.counts, { sent: 0, batches: 0 }, 'not before the hold ends');
      await clock.advance(1);
      await eventually('c running on the server', async () => ((await statusOf(c)) === 'running' ? true : undefined));
      await reporter.flush();
      assert.deepEqual(reporter.counts, { sent: 1, batches: 1 });
    } finally {
      await reporter.stop();
    }
  });

  it('sends an update that is not held at once (no clock moved), and nothing is held by a report without hold', async () => {
    const clock = new ManualClock(3_000_000);
    const reporter = new StatusReporter({ api, nodeId, clock, holdMs: HOLD_MS });
    try {
      const d = allocIds[3]!;
      reporter.report(report(d, 'running'));
      await eventually('d running on the server', async () => ((await statusOf(d)) === 'running' ? true : undefined));
      await reporter.flush();
      assert.deepEqual(reporter.counts, { sent: 1, batches: 1 });
    } finally {
      await reporter.stop();
    }
  });
});
