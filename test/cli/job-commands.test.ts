// The job commands on Nomad's API, as the real binary against a real
// server with a stand-in node: Nomad's CLI habits (`-output` printing the
// registration a user pipes to curl, `-json` reading a job file as Nomad
// JSON whatever its name, `-verbose` and `-t` on status, `-json-output` on
// plan), the Nomad layout of `job status`, history with Nomad's diff, scale
// and revert, and a problem the server finds named at its line in the job
// file, as the file's own problems are.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as api from '../../src/api/index.js';
import type { Node } from '../../src/structs/index.js';
import { json } from './_berth.js';
import { reportAllocations, startCluster, type Cluster } from './_cluster.js';
import { eventually } from '../support/eventually.js';

let c: Cluster;
let files = '';
let node: Node;

const webHcl = (greeting: string): string => `job "web" {
  group "web" {
    task "srv" {
      driver = "raw_exec"
      env {
        GREETING = "${greeting}"
      }
      config {
        command = "/bin/sleep"
        args    = ["600"]
      }
      resources {
        cpu    = 100
        memory = 64
      }
    }
  }
}
`;

const write = (name: string, text: string): string => {
  const file = join(files, name);
  writeFileSync(file, text);
  return file;
};

/** Runs the job file detached and reports its allocations running, as the node's agent would. */
async function runDetached(args: string[]): Promise<void> {
  const res = await c.cli(['job', 'run', '-detach', ...args]);
  assert.equal(res.code, 0, res.stdout + res.stderr);
  await eventually('the allocations placed and running', async () => ((await reportAllocations(c, node.id, 'running')).length ? true : undefined), { intervalMs: 50 });
}

before(async () => {
  files = mkdtempSync(join(tmpdir(), 'berth-jobcmd-'));
  c = await startCluster();
  node = await c.registerNode('n1');
});
after(async () => {
  await c?.close();
  rmSync(files, { recursive: true, force: true });
});

describe("the job commands on Nomad's API", () => {
  it('job run -output prints the registration; job run -json runs it back whatever the file is named', async () => {
    const out = await c.cli(['job', 'run', '-output', write('web.hcl', webHcl('hi'))]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /^\{\n {4}"Job": \{\n {8}"Region": /, "Nomad's four-space indent");
    const registration = JSON.parse(out.stdout) as api.JobRegisterRequest;
    assert.equal(registration.Job.ID, 'web');
    assert.equal(registration.Job.TaskGroups?.[0]?.Tasks?.[0]?.Env?.['GREETING'], 'hi');
    assert.deepEqual((await c.call<api.JobListStub[]>('GET', '/v1/jobs')).body, [], '-output submits nothing');
    // job plan -output: the body of PUT /v1/job/:id/plan, planned as it is.
    const planOut = await c.cli(['job', 'plan', '-output', write('web.hcl', webHcl('hi'))]);
    assert.equal(planOut.code, 0, planOut.stderr);
    const planRequest = JSON.parse(planOut.stdout) as Pick<api.JobPlanRequest, 'Job' | 'Diff'>;
    assert.equal(planRequest.Diff, true);
    assert.equal(planRequest.Job.ID, 'web');
    const planned = await c.call<api.JobPlanResponse>('PUT', '/v1/job/web/plan', { body: planRequest });
    assert.equal(planned.status, 200, planned.text);
    assert.equal(planned.body.Diff?.Type, 'Added');
    // A .nomad file is read as HCL unless -json says it is JSON.
    const saved = write('web-registration.nomad', out.stdout);
    assert.notEqual((await c.cli(['job', 'run', '-detach', saved])).code, 0);
    await runDetached(['-json', saved]);
  });

  it('job status lists in Nomad\'s columns and shows one job in its layout; -verbose, -t and -json', async () => {
    const list = await c.cli(['job', 'status']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^ID\s+Type\s+Priority\s+Status\s+Submit Date\nweb\s+service\s+50\s+running\s+\d{4}-/);
    const one = await c.cli(['job', 'status', 'web']);
    assert.match(one.stdout, /^ID\s+= web\nName\s+= web\nSubmit Date\s+= \d{4}-.*\nType\s+= service\nPriority\s+= 50\nDatacenters\s+= \*\nNamespace\s+= default\nStatus\s+= running\nPeriodic\s+= false\nParameterized\s+= false\n/);
    assert.match(one.stdout, /^web\s+0\s+0\s+1\s+0\s+0\s+0$/m);
    const [alloc] = (await c.call<api.AllocationListStub[]>('GET', '/v1/job/web/allocations')).body;
    assert.match(one.stdout, new RegExp(`^${alloc!.ID.slice(0, 8)}\\s`, 'm'));
    assert.doesNotMatch(one.stdout, new RegExp(alloc!.ID));
    assert.match((await c.cli(['job', 'status', '-verbose', 'web'])).stdout, new RegExp(`^${alloc!.ID}\\s`, 'm'));
    const t = await c.cli(['job', 'status', '-t', '{{range .}}{{.Summary.JobID}}: {{(index .Summary.Summary "web").Running}} running{{end}}', 'web']);
    assert.equal(t.stdout.trim(), 'web: 1 running');
    const doc = json<Array<{ Summary: api.JobSummary; Allocations: unknown[]; Evaluations: unknown[] }>>(await c.cli(['job', 'status', '-json', 'web']));
    assert.equal(doc[0]?.Summary.Summary?.['web']?.Running, 1);
    assert.equal(doc[0]?.Allocations.length, 1);
    const inspect = await c.cli(['job', 'inspect', '-t', '{{.ID}} v{{.Version}} {{range .TaskGroups}}{{.Name}}={{.Count}}{{end}}', 'web']);
    assert.equal(inspect.stdout.trim(), 'web v0 web=1');
  });

  it("job plan answers in Nomad's diff and exits 1 for changes; -json-output prints the JobPlanResponse", async () => {
    const file = write('web2.hcl', webHcl('hello'));
    const plan = await c.cli(['job', 'plan', file]);
    assert.equal(plan.code, 1, plan.stdout + plan.stderr);
    assert.match(plan.stdout, /^\+\/- Job: "web"\n\+\/- Task Group: "web" \(1 create, 1 destroy\)\n {2}\+\/- Task: "srv" \(forces create\/destroy update\)\n {4}\+\/- Env\[GREETING\]: "hi" => "hello"\n/);
    assert.match(plan.stdout, /^Job Modify Index: \d+$/m);
    const doc = json<api.JobPlanResponse>(await c.cli(['job', 'plan', '-json-output', file]));
    assert.equal(doc.Annotations?.DesiredTGUpdates?.['web']?.Place, 1);
    assert.equal((await c.cli(['job', 'plan', write('same.hcl', webHcl('hi'))])).code, 0, 'no change');
  });

  it('job scale, job history -p with Nomad\'s diff, job revert', async () => {
    const scaled = await c.cli(['job', 'scale', 'web', '2']);
    assert.equal(scaled.code, 0, scaled.stderr);
    assert.match(scaled.stdout, /^Job "web" group "web" scaled to 2\nEvaluation ID: [0-9a-f-]{36}$/m);
    await eventually('the second allocation running', async () => ((await reportAllocations(c, node.id, 'running')).length ? true : undefined), { intervalMs: 50 });
    const history = await c.cli(['job', 'history', '-p', 'web']);
    assert.equal(history.code, 0, history.stderr);
    assert.match(history.stdout, /^Version\s+= 1\nStable\s+= true\nSubmit Date\s+= \d{4}-.*\nDiff\s+= \+\/- Job: "web"\n\+\/- Task Group: "web"\n {2}\+\/- Count: "1" => "2"/m);
    assert.match(history.stdout, /^Version\s+= 0$/m);
    const reverted = await c.cli(['job', 'revert', 'web', '0']);
    assert.equal(reverted.code, 0, reverted.stderr);
    assert.match(reverted.stdout, /^Job "web" reverted to version 0\nEvaluation ID: /);
    const job = (await c.call<api.Job>('GET', '/v1/job/web')).body;
    assert.equal(job.Version, 2);
    assert.equal(job.TaskGroups?.[0]?.Count, 1);
    const bad = await c.cli(['job', 'revert', 'web', '2']);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /can't revert to current version/);
  });

  it('job allocs and job deployments list one job\'s in Nomad\'s columns; job eval -force-reschedule replaces a failed allocation its policy gave up on', async () => {
    const crash = write(
      'crash.hcl',
      webHcl('x').replace('job "web"', 'job "crash"').replace('group "web" {', 'group "web" {\n    reschedule {\n      attempts  = 0\n      unlimited = false\n    }'),
    );
    assert.equal((await c.cli(['job', 'run', '-detach', crash])).code, 0);
    const failed = await eventually('the allocation reported failed', async () => {
      const done = await reportAllocations(c, node.id, 'failed', (a) => a.jobId === 'crash');
      return done.length ? done : undefined;
    }, { intervalMs: 50 });
    const listed = await c.cli(['job', 'allocs', 'crash']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^ID\s+Node ID\s+Task Group\s+Version\s+Desired\s+Status\s+Created\s+Modified$/m);
    assert.match(listed.stdout, new RegExp(`^${failed[0]!.id.slice(0, 8)}\\s+${node.id.slice(0, 8)}\\s+web\\s+0\\s+run\\s+failed\\s`, 'm'));
    // The policy has no attempts: a plain evaluation leaves it failed; a forced reschedule replaces it now.
    const plain = await c.cli(['job', 'eval', '-detach', 'crash']);
    assert.match(plain.stdout, /^Created eval ID: "[0-9a-f]{8}"$/m);
    const forced = await c.cli(['job', 'eval', '-force-reschedule', 'crash']);
    assert.match(forced.stdout, /Monitoring evaluation "[0-9a-f]{8}"/);
    const verbose = JSON.parse((await c.cli(['job', 'allocs', '-json', 'crash'])).stdout) as api.AllocationListStub[];
    assert.equal(verbose.length, 2, 'the failed allocation and its replacement');
    const replacement = verbose.find((a) => a.ID !== failed[0]!.id);
    assert.equal(replacement?.DesiredStatus, 'run');
    assert.equal(verbose.find((a) => a.ID === failed[0]!.id)?.DesiredStatus, 'stop');

    const none = await c.cli(['job', 'deployments', 'crash']);
    assert.equal(none.code, 0, none.stderr);
    assert.equal(none.stdout.trim(), 'Job "crash" has no deployments');
    const rolling = write('roll.hcl', webHcl('r').replace('job "web"', 'job "roll"').replace('group "web" {', 'group "web" {\n    update {\n      max_parallel = 1\n    }'));
    assert.equal((await c.cli(['job', 'run', '-detach', rolling])).code, 0);
    const deps = await eventually('the deployment listed', async () => {
      const r = await c.cli(['job', 'deployments', 'roll']);
      return r.code === 0 && /^[0-9a-f]{8}\s+roll\s+0\s+running\s/m.test(r.stdout) ? r : undefined;
    }, { intervalMs: 100 });
    assert.match(deps.stdout, /^ID\s+Job ID\s+Job Version\s+Status\s+Description$/m);
    const latest = JSON.parse((await c.cli(['job', 'deployments', '-latest', '-json', 'roll'])).stdout) as api.Deployment;
    assert.equal(latest.JobID, 'roll');
    const unknown = await c.cli(['job', 'allocs', 'nope']);
    assert.equal(unknown.code, 6, 'the not-found exit code');
    assert.match(unknown.stderr, /nope/);
    await assert.rejects(c.call('PUT', '/v1/job/crash/evaluate', { body: { JobID: 'crash', EvalOptions: { ForceReschedule: 'yes' } } }), /400 .*EvalOptions.ForceReschedule must be true or false/);
  });

  it('a problem the server finds is named at its line in the job file, in run, plan and validate', async () => {
    const file = write('ghost.hcl', `job "ghost" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "no-such-volume"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
`);
    for (const cmd of ['run', 'plan', 'validate']) {
      const res = await c.cli(['job', cmd, file]);
      assert.equal(res.code, cmd === 'plan' ? 255 : 2, `${cmd}: ${res.stdout}${res.stderr}`);
      assert.match(res.stderr, /ghost\.hcl:5:\d+: .*volume "no-such-volume" is not registered/, cmd);
    }
    assert.equal((await c.call('GET', '/v1/job/ghost', { allowError: true })).status, 404);
  });
});
