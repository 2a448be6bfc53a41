// A Nomad user's habits against a real dev agent, through the real berth
// binary: one-dash flags and NOMAD_* variables, the run/status aliases, the
// files `job init` and `volume init` write (run and created as written, the
// volume through the hostpath plugin, read from stdin), Nomad's API job JSON
// put to /v1/jobs, `job run -output`, `job validate`'s driver warning, a dispatched job whose
// task reads its payload file, a forced periodic launch, version, and shell
// completion scripts that their shells parse.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as api from '../../src/api/index.js';
import { AgentRun, berth, cleanEnv, freePort, killProcessesUnder, mountsUnder, ok, REPO, runProcess, until, type BerthResult } from '../support/agent-run.js';

let agent: AgentRun;
let work = '';

/** berth as a Nomad user runs it: NOMAD_ADDR without a scheme, NOMAD_TOKEN, in the work directory. */
function nomadUser(args: readonly string[], opts: { input?: string; env?: Record<string, string> } = {}): Promise<BerthResult> {
  const env = cleanEnv({ NOMAD_ADDR: agent.addr.replace(/^http:\/\//, ''), NOMAD_TOKEN: agent.token, ...opts.env });
  return berth(args, { env, cwd: work, timeoutMs: 120_000, ...(opts.input !== undefined ? { input: opts.input } : {}) });
}

/** The job (`job inspect -json`) and its allocations (`job status -json`, Nomad's list of one job's summary, allocations...). */
async function jobJson(id: string): Promise<{ job: api.Job; allocations: api.AllocationListStub[] }> {
  const job = JSON.parse(ok(await nomadUser(['job', 'inspect', '-json', id]), `job inspect ${id}`)) as api.Job;
  const [status] = JSON.parse(ok(await nomadUser(['job', 'status', '-json', id]), `job status ${id}`)) as Array<{ Summary: api.JobSummary; Allocations: api.AllocationListStub[] }>;
  assert.equal(status?.Summary.JobID, id);
  return { job, allocations: status?.Allocations ?? [] };
}

before(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'berth-habits-'));
  agent = await new AgentRun(['--dev', '--port', String(await freePort())]).start();
});

after(async () => {
  await agent?.stop('SIGINT');
  for (const m of mountsUnder(work).sort().reverse()) await runProcess('umount', ['-l', m], { env: cleanEnv() });
  killProcessesUnder(work);
  rmSync(work, { recursive: true, force: true });
});

describe("a Nomad user's habits, on a dev agent", { timeout: 600_000 }, () => {
  it('one-dash flags, NOMAD_* variables and a scheme-less address work; a bad address says where it came from', async () => {
    const listed = JSON.parse(ok(await nomadUser(['status', '-json']), 'status -json')) as unknown[];
    assert.ok(Array.isArray(listed));
    const viaFlag = await berth(['job', 'status', `-address=${agent.addr.replace(/^http:\/\//, '')}`, `-token=${agent.token}`, '-json'], { env: cleanEnv() });
    assert.equal(viaFlag.code, 0, viaFlag.stderr);
    const bad = await nomadUser(['job', 'status'], { env: { BERTH_ADDR: 'ftp://127.0.0.1:1' } });
    assert.equal(bad.code, 2);
    assert.equal(
      bad.stderr.trim(),
      'error: invalid agent address "ftp://127.0.0.1:1" (from BERTH_ADDR): the scheme must be http or https, not ftp; give http://host:port, https://host:port or host:port',
    );
    const unknown = await nomadUser(['job', 'run', '-frobnicate', '3', 'x.hcl']);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown option "-frobnicate" for "berth job run"; its options \(with one dash or two\): -detach, -check-index, /);
    assert.match(ok(await nomadUser(['version']), 'version'), /^Berth v\d+\.\d+\.\d+ \(Node\.js v20/);
  });

  it('job init writes files that run as written, in HCL, short HCL and Nomad JSON', async () => {
    assert.equal(ok(await nomadUser(['job', 'init']), 'job init').trim(), 'Example job file written to example.nomad.hcl');
    const again = await nomadUser(['job', 'init']);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /example\.nomad\.hcl already exists/);
    ok(await nomadUser(['job', 'init', '-short', 'short.hcl']), 'job init -short');
    ok(await nomadUser(['job', 'init', '-json']), 'job init -json');
    const run = ok(await nomadUser(['run', 'example.nomad.hcl']), 'run example.nomad.hcl');
    assert.match(run, /==> 1 allocation running/);
    // The JSON form is the same job: the agent keeps it as it is.
    ok(await nomadUser(['job', 'run', '-detach', 'example.nomad.json']), 'job run example.nomad.json');
    const { job, allocations } = await jobJson('example');
    assert.equal(job.Version, 0);
    assert.equal(allocations.filter((a) => a.ClientStatus === 'running').length, 1);
    const inspected = JSON.parse(ok(await nomadUser(['job', 'inspect', 'example']), 'job inspect')) as { Job: api.Job };
    assert.equal(inspected.Job.TaskGroups?.[0]?.Tasks?.[0]?.Env?.['GREETING'], 'hello from berth');
    // Nomad's -output: the registration a user pipes to curl, as `job inspect` prints the job.
    const output = JSON.parse(ok(await nomadUser(['job', 'run', '-output', 'example.nomad.hcl']), 'job run -output')) as { Job: api.Job };
    assert.equal(output.Job.ID, 'example');
    assert.equal(output.Job.TaskGroups?.[0]?.Tasks?.[0]?.Env?.['GREETING'], 'hello from berth');
    writeFileSync(path.join(work, 'inspected.json'), JSON.stringify(inspected));
    ok(await nomadUser(['job', 'validate', 'inspected.json']), 'job validate of job inspect output');
    const { readFileSync } = await import('node:fs');
    const piped = ok(await nomadUser(['job', 'validate', '-'], { input: readFileSync(path.join(work, 'short.hcl'), 'utf8') }), 'job validate -');
    assert.equal(piped.trim(), 'Job validation successful: <stdin> (job "example", 1 group)');
    ok(await nomadUser(['job', 'stop', '-purge', 'example']), 'job stop -purge');
  });

  it("takes Nomad's API job JSON on POST /v1/jobs and refuses what Berth lacks by name", async () => {
    const body = {
      Job: {
        ID: 'api-json',
        Type: 'batch',
        TaskGroups: [{ Name: 'g', RestartPolicy: { Attempts: 0, Mode: 'fail' }, Tasks: [{ Name: 't', Driver: 'raw_exec', Config: { command: '/bin/true' }, Resources: { CPU: 100, MemoryMB: 64, MemoryMaxMB: 0 } }] }],
      },
    };
    const post = (b: unknown): Promise<Response> =>
      fetch(`${agent.addr}/v1/jobs`, { method: 'PUT', headers: { 'x-nomad-token': agent.token, 'content-type': 'application/json' }, body: JSON.stringify(b) });
    const res = await post(body);
    assert.equal(res.status, 200, await res.clone().text());
    assert.ok(((await res.clone().json()) as api.JobRegisterResponse).EvalID);
    await until('the API job completes', async () => (await jobJson('api-json')).allocations.some((a) => a.ClientStatus === 'complete') || undefined);
    const refused = await post({ Job: { ...body.Job, ID: 'api-vault', TaskGroups: [{ ...body.Job.TaskGroups[0], Tasks: [{ ...body.Job.TaskGroups[0]!.Tasks[0], Vault: { Policies: ['x'] } }] }] } });
    assert.equal(refused.status, 400);
    assert.equal(await refused.text(), 'job is invalid: Job.TaskGroups[0].Tasks[0].Vault: Berth does not support Vault; remove "Vault"');
  });

  it("job validate warns when no node can run the job's driver, naming the nodes' drivers", async () => {
    writeFileSync(path.join(work, 'podman.hcl'), 'job "d" {\n  group "g" {\n    task "t" {\n      driver = "podman"\n      config {\n        image = "redis:7"\n      }\n    }\n  }\n}\n');
    const r = await nomadUser(['job', 'validate', 'podman.hcl']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /^Warning: no ready node can run driver "podman" \(the nodes' healthy drivers: [a-z_, ]*raw_exec[a-z_, ]*\); the job would not be placed$/m);
  });

  it('dispatches a parameterized job: the task reads its payload from local/, meta is checked', async () => {
    writeFileSync(
      path.join(work, 'echo.hcl'),
      `job "echo" {
  type = "batch"
  parameterized {
    payload       = "required"
    meta_required = ["who"]
  }
  group "g" {
    task "t" {
      driver = "raw_exec"
      dispatch_payload {
        file = "input/payload.txt"
      }
      config {
        command = "/bin/sh"
        args    = ["-c", "cat \\"$BERTH_TASK_DIR/input/payload.txt\\""]
      }
    }
  }
}
`,
    );
    assert.match(ok(await nomadUser(['job', 'run', 'echo.hcl']), 'run echo.hcl'), /Job "echo" is parameterized: launch it with `berth job dispatch echo`/);
    const missing = await nomadUser(['job', 'dispatch', 'echo'], { input: '' });
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /job "echo" requires a payload/);
    const noMeta = await nomadUser(['job', 'dispatch', 'echo', '-'], { input: 'x' });
    assert.match(noMeta.stderr, /missing required meta: who \(give -meta who=\.\.\.\)/);
    writeFileSync(path.join(work, 'payload.txt'), 'payload from a file\n');
    const out = ok(await nomadUser(['job', 'dispatch', '-meta', 'who=ops', 'echo', 'payload.txt']), 'job dispatch');
    const child = /^Dispatched Job ID = (echo\/dispatch-\d+-[0-9a-f]{8})$/m.exec(out)?.[1];
    assert.ok(child, out);
    const done = await until('the dispatched child completes', async () => (await jobJson(child)).allocations.find((a) => a.ClientStatus === 'complete') ?? undefined);
    assert.equal((await jobJson(child)).job.Meta?.['who'], 'ops');
    assert.equal(ok(await nomadUser(['alloc', 'logs', done.ID]), 'alloc logs'), 'payload from a file\n');
    const piped = ok(await nomadUser(['job', 'dispatch', '-meta', 'who=ci', '-id-prefix-template', 'ci', 'echo', '-'], { input: 'from stdin' }), 'job dispatch -');
    const second = /^Dispatched Job ID = (echo\/dispatch-ci-\d+-[0-9a-f]{8})$/m.exec(piped)?.[1] as string;
    const done2 = await until('the second child completes', async () => (await jobJson(second)).allocations.find((a) => a.ClientStatus === 'complete') ?? undefined);
    assert.equal(ok(await nomadUser(['alloc', 'logs', done2.ID]), 'alloc logs'), 'from stdin');
  });

  it('launches a periodic job by force; the child runs and the parent places nothing', async () => {
    writeFileSync(
      path.join(work, 'nightly.hcl'),
      'job "nightly" {\n  type = "batch"\n  periodic {\n    crons            = ["0 3 * * *"]\n    prohibit_overlap = true\n    time_zone        = "Europe/Berlin"\n  }\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/true"\n      }\n    }\n  }\n}\n',
    );
    assert.match(ok(await nomadUser(['job', 'run', 'nightly.hcl']), 'run nightly.hcl'), /Approximate next launch time: \d{4}-\d\d-\d\dT\d\d:00:00Z \(Europe\/Berlin\)/);
    const forced = ok(await nomadUser(['job', 'periodic', 'force', 'nightly']), 'periodic force');
    const child = /launched "(nightly\/periodic-\d+)"/.exec(forced)?.[1] as string;
    assert.ok(child, forced);
    await until('the periodic child completes', async () => (await jobJson(child)).allocations.some((a) => a.ClientStatus === 'complete') || undefined);
    const parent = await jobJson('nightly');
    assert.equal(parent.job.Status, 'running');
    assert.deepEqual(parent.allocations, []);
  });

  it('volume init writes a volume that volume create takes from stdin, with the hostpath plugin', async () => {
    ok(await nomadUser(['job', 'run', '-detach', path.join(REPO, 'examples', 'hostpath-plugin.hcl')]), 'hostpath plugin job');
    await until('the hostpath plugin is healthy', async () => {
      const r = await nomadUser(['plugin', 'status', '-json', 'hostpath']);
      return r.code === 0 && (JSON.parse(r.stdout) as { NodesHealthy?: number }).NodesHealthy === 1 ? true : undefined;
    });
    ok(await nomadUser(['volume', 'init']), 'volume init');
    ok(await nomadUser(['volume', 'init', '-json']), 'volume init -json');
    const { readFileSync } = await import('node:fs');
    const created = ok(await nomadUser(['volume', 'create', '-'], { input: readFileSync(path.join(work, 'volume.hcl'), 'utf8') }), 'volume create -');
    assert.match(created, /^==> Volume "example-volume" created \(external ID \S+, plugin hostpath\)$/m);
    const vol = JSON.parse(ok(await nomadUser(['volume', 'status', '-json', 'example-volume']), 'volume status')) as api.CSIVolume;
    // The context the file gave, with the plugin's own.
    assert.equal(vol.Context?.['owner'], 'example');
    assert.ok(Object.keys(vol.Context ?? {}).length > 1, JSON.stringify(vol.Context));
    assert.equal(vol.RequestedCapabilities?.length, 2);
    const json = readFileSync(path.join(work, 'volume.json'), 'utf8').replaceAll('example-volume', 'example-volume-json');
    ok(await nomadUser(['volume', 'create', '-'], { input: json }), 'volume create - (JSON)');
  });

  it('prints completion scripts that bash, zsh and fish parse, and that complete commands', async () => {
    for (const shell of ['bash', 'zsh', 'fish']) {
      const script = ok(await nomadUser(['completion', shell]), `completion ${shell}`);
      const file = path.join(work, `completion.${shell}`);
      writeFileSync(file, script);
      const parsed = await runProcess(shell, ['-n', file], { env: cleanEnv() });
      assert.equal(parsed.code, 0, `${shell} -n: ${parsed.stderr}`);
    }
    const bash = await runProcess('bash', ['-c', `source ${path.join(work, 'completion.bash')}; COMP_WORDS=(berth job di); COMP_CWORD=2; _berth_complete; echo "\${COMPREPLY[@]}"`], { env: cleanEnv() });
    assert.equal(bash.stdout.trim(), 'dispatch');
    const fish = await runProcess('fish', ['-c', `source ${path.join(work, 'completion.fish')}; complete -C "berth volume cr"`], { env: cleanEnv() });
    assert.equal(fish.stdout.trim(), 'create');
  });
});
