// The jobs route family's contract with Nomad's API, over real HTTP against
// a real server: every answer parsed with its src/api schema (strict
// objects: a field missing or extra fails), Nomad's words for its errors,
// blocking GET /v1/jobs woken by a registration, filter and paging, and
// what each write does (register, plan, evaluate, revert, scale, dispatch,
// periodic force, stop and purge).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { z } from 'zod';
import * as api from '../../src/api/index.js';
import { parseJobSpec, specToNomadJob, type Node } from '../../src/structs/index.js';
import { fingerprint, startServer, TOKENS, type Harness } from './_harness.js';

let h: Harness;
let nodeId = '';

/** A canonical spec as the Nomad Job JSON a Nomad client sends. */
const nomadJob = (spec: Record<string, unknown>): api.Job => specToNomadJob(parseJobSpec(spec));

const web = (count = 2, extra: Record<string, unknown> = {}): api.Job =>
  nomadJob({ id: 'web', groups: [{ name: 'web', count, tasks: [{ name: 'srv', driver: 'exec', env: { GREETING: 'hi' }, resources: { cpuMhz: 100, memoryMb: 64 } }] }], ...extra });

/** A call whose answer must be 200 and parse as `schema`. */
async function ok<T>(schema: z.ZodType<T>, method: string, path: string, body?: unknown): Promise<{ body: T; index: number }> {
  const res = await h.call(method, path, body === undefined ? {} : { body });
  assert.equal(res.status, 200, `${method} ${path}: ${res.status} ${res.text}`);
  return { body: schema.parse(res.body), index: Number(res.headers.get('x-nomad-index')) };
}

/** A refused call: its status and Nomad's plain-text message (the answer to a client that does not ask for JSON). */
async function refused(method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  const res = await h.call(method, path, body === undefined ? { accept: null } : { body, accept: null });
  assert.notEqual(res.status, 200, `${method} ${path} was accepted`);
  return { status: res.status, text: res.text };
}

/** Reports every live allocation of the node running. */
async function runAll(): Promise<void> {
  const allocs = (await h.call<Array<{ id: string; desiredStatus: string }>>('GET', `/v1/internal/node/${nodeId}/allocations`, { token: TOKENS.node })).body;
  const live = allocs.filter((a) => a.desiredStatus === 'run').map((a) => ({ id: a.id, clientStatus: 'running' }));
  assert.equal((await h.call('POST', `/v1/internal/node/${nodeId}/allocations`, { token: TOKENS.node, body: { allocations: live } })).status, 200);
}

before(async () => {
  h = await startServer();
  nodeId = (await h.call<{ node: Node }>('POST', '/v1/node/register', { token: TOKENS.node, body: { fingerprint: fingerprint('n1') } })).body.node.id;
});
after(async () => {
  await h.close();
});

describe("the jobs routes answer in Nomad's shapes", () => {
  it('PUT /v1/jobs registers a Nomad Job and answers a JobRegisterResponse; GET /v1/job/:id answers the Job', async () => {
    const reg = await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs', { Job: web(2) });
    assert.ok(reg.body.EvalID);
    assert.equal(reg.index, reg.body.Index);
    assert.equal(reg.body.KnownLeader, true);
    assert.equal((await h.settled(reg.body.EvalID)).Status, 'complete');
    const { body: job } = await ok(api.Job, 'GET', '/v1/job/web');
    assert.equal(job.ID, 'web');
    assert.equal(job.Version, 0);
    assert.equal(job.JobModifyIndex, reg.body.JobModifyIndex);
    assert.equal(job.TaskGroups?.[0]?.Count, 2);
    assert.equal(job.TaskGroups?.[0]?.Tasks?.[0]?.Env?.['GREETING'], 'hi');
    assert.ok((job.SubmitTime ?? 0) > 1e18, 'SubmitTime in nanoseconds');
    // POST /v1/job/:id registers too; the path names the job.
    await ok(api.JobRegisterResponse, 'POST', '/v1/job/web', { Job: web(2) });
    await runAll();
  });

  it("GET /v1/job/:id shows the restart and reschedule policies filled with the job type's defaults, as Nomad's canonical job does", async () => {
    const H = 3_600_000_000_000;
    const S = 1_000_000_000;
    const bare = (id: string, type: string, group: Record<string, unknown> = {}) => ({
      Job: { ID: id, Type: type, TaskGroups: [{ Name: 'g', ...group, Tasks: [{ Name: 't', Driver: 'exec', Config: { command: '/bin/true' } }] }] },
    });
    await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs', bare('defaults-batch', 'batch', { RestartPolicy: { Attempts: 5 } }));
    const batch = (await ok(api.Job, 'GET', '/v1/job/defaults-batch')).body.TaskGroups![0]!;
    assert.deepEqual(batch.RestartPolicy, { Attempts: 5, Interval: 24 * H, Delay: 15 * S, Mode: 'fail', RenderTemplates: false });
    assert.deepEqual(batch.ReschedulePolicy, { Attempts: 1, Interval: 24 * H, Delay: 5 * S, DelayFunction: 'constant', MaxDelay: 0, Unlimited: false });
    await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs', bare('defaults-service', 'service'));
    const service = (await ok(api.Job, 'GET', '/v1/job/defaults-service')).body.TaskGroups![0]!;
    assert.deepEqual(service.RestartPolicy, { Attempts: 2, Interval: H / 2, Delay: 15 * S, Mode: 'fail', RenderTemplates: false });
    assert.deepEqual(service.ReschedulePolicy, { Attempts: 0, Interval: 0, Delay: 30 * S, DelayFunction: 'exponential', MaxDelay: H, Unlimited: true });
    await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs', bare('defaults-system', 'system'));
    assert.equal((await ok(api.Job, 'GET', '/v1/job/defaults-system')).body.TaskGroups![0]!.ReschedulePolicy ?? null, null, 'a system job is never rescheduled');
    // A service job's attempts over the unlimited default is ambiguous (Nomad refuses it too).
    const ambiguous = await refused('PUT', '/v1/jobs', bare('ambiguous', 'service', { ReschedulePolicy: { Attempts: 3, Interval: H } }));
    assert.equal(ambiguous.status, 400);
    assert.match(ambiguous.text, /Job\.TaskGroups\[0\]\.ReschedulePolicy\.Attempts: Reschedule Policy with Attempts = 3, Interval = 1h0m0s, and Unlimited = true is ambiguous/);
    assert.equal((await h.call('GET', '/v1/job/ambiguous')).status, 404, 'a refused job is not registered');
    for (const id of ['defaults-batch', 'defaults-service', 'defaults-system']) assert.equal((await h.call('DELETE', `/v1/job/${id}?purge=true`)).status, 200);
  });

  it("refuses malformed registrations in Nomad's words, and a Berth-unsupported field by its Nomad path", async () => {
    assert.deepEqual(await refused('PUT', '/v1/jobs', { job: { id: 'x' } }), { status: 400, text: 'Job must be specified' });
    assert.deepEqual(await refused('PUT', '/v1/jobs', { Job: { TaskGroups: [] } }), { status: 400, text: "Job ID hasn't been provided" });
    assert.deepEqual(await refused('POST', '/v1/job/other', { Job: web() }), { status: 400, text: 'Job ID does not match name' });
    const vault = web();
    (vault.TaskGroups?.[0]?.Tasks?.[0] as api.Task).Vault = { Policies: ['x'] } as api.Task['Vault'];
    const res = await h.call<{ code: string; message: string; details: { problems: Array<{ path: string }> } }>('PUT', '/v1/jobs', { body: { Job: { ...vault, ID: 'vaulted' } } });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'INVALID');
    assert.match(res.body.message, /^job is invalid: Job\.TaskGroups\[0\]\.Tasks\[0\]\.Vault: /);
    assert.deepEqual(res.body.details.problems.map((p) => p.path), ['Job.TaskGroups[0].Tasks[0].Vault'], 'Berth\'s JSON error names the path, for a client to locate');
    const bad = nomadJob({ id: 'bad', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec' }] }] });
    (bad.TaskGroups?.[0] as api.TaskGroup).Count = -1;
    const neg = await refused('PUT', '/v1/jobs', { Job: bad });
    assert.equal(neg.status, 400);
    assert.match(neg.text, /Job\.TaskGroups\[0\]\.Count/, 'a problem of the spec is named at its Nomad path');
    assert.deepEqual(await refused('GET', '/v1/job/nowhere'), { status: 404, text: 'job not found' });
  });

  it('EnforceIndex registers only at the given job modify index, refused in the words Nomad\'s CLI looks for', async () => {
    const { body: job } = await ok(api.Job, 'GET', '/v1/job/web');
    const stale = await refused('PUT', '/v1/jobs', { Job: web(3), EnforceIndex: true, JobModifyIndex: (job.JobModifyIndex ?? 0) - 1 });
    assert.equal(stale.status, 409);
    assert.match(stale.text, /^Enforcing job modify index \d+: job exists with conflicting job modify index: \d+$/);
    assert.match((await refused('PUT', '/v1/jobs', { Job: web(3), EnforceIndex: true, JobModifyIndex: 0 })).text, /^Enforcing job modify index 0: job already exists$/);
  });

  it('GET /v1/jobs lists JobListStubs with summaries; prefix, namespace, meta, filter and paging', async () => {
    for (const id of ['api-a', 'api-b', 'api-c']) {
      await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs', { Job: nomadJob({ id, meta: { team: id === 'api-b' ? 'blue' : 'red' }, groups: [{ name: 'g', count: 0, tasks: [{ name: 't', driver: 'exec' }] }] }) });
    }
    assert.equal((await h.call('PUT', '/v1/namespace/other', { body: { Name: 'other' } })).status, 200, 'a job goes only into a namespace that exists');
    await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs?namespace=other', { Job: nomadJob({ id: 'api-other', groups: [{ name: 'g', count: 0, tasks: [{ name: 't', driver: 'exec' }] }] }) });
    const list = z.array(api.JobListStub);
    const all = await ok(list, 'GET', '/v1/jobs');
    assert.deepEqual(all.body.map((j) => j.ID), ['api-a', 'api-b', 'api-c', 'web']);
    const stub = all.body.find((j) => j.ID === 'web') as api.JobListStub;
    assert.equal(stub.Meta, undefined, 'Meta only with ?meta=true');
    assert.equal(stub.JobSummary?.Summary?.['web']?.Running, 2);
    assert.ok(all.index > 0);
    assert.deepEqual((await ok(list, 'GET', '/v1/jobs?prefix=api-')).body.map((j) => j.ID), ['api-a', 'api-b', 'api-c']);
    assert.deepEqual((await ok(list, 'GET', '/v1/jobs?namespace=other')).body.map((j) => j.ID), ['api-other']);
    assert.equal((await ok(list, 'GET', '/v1/jobs?namespace=*')).body.length, 5);
    assert.deepEqual((await ok(list, 'GET', '/v1/jobs?prefix=api-b&meta=true')).body[0]?.Meta, { team: 'blue' });
    const filtered = await ok(list, 'GET', `/v1/jobs?filter=${encodeURIComponent('Meta.team == "red" or ID == "web"')}&meta=true`);
    assert.deepEqual(filtered.body.map((j) => j.ID), ['api-a', 'api-c', 'web']);
    const page1 = await h.call<api.JobListStub[]>('GET', '/v1/jobs?per_page=2');
    assert.deepEqual(list.parse(page1.body).map((j) => j.ID), ['api-a', 'api-b']);
    const next = page1.headers.get('x-nomad-nexttoken');
    assert.equal(next, 'api-c');
    const page2 = await h.call<api.JobListStub[]>('GET', `/v1/jobs?per_page=2&next_token=${next}`);
    assert.deepEqual(list.parse(page2.body).map((j) => j.ID), ['api-c', 'web']);
    assert.equal(page2.headers.get('x-nomad-nexttoken'), null);
    assert.equal((await refused('GET', '/v1/jobs?filter=ID%20%3D%3D')).status, 400);
  });

  it('a blocking GET /v1/jobs waits until a registration changes the list', async () => {
    const { index } = await ok(z.array(api.JobListStub), 'GET', '/v1/jobs');
    let answered = false;
    const waiting = h.call<api.JobListStub[]>('GET', `/v1/jobs?index=${index}&wait=30s`).then((r) => ((answered = true), r));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(answered, false, 'nothing changed yet');
    await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs', { Job: nomadJob({ id: 'late', groups: [{ name: 'g', count: 0, tasks: [{ name: 't', driver: 'exec' }] }] }) });
    const woke = await waiting;
    assert.ok(Number(woke.headers.get('x-nomad-index')) > index);
    assert.ok(z.array(api.JobListStub).parse(woke.body).some((j) => j.ID === 'late'));
    const quiet = await h.call('GET', `/v1/jobs?index=${Number(woke.headers.get('x-nomad-index'))}&wait=50ms`);
    assert.equal(quiet.status, 200, 'a wait that runs out answers');
  });

  it('GET /v1/job/:id/summary counts allocations per group (JobSummary)', async () => {
    const { body } = await ok(api.JobSummary, 'GET', '/v1/job/web/summary');
    assert.deepEqual(body.Summary, { web: { Queued: 0, Complete: 0, Failed: 0, Running: 2, Starting: 0, Lost: 0, Unknown: 0 } });
    assert.deepEqual(body.Children, { Pending: 0, Running: 0, Dead: 0 });
    assert.deepEqual(await refused('GET', '/v1/job/nowhere/summary'), { status: 404, text: 'job not found' });
  });

  it('PUT /v1/job/:id/plan answers a JobPlanResponse: the diff in Nomad\'s names, the updates per group, failures', async () => {
    const { body } = await ok(api.JobPlanResponse, 'PUT', '/v1/job/web/plan', { Job: web(3), Diff: true });
    assert.equal(body.Diff?.Type, 'Edited');
    const group = body.Diff?.TaskGroups?.[0];
    assert.equal(group?.Name, 'web');
    assert.deepEqual(group?.Fields?.find((f) => f.Name === 'Count'), { Type: 'Edited', Name: 'Count', Old: '2', New: '3', Annotations: ['forces create'] });
    assert.equal(body.Annotations?.DesiredTGUpdates?.['web']?.Place, 1);
    // A count change replaces nothing: the two running allocations take the new version in place (Nomad's "1 create, 2 in-place update").
    assert.equal(body.Annotations?.DesiredTGUpdates?.['web']?.InPlaceUpdate, 2);
    assert.equal(body.Annotations?.DesiredTGUpdates?.['web']?.Stop, 0);
    assert.equal(body.BerthPlacements?.length, 1);
    assert.equal(body.FailedTGAllocs, null);
    const { body: job } = await ok(api.Job, 'GET', '/v1/job/web');
    assert.equal(body.JobModifyIndex, job.JobModifyIndex);
    // An env change: the task is edited and its allocations replaced.
    const env = web(2);
    (env.TaskGroups?.[0]?.Tasks?.[0] as api.Task).Env = { GREETING: 'hello' };
    const changed = (await ok(api.JobPlanResponse, 'PUT', '/v1/job/web/plan', { Job: env, Diff: true })).body;
    const task = changed.Diff?.TaskGroups?.[0]?.Tasks?.[0];
    assert.deepEqual(task?.Fields, [{ Type: 'Edited', Name: 'Env[GREETING]', Old: 'hi', New: 'hello', Annotations: null }]);
    // Too big for the node: the group's failure as Nomad's AllocationMetric.
    const huge = nomadJob({ id: 'huge', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 100_000, memoryMb: 64 } }] }] });
    const failed = (await ok(api.JobPlanResponse, 'PUT', '/v1/job/huge/plan', { Job: huge, Diff: true })).body;
    assert.equal(failed.Diff?.Type, 'Added');
    assert.equal(failed.FailedTGAllocs?.['g']?.NodesExhausted, 1);
    assert.deepEqual(await refused('PUT', '/v1/job/other/plan', { Job: web() }), { status: 400, text: 'Job ID does not match' });
    assert.deepEqual(await refused('GET', '/v1/job/huge'), { status: 404, text: 'job not found' }, 'a plan registers nothing');
  });

  it('PUT /v1/validate/job answers a JobValidateResponse, with the problems listed', async () => {
    const good = (await ok(api.JobValidateResponse, 'PUT', '/v1/validate/job', { Job: web() })).body;
    assert.deepEqual(good, { DriverConfigValidated: true, ValidationErrors: null, Error: '', Warnings: '' });
    const csi = nomadJob({
      id: 'v',
      groups: [{ name: 'g', volumes: { data: { type: 'csi', source: 'missing-vol', accessMode: 'single-node-writer', attachmentMode: 'file-system' } }, tasks: [{ name: 't', driver: 'exec' }] }],
    });
    const bad = (await ok(api.JobValidateResponse, 'POST', '/v1/validate/job', { Job: csi })).body;
    assert.equal(bad.ValidationErrors?.length, 1);
    assert.match(bad.ValidationErrors?.[0] ?? '', /missing-vol/);
    assert.match(bad.Error, /^1 error occurred:/);
  });

  it('PUT /v1/job/:id/evaluate writes a new evaluation (JobRegisterResponse)', async () => {
    const { body } = await ok(api.JobRegisterResponse, 'PUT', '/v1/job/web/evaluate', { JobID: 'web', EvalOptions: { ForceReschedule: false } });
    assert.equal((await h.settled(body.EvalID)).Status, 'complete');
    const bare = await h.call('POST', '/v1/job/web/evaluate');
    assert.equal(bare.status, 200, 'a body is optional');
    assert.deepEqual(await refused('PUT', '/v1/job/web/evaluate', { JobID: 'other' }), { status: 400, text: 'JobID not same as job name' });
    assert.equal((await refused('PUT', '/v1/job/nowhere/evaluate')).status, 404);
  });

  it('versions (with diffs), revert and scale: JobVersionsResponse, JobRegisterResponse, JobScaleStatusResponse', async () => {
    const env = web(2);
    (env.TaskGroups?.[0]?.Tasks?.[0] as api.Task).Env = { GREETING: 'hello' };
    await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs', { Job: env });
    const { body: versions } = await ok(api.JobVersionsResponse, 'GET', '/v1/job/web/versions?diffs=true');
    assert.deepEqual(versions.Versions?.map((v) => v.Version), [1, 0]);
    assert.equal(versions.Versions?.[1]?.Stable, true);
    assert.deepEqual(versions.Diffs?.[0]?.TaskGroups?.[0]?.Tasks?.[0]?.Fields?.[0], { Type: 'Edited', Name: 'Env[GREETING]', Old: 'hi', New: 'hello', Annotations: null });
    assert.equal((await ok(api.JobVersionsResponse, 'GET', '/v1/job/web/versions')).body.Diffs, null);
    assert.deepEqual(await refused('GET', '/v1/job/nowhere/versions'), { status: 404, text: 'job versions not found' });

    const reverted = await ok(api.JobRegisterResponse, 'PUT', '/v1/job/web/revert', { JobID: 'web', JobVersion: 0 });
    assert.ok(reverted.body.EvalID);
    const { body: now } = await ok(api.Job, 'GET', '/v1/job/web');
    assert.equal(now.Version, 2);
    assert.equal(now.TaskGroups?.[0]?.Tasks?.[0]?.Env?.['GREETING'], 'hi');
    assert.deepEqual(await refused('PUT', '/v1/job/web/revert', { JobID: 'web', JobVersion: 2 }), { status: 400, text: "can't revert to current version" });
    assert.deepEqual(await refused('PUT', '/v1/job/web/revert', { JobID: 'web', JobVersion: 9 }), { status: 404, text: 'job "web" in namespace "default" at version 9 not found' });
    assert.deepEqual(await refused('PUT', '/v1/job/web/revert', { JobVersion: 0 }), { status: 400, text: 'JobID must be specified' });

    const scaled = await ok(api.JobRegisterResponse, 'POST', '/v1/job/web/scale', { Count: 3, Target: { Job: 'web', Group: 'web' }, Message: 'more' });
    await h.settled(scaled.body.EvalID);
    const { body: status } = await ok(api.JobScaleStatusResponse, 'GET', '/v1/job/web/scale');
    assert.equal(status.TaskGroups?.['web']?.Desired, 3);
    assert.equal(status.TaskGroups?.['web']?.Placed, 3);
    assert.equal(status.JobStopped, false);
    assert.deepEqual(await refused('POST', '/v1/job/web/scale', { Count: 1, Target: { Group: 'nope' } }), { status: 400, text: 'task group "nope" specified for scaling does not exist in job' });
    assert.deepEqual(await refused('POST', '/v1/job/web/scale', { Count: -1, Target: { Group: 'web' } }), { status: 400, text: "scaling action count can't be negative" });
    assert.deepEqual(await refused('POST', '/v1/job/web/scale', { Count: 1, Target: { Job: 'x', Group: 'web' } }), { status: 400, text: 'job ID in payload did not match URL' });
    assert.deepEqual(await refused('GET', '/v1/job/nowhere/scale'), { status: 404, text: 'job not found' });
  });

  it('dispatch and periodic force launch children: JobDispatchResponse, PeriodicForceResponse', async () => {
    const task = { name: 't', driver: 'exec' };
    await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs', { Job: nomadJob({ id: 'echo', type: 'batch', parameterized: { payload: 'optional', metaRequired: ['who'] }, groups: [{ name: 'g', tasks: [task] }] }) });
    const { body: d } = await ok(api.JobDispatchResponse, 'PUT', '/v1/job/echo/dispatch', { JobID: 'echo', Payload: Buffer.from('hi').toString('base64'), Meta: { who: 'ops' } });
    assert.match(d.DispatchedJobID, /^echo\/dispatch-\d+-[0-9a-f]{8}$/);
    const { body: child } = await ok(api.Job, 'GET', `/v1/job/${encodeURIComponent(d.DispatchedJobID)}`);
    assert.equal(child.ParentID, 'echo');
    assert.equal(child.Dispatched, true);
    assert.equal(child.Meta?.['who'], 'ops');
    assert.equal((await refused('PUT', '/v1/job/echo/dispatch', { Meta: {} })).status, 400, 'required meta missing');
    const { body: summary } = await ok(api.JobSummary, 'GET', '/v1/job/echo/summary');
    assert.equal((summary.Children?.Pending ?? 0) + (summary.Children?.Running ?? 0) + (summary.Children?.Dead ?? 0), 1);

    await ok(api.JobRegisterResponse, 'PUT', '/v1/jobs', { Job: nomadJob({ id: 'nightly', type: 'batch', periodic: { cron: '0 3 * * *' }, groups: [{ name: 'g', tasks: [task] }] }) });
    const { body: forced } = await ok(api.PeriodicForceResponse, 'PUT', '/v1/job/nightly/periodic/force');
    assert.ok(forced.EvalID);
    const children = (await ok(z.array(api.JobListStub), 'GET', '/v1/jobs?prefix=nightly/')).body;
    assert.equal(children.length, 1);
    assert.equal(children[0]?.ParentID, 'nightly');
    assert.equal((await ok(z.array(api.JobListStub), 'GET', '/v1/jobs?prefix=nightly')).body.find((j) => j.ID === 'nightly')?.Periodic, true);
  });

  it('PUT /v1/jobs/parse turns an HCL job file into Nomad\'s Job', async () => {
    const hcl = 'variable "n" {\n  default = 1\n}\njob "parsed" {\n  group "g" {\n    count = var.n\n    task "t" {\n      driver = "exec"\n      config {\n        command = "/bin/true"\n      }\n    }\n  }\n}\n';
    const { body } = await ok(api.Job, 'PUT', '/v1/jobs/parse', { JobHCL: hcl, Canonicalize: true, Variables: 'n = 4\n' });
    assert.equal(body.ID, 'parsed');
    assert.equal(body.TaskGroups?.[0]?.Count, 4);
    assert.equal(body.Priority, 50, 'canonicalized');
    const bad = await refused('POST', '/v1/jobs/parse', { JobHCL: 'job "x" {' });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /^Failed to parse job: input\.hcl:/);
    assert.deepEqual(await refused('PUT', '/v1/jobs/parse', { JobHCL: '' }), { status: 400, text: 'Job spec is empty' });
  });

  it('DELETE /v1/job/:id stops (JobDeregisterResponse), with purge forgets the job', async () => {
    const { body: stop } = await ok(api.JobDeregisterResponse, 'DELETE', '/v1/job/api-a');
    assert.ok(stop.EvalID);
    assert.equal((await ok(api.Job, 'GET', '/v1/job/api-a')).body.Stop, true);
    await ok(api.JobDeregisterResponse, 'DELETE', '/v1/job/api-a?purge=true');
    assert.deepEqual(await refused('GET', '/v1/job/api-a'), { status: 404, text: 'job not found' });
    assert.equal((await refused('DELETE', '/v1/job/api-b?purge=maybe')).status, 400);
  });
});
