// A server restarted over the same data directory: jobs, allocations and
// evaluations are back, the index keeps growing, a blocked evaluation is
// retried when a fitting node joins, and a failed allocation's delayed
// reschedule still happens (on the injectable clock).

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ManualClock } from '../../src/lib/index.js';
import { Server } from '../../src/server/index.js';
import type { Allocation, AllocationListStub, Evaluation } from '../../src/api/index.js';
import type { Node } from '../../src/structs/index.js';
import { API_TOKENS, fingerprint, startServer, TOKENS, type Harness } from './_harness.js';
import { eventually } from '../support/eventually.js';

const dir = mkdtempSync(join(tmpdir(), 'berth-restart-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('server restart over the same state', () => {
  it('keeps its state and resumes blocked evaluations and delayed reschedules', async () => {
    const clock = new ManualClock(1_700_000_000_000);
    let h: Harness = await startServer({ dir, clock, heartbeatTtlMs: 600_000 });
    let nodeId: string;
    let failedId: string;
    let blockedEval: string;
    let indexBefore: number;
    try {
      const reg = await h.call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('n1') } });
      nodeId = reg.body.node.id;
      const web = await h.submit({ job: { id: 'web', groups: [{ name: 'g', reschedule: { attempts: 3, interval: '1h', unlimited: false, delay: '1m', delayFunction: 'constant' }, tasks: [{ name: 't', driver: 'exec' }] }] } });
      assert.equal(web.body.evaluation?.BerthPlaced, 1);
      const needsPodman = await h.submit({ job: { id: 'dock', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'podman' }] }] } });
      assert.equal(needsPodman.body.evaluation?.Status, 'blocked');
      assert.deepEqual(needsPodman.body.evaluation?.FailedTGAllocs?.['g']?.ConstraintFiltered, { 'lacked the driver "podman"': 1 });
      blockedEval = needsPodman.body.EvalID;

      const allocs = await h.call<AllocationListStub[]>('GET', '/v1/job/web/allocations');
      failedId = allocs.body[0]!.ID;
      await h.call('POST', `/v1/internal/node/${nodeId}/allocations`, { token: TOKENS.node, body: { allocations: [{ id: failedId, clientStatus: 'failed' }] } });
      indexBefore = Number((await h.call('GET', '/v1/allocations')).headers.get('x-nomad-index'));
    } finally {
      await h.server.stop();
      await h.server.stop(); // safe twice
    }
    assert.equal(h.server.state, 'stopped');

    h = await startServer({ dir, clock, heartbeatTtlMs: 600_000 });
    try {
      const jobs = await h.call<Array<{ ID: string }>>('GET', '/v1/jobs');
      assert.deepEqual(jobs.body.map((j) => j.ID).sort(), ['dock', 'web']);
      const failed = await h.call<Allocation>(`GET`, `/v1/allocation/${failedId}`);
      assert.equal(failed.body.ClientStatus, 'failed');

      // The node heartbeats to the new server; a node with podman joins: the blocked evaluation places.
      assert.equal((await h.call('POST', `/v1/node/${nodeId}/heartbeat`, { token: TOKENS.node, body: {} })).status, 200);
      const podman = fingerprint('n2', {
        drivers: { podman: { detected: true, healthy: true, healthReason: '', networkModes: ['host'] } },
      });
      await h.call('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: podman } });
      const done = await eventually('the blocked evaluation to place', async () => {
        const e = await h.call<Evaluation>('GET', `/v1/evaluation/${blockedEval}`);
        return e.body.Status === 'complete' ? e.body : undefined;
      });
      assert.equal(done.BerthPlaced, 1);

      // The failed allocation is rescheduled once its delay has passed on the clock.
      await clock.advance(60_000);
      const next = await eventually(
        'the reschedule',
        async () => (await h.call<Allocation>('GET', `/v1/allocation/${failedId}`)).body.NextAllocation || undefined,
        { between: () => clock.advance(0) },
      );
      const replacement = (await h.call<Allocation>('GET', `/v1/allocation/${next}`)).body;
      assert.equal(replacement.PreviousAllocation, failedId);
      assert.deepEqual(replacement.RescheduleTracker?.Events?.map((e) => e.PrevAllocID), [failedId], 'one reschedule attempt');
      const indexAfter = Number((await h.call('GET', '/v1/allocations')).headers.get('x-nomad-index'));
      assert.ok(indexAfter > indexBefore, 'the index keeps growing across restarts');
    } finally {
      await h.server.stop();
    }
  });
});

describe('server start', () => {
  it('refuses a corrupt state file with a clear error, and leaves nothing running', async () => {
    const bad = join(dir, 'corrupt');
    mkdirSync(bad);
    writeFileSync(join(bad, 'state.db'), 'this is not a database, but it holds someone\'s data'.repeat(200));
    const server = new Server({ dataDir: bad, tokens: API_TOKENS });
    await assert.rejects(server.start(), (err: Error & { code?: string }) => {
      assert.equal(err.code, 'SERVER_START');
      assert.match(err.message, /not a readable database|corrupt/);
      return true;
    });
    assert.equal(server.state, 'stopped');
    assert.equal(server.address, undefined);
    await server.stop();
  });
});
