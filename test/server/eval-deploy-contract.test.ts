// Nomad's evaluation and deployment routes against a real server: every
// answer parsed with src/api's schemas (strict objects: a field missing or
// one too many fails), Nomad's query options (namespace, prefix, filter,
// paging, blocking queries woken by a change) and the deployment writes
// with their DeploymentUpdateResponse.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import { AllocationListStub, Deployment, DeploymentUpdateResponse, Evaluation, GO_ZERO_TIME } from '../../src/api/index.js';
import type { Node } from '../../src/structs/index.js';
import { fingerprint, startServer, TOKENS, type Answer, type Harness } from './_harness.js';

const Evaluations = z.array(Evaluation);
const Deployments = z.array(Deployment);
const Stubs = z.array(AllocationListStub);

let h: Harness;
before(async () => {
  h = await startServer();
  const reg = await h.call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('n1') } });
  assert.equal(reg.status, 200);
});
after(async () => {
  await h.close();
});

const indexOf = (a: Answer): number => Number(a.headers.get('x-nomad-index'));

/** A Nomad JSON job of one exec group; `update` makes it roll out as a deployment. */
function nomadJob(id: string, opts: { count?: number; driver?: string; update?: Record<string, unknown>; meta?: Record<string, string> } = {}): unknown {
  return {
    Job: {
      ID: id,
      Name: id,
      Type: 'service',
      Datacenters: ['dc1'],
      ...(opts.meta ? { Meta: opts.meta } : {}),
      TaskGroups: [
        {
          Name: 'web',
          Count: opts.count ?? 1,
          ...(opts.update ? { Update: opts.update } : {}),
          Tasks: [{ Name: 'srv', Driver: opts.driver ?? 'exec', Config: { command: '/bin/true' }, Resources: { CPU: 100, MemoryMB: 64 } }],
        },
      ],
    },
  };
}

/** Registers a job and waits with blocking reads until none of its evaluations is pending; answers them, oldest first. */
async function run(id: string, job: unknown): Promise<Evaluation[]> {
  const res = await h.call('POST', '/v1/jobs', { body: job });
  assert.equal(res.status, 200, res.text);
  let index = 0;
  for (;;) {
    const a = await h.call('GET', `/v1/job/${id}/evaluations${index ? `?index=${index}&wait=30s` : ''}`);
    assert.equal(a.status, 200, `${a.status} ${a.text}`);
    const evals = Evaluations.parse(a.body);
    if (evals.length > 0 && evals.every((e) => e.Status !== 'pending')) return evals;
    index = indexOf(a);
  }
}

/** The allocation IDs of a deployment, read from the store (the allocation routes' shape is not this test's). */
function allocsOf(deploymentId: string): string[] {
  return h.server.store
    .snapshot()
    .list('allocations', { filter: (a) => a.deploymentId === deploymentId })
    .map((a) => a.id);
}

describe('evaluations (Nomad /v1/evaluations, /v1/evaluation/:id, /v1/job/:id/evaluations)', () => {
  let web: Evaluation;
  let blocked: Evaluation;

  it("answers an evaluation in Nomad's shape, times in nanoseconds", async () => {
    [web] = (await run('web', nomadJob('web', { count: 2 }))) as [Evaluation];
    assert.equal(web.Status, 'complete');
    assert.equal(web.JobID, 'web');
    assert.equal(web.Namespace, 'default');
    assert.equal(web.TriggeredBy, 'job-register');
    assert.equal(web.FailedTGAllocs, null);
    assert.equal(web.BerthPlaced, 2, "Berth's count of the allocations it placed");
    assert.equal(web.RelatedEvals, null);
    assert.equal(web.WaitUntil, GO_ZERO_TIME);
    assert.equal(web.CreateTime, 1_700_000_000_000 * 1_000_000, 'Unix nanoseconds from the server clock');

    const one = await h.call('GET', `/v1/evaluation/${web.ID}`);
    assert.equal(one.status, 200);
    assert.deepEqual(Evaluation.parse(one.body), web);
    assert.ok(indexOf(one) > 0);
    assert.equal(one.headers.get('x-nomad-knownleader'), 'true');
    assert.equal(one.headers.get('x-nomad-lastcontact'), '0');

    const missing = await h.call('GET', '/v1/evaluation/no-such-eval');
    assert.equal(missing.status, 404);
    assert.match(missing.text, /not found/);
  });

  it('explains a placement failure in FailedTGAllocs, as an AllocationMetric', async () => {
    [blocked] = (await run('needs-podman', nomadJob('needs-podman', { count: 3, driver: 'podman' }))) as [Evaluation];
    assert.equal(blocked.Status, 'blocked');
    const m = blocked.FailedTGAllocs?.['web'];
    assert.ok(m, JSON.stringify(blocked));
    assert.equal(m.CoalescedFailures, 2, 'three allocations failed alike: one metric and two coalesced');
    assert.equal(m.NodesEvaluated, 1);
    assert.deepEqual(m.ConstraintFiltered, { 'lacked the driver "podman"': 1 });
    assert.deepEqual(blocked.QueuedAllocations, { web: 3 });
  });

  it('lists evaluations of a namespace oldest first, with prefix, status and filter', async () => {
    const all = await h.call('GET', '/v1/evaluations');
    assert.equal(all.status, 200);
    const evals = Evaluations.parse(all.body);
    assert.deepEqual(
      evals.map((e) => e.ID),
      [web.ID, blocked.ID],
    );
    assert.deepEqual(Evaluations.parse((await h.call('GET', '/v1/evaluations?namespace=*')).body).length, 2);
    assert.deepEqual(Evaluations.parse((await h.call('GET', '/v1/evaluations?namespace=other')).body), []);

    const byPrefix = Evaluations.parse((await h.call('GET', `/v1/evaluations?prefix=${blocked.ID.slice(0, 6)}`)).body);
    assert.deepEqual(
      byPrefix.map((e) => e.ID),
      [blocked.ID],
    );
    const byStatus = Evaluations.parse((await h.call('GET', '/v1/evaluations?status=blocked')).body);
    assert.deepEqual(
      byStatus.map((e) => e.ID),
      [blocked.ID],
    );
    const byJob = Evaluations.parse((await h.call('GET', '/v1/evaluations?job=web')).body);
    assert.deepEqual(
      byJob.map((e) => e.ID),
      [web.ID],
    );
    const filtered = Evaluations.parse((await h.call('GET', `/v1/evaluations?filter=${encodeURIComponent('FailedTGAllocs is not empty and Status == "blocked"')}`)).body);
    assert.deepEqual(
      filtered.map((e) => e.ID),
      [blocked.ID],
    );
    const both = await h.call('GET', `/v1/evaluations?status=blocked&filter=${encodeURIComponent('Status == "blocked"')}`);
    assert.equal(both.status, 400);
    assert.match(both.text, /Filter expression cannot be used with other filter parameters/);
    assert.equal((await h.call('GET', `/v1/evaluations?filter=${encodeURIComponent('Status ==')}`)).status, 400);
  });

  it('pages a list with per_page and next_token, forwards and in reverse', async () => {
    const first = await h.call('GET', '/v1/evaluations?per_page=1');
    assert.deepEqual(
      Evaluations.parse(first.body).map((e) => e.ID),
      [web.ID],
    );
    const token = first.headers.get('x-nomad-nexttoken');
    assert.ok(token);
    const second = await h.call('GET', `/v1/evaluations?per_page=1&next_token=${encodeURIComponent(token)}`);
    assert.deepEqual(
      Evaluations.parse(second.body).map((e) => e.ID),
      [blocked.ID],
    );
    assert.equal(second.headers.get('x-nomad-nexttoken'), null, 'the last page names no next one');
    const reversed = await h.call('GET', '/v1/evaluations?per_page=1&reverse=true');
    assert.deepEqual(
      Evaluations.parse(reversed.body).map((e) => e.ID),
      [blocked.ID],
    );
  });

  it("answers a job's evaluations and an evaluation's related ones", async () => {
    const jobEvals = await h.call('GET', '/v1/job/web/evaluations');
    assert.deepEqual(
      Evaluations.parse(jobEvals.body).map((e) => e.ID),
      [web.ID],
    );
    assert.deepEqual(Evaluations.parse((await h.call('GET', '/v1/job/nobody/evaluations')).body), []);
    const related = Evaluation.parse((await h.call('GET', `/v1/evaluation/${web.ID}?related=true`)).body);
    assert.deepEqual(related.RelatedEvals, []);
  });

  it("answers the allocations an evaluation placed, as Nomad's CLI monitors them", async () => {
    const placed = Stubs.parse((await h.call('GET', `/v1/evaluation/${web.ID}/allocations`)).body);
    assert.equal(placed.length, 2);
    assert.ok(placed.every((a) => a.EvalID === web.ID && a.JobID === 'web'));
    assert.deepEqual(Stubs.parse((await h.call('GET', `/v1/evaluation/${blocked.ID}/allocations`)).body), [], 'a blocked evaluation placed none');
  });

  it('wakes a blocking list query with the change that passes its index', async () => {
    const now = await h.call('GET', '/v1/evaluations');
    const index = indexOf(now);
    const idle = await h.call('GET', `/v1/evaluations?index=${index}&wait=50ms`);
    assert.equal(indexOf(idle), index, 'nothing changed: the same index once the wait ran out');
    const waiting = h.call('GET', `/v1/evaluations?index=${index}&wait=30s`);
    await h.call('POST', '/v1/jobs', { body: nomadJob('late') });
    const woke = await waiting;
    assert.ok(indexOf(woke) > index);
    assert.ok(
      Evaluations.parse(woke.body).some((e) => e.JobID === 'late'),
      'the answer holds the new evaluation',
    );
  });
});

describe('deployments (Nomad /v1/deployments, /v1/deployment/..., /v1/job/:id/deployment[s])', () => {
  const update = { MaxParallel: 1, HealthCheck: 'manual', MinHealthyTime: 0, HealthyDeadline: 60e9, ProgressDeadline: 120e9, AutoRevert: true };
  let first: Deployment;
  let second: Deployment;

  it('answers the deployment a rolling job made', async () => {
    const [ev] = (await run('roll', nomadJob('roll', { count: 2, update }))) as [Evaluation];
    const latest = await h.call('GET', '/v1/job/roll/deployment');
    assert.equal(latest.status, 200);
    first = Deployment.parse(latest.body);
    assert.equal(first.JobID, 'roll');
    assert.equal(first.JobVersion, 0);
    assert.equal(first.Status, 'running');
    assert.equal(first.TaskGroups?.['web']?.DesiredTotal, 2);
    assert.equal(first.TaskGroups?.['web']?.AutoRevert, true);
    assert.equal(first.TaskGroups?.['web']?.ProgressDeadline, 120e9, 'nanoseconds');
    assert.notEqual(first.TaskGroups?.['web']?.RequireProgressBy, GO_ZERO_TIME);
    assert.equal(ev.DeploymentID, first.ID, 'the evaluation names the deployment it worked under');

    assert.deepEqual(Deployment.parse((await h.call('GET', `/v1/deployment/${first.ID}`)).body), first);
    const placed = Stubs.parse((await h.call('GET', `/v1/deployment/allocations/${first.ID}`)).body);
    assert.deepEqual(placed.map((a) => a.ID).sort(), allocsOf(first.ID).sort());
    assert.equal(placed.length, 2);
    assert.equal((await h.call('GET', '/v1/deployment/no-such-deployment')).status, 404);
    const none = await h.call('GET', '/v1/job/web/deployment');
    assert.equal(none.status, 200);
    assert.equal(none.body, null, 'a job that never rolled out has no deployment');
  });

  it('pauses, resumes and sets health by hand, answering DeploymentUpdateResponse', async () => {
    const body = (extra: Record<string, unknown>) => ({ DeploymentID: first.ID, ...extra });
    const before = indexOf(await h.call('GET', `/v1/deployment/${first.ID}`));
    const waiting = h.call('GET', `/v1/deployment/${first.ID}?index=${before}&wait=30s`);
    const paused = await h.call('PUT', `/v1/deployment/pause/${first.ID}`, { body: body({ Pause: true }) });
    assert.equal(paused.status, 200, paused.text);
    const out = DeploymentUpdateResponse.parse(paused.body);
    assert.ok(out.EvalID, 'the job is evaluated again');
    assert.equal(out.RevertedJobVersion, null);
    assert.equal(indexOf(paused), out.Index);
    const woke = await waiting;
    assert.ok(indexOf(woke) > before, 'the blocking read of the deployment woke');
    assert.equal(Deployment.parse(woke.body).Status, 'paused');

    const resumed = await h.call('POST', `/v1/deployment/pause/${first.ID}`, { body: body({ Pause: false }) });
    assert.equal(resumed.status, 200, resumed.text);
    assert.equal(Deployment.parse((await h.call('GET', `/v1/deployment/${first.ID}`)).body).Status, 'running');

    assert.equal((await h.call('PUT', `/v1/deployment/pause/${first.ID}`, { body: { Pause: true } })).status, 400, 'DeploymentID is required');
    const mismatch = await h.call('PUT', `/v1/deployment/pause/${first.ID}`, { body: { DeploymentID: 'other', Pause: true } });
    assert.equal(mismatch.status, 400);
    assert.match(mismatch.text, /Deployment ID does not match/);

    const [alloc] = allocsOf(first.ID);
    assert.ok(alloc);
    const healthy = await h.call('PUT', `/v1/deployment/allocation-health/${first.ID}`, { body: body({ HealthyAllocationIDs: [alloc] }) });
    assert.equal(healthy.status, 200, healthy.text);
    DeploymentUpdateResponse.parse(healthy.body);
    assert.equal(h.server.store.snapshot().get('allocations', alloc)?.deploymentStatus?.healthy, true);
    assert.equal((await h.call('PUT', `/v1/deployment/allocation-health/${first.ID}`, { body: body({}) })).status, 400, 'no allocation named');
    assert.equal((await h.call('PUT', `/v1/deployment/allocation-health/${first.ID}`, { body: body({ HealthyAllocationIDs: ['nope'] }) })).status, 404);
  });

  it('succeeds once every allocation is healthy, making its version stable', async () => {
    const rest = allocsOf(first.ID).slice(1);
    const res = await h.call('PUT', `/v1/deployment/allocation-health/${first.ID}`, { body: { DeploymentID: first.ID, HealthyAllocationIDs: rest } });
    assert.equal(res.status, 200, res.text);
    let index = 0;
    for (;;) {
      const a = await h.call('GET', `/v1/deployment/${first.ID}${index ? `?index=${index}&wait=30s` : ''}`);
      const d = Deployment.parse(a.body);
      if (d.Status === 'successful') {
        assert.equal(d.TaskGroups?.['web']?.HealthyAllocs, 2);
        break;
      }
      index = indexOf(a);
    }
    const again = await h.call('PUT', `/v1/deployment/fail/${first.ID}`, { body: { DeploymentID: first.ID } });
    assert.equal(again.status, 409, 'a terminal deployment takes no more changes');
    assert.equal((await h.call('PUT', `/v1/deployment/fail/no-such-deployment`)).status, 404);
  });

  it('promotes canaries once healthy; an unhealthy allocation fails the deployment and reverts the job', async () => {
    await run('roll', nomadJob('roll', { count: 2, update: { ...update, Canary: 1 }, meta: { v: '1' } }));
    second = Deployment.parse((await h.call('GET', '/v1/job/roll/deployment')).body);
    assert.notEqual(second.ID, first.ID);
    assert.equal(second.JobVersion, 1);
    assert.equal(second.TaskGroups?.['web']?.DesiredCanaries, 1);
    const canaries = second.TaskGroups?.['web']?.PlacedCanaries ?? [];
    assert.equal(canaries.length, 1);

    const early = await h.call('PUT', `/v1/deployment/promote/${second.ID}`, { body: { DeploymentID: second.ID, All: true } });
    assert.equal(early.status, 409, 'an unhealthy canary is not promoted');
    await h.call('PUT', `/v1/deployment/allocation-health/${second.ID}`, { body: { DeploymentID: second.ID, HealthyAllocationIDs: canaries } });
    const promoted = await h.call('PUT', `/v1/deployment/promote/${second.ID}`, { body: { DeploymentID: second.ID, Groups: ['web'] } });
    assert.equal(promoted.status, 200, promoted.text);
    DeploymentUpdateResponse.parse(promoted.body);
    assert.equal(Deployment.parse((await h.call('GET', `/v1/deployment/${second.ID}`)).body).TaskGroups?.['web']?.Promoted, true);

    const res = await h.call('PUT', `/v1/deployment/allocation-health/${second.ID}`, { body: { DeploymentID: second.ID, UnhealthyAllocationIDs: canaries } });
    assert.equal(res.status, 200, res.text);
    const reverted = DeploymentUpdateResponse.parse(res.body);
    assert.equal(reverted.RevertedJobVersion, 0, 'auto_revert went back to the stable version 0');
    // The revert registers the job again; its evaluation (the answer's EvalID) starts the next deployment.
    assert.ok(reverted.EvalID, 'the revert answers its evaluation');
    await h.settled(reverted.EvalID);
    const failed = Deployment.parse((await h.call('GET', `/v1/deployment/${second.ID}`)).body);
    assert.equal(failed.Status, 'failed');
    assert.equal(failed.StatusDescription, 'Failed due to unhealthy allocations - rolling back to job version 0');
  });

  it("fails a deployment at an operator's request", async () => {
    const third = Deployment.parse((await h.call('GET', '/v1/job/roll/deployment')).body);
    assert.equal(third.JobVersion, 2, 'the revert registered version 0 again, as version 2');
    const failed = await h.call('POST', `/v1/deployment/fail/${third.ID}`);
    assert.equal(failed.status, 200, failed.text);
    DeploymentUpdateResponse.parse(failed.body);
    assert.match(Deployment.parse((await h.call('GET', `/v1/deployment/${third.ID}`)).body).StatusDescription, /^Deployment marked as failed/);
  });

  it("lists deployments with namespace, prefix, filter and paging, and a job's with `all`", async () => {
    const list = Deployments.parse((await h.call('GET', '/v1/deployments')).body);
    assert.equal(list.length, 3);
    assert.deepEqual(
      list.slice(0, 2).map((d) => d.ID),
      [first.ID, second.ID],
      'oldest first',
    );
    assert.equal(Deployments.parse((await h.call('GET', '/v1/deployments?namespace=*')).body).length, 3);
    assert.deepEqual(Deployments.parse((await h.call('GET', '/v1/deployments?namespace=other')).body), []);
    assert.deepEqual(
      Deployments.parse((await h.call('GET', `/v1/deployments?prefix=${second.ID.slice(0, 8)}`)).body).map((d) => d.ID),
      [second.ID],
    );
    assert.deepEqual(
      Deployments.parse((await h.call('GET', `/v1/deployments?filter=${encodeURIComponent('JobVersion == 1')}`)).body).map((d) => d.ID),
      [second.ID],
    );
    const page = await h.call('GET', '/v1/deployments?per_page=1');
    assert.deepEqual(
      Deployments.parse(page.body).map((d) => d.ID),
      [first.ID],
    );
    const next = page.headers.get('x-nomad-nexttoken') as string;
    assert.deepEqual(
      Deployments.parse((await h.call('GET', `/v1/deployments?per_page=1&next_token=${encodeURIComponent(next)}`)).body).map((d) => d.ID),
      [second.ID],
    );
    assert.deepEqual(
      Deployments.parse((await h.call('GET', '/v1/job/roll/deployments')).body).map((d) => d.ID),
      list.map((d) => d.ID),
    );
  });

  it("leaves a purged job's deployments out of its new job's list unless `all` asks", async () => {
    assert.equal((await h.call('DELETE', '/v1/job/roll?purge=true')).status, 200);
    await run('roll', nomadJob('roll', { count: 1, update }));
    const now = Deployments.parse((await h.call('GET', '/v1/job/roll/deployments')).body);
    assert.equal(now.length, 1);
    assert.ok(![first.ID, second.ID].includes(now[0]!.ID));
    const all = Deployments.parse((await h.call('GET', '/v1/job/roll/deployments?all=true')).body);
    assert.equal(all.length, 4);
    assert.deepEqual(
      [all[0]?.ID, all[1]?.ID, all.at(-1)?.ID],
      [first.ID, second.ID, now[0]!.ID],
    );
  });
});
