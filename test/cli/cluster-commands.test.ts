// The berth CLI driven as the real binary against a real Server: job run with
// its deploy monitor, job/alloc/node/plugin/volume status as tables and JSON,
// short ID prefixes, file errors that submit nothing, secrets never printed,
// one clear line and a meaningful exit code for unreachable agents and bad
// tokens, --help with examples, the event stream, and /v1/metrics.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as api from '../../src/api/index.js';
import type * as Api from '../../src/api/index.js';
import type { Allocation, Node } from '../../src/structs/index.js';
import { json, startBerth } from './_berth.js';
import { reportAllocations, startCluster, TOKENS, type Cluster } from './_cluster.js';
import { eventually } from '../support/eventually.js';
import { registration } from '../support/nomad-jobs.js';

const SECRET = 'vol-secret-value-7f3a9c';
const FLAG = 'password=mount-flag-secret-41b2';

let c: Cluster;
let files: string;
let node: Node;

const write = (name: string, text: string): string => {
  const path = join(files, name);
  writeFileSync(path, text);
  return path;
};

const jobHcl = (id: string, extra = '') => `job "${id}" {
  type = "batch"
  group "main" {
${extra}
    task "work" {
      driver = "raw_exec"
      config {
        command = "/bin/true"
      }
    }
  }
}
`;

const volumeHcl = `id          = "shared"
name        = "shared"
type        = "csi"
plugin_id   = "hp"
external_id = "hp-vol-1"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

mount_options {
  fs_type     = "ext4"
  mount_flags = ["${FLAG}"]
}

secrets {
  password = "${SECRET}"
}
`;

/** Asserts a failure printed exactly one line on stderr, without a stack trace. */
function oneLine(stderr: string): string {
  const lines = stderr.trim().split('\n');
  assert.equal(lines.length, 1, `expected one line on stderr, got:\n${stderr}`);
  assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
  return lines[0] as string;
}

before(async () => {
  c = await startCluster();
  files = mkdtempSync(join(tmpdir(), 'berth-cli-files-'));
});
after(async () => {
  await c.close();
  rmSync(files, { recursive: true, force: true });
});

describe('berth CLI against a real server', () => {
  it('--help shows examples and exit codes on every command', async () => {
    const top = await c.cli(['--help']);
    assert.equal(top.code, 0);
    assert.match(top.stdout, /Examples:/);
    for (const cmd of [['job', 'run'], ['job', 'status'], ['volume', 'register'], ['volume', 'create'], ['job', 'dispatch'], ['volume', 'snapshot', 'list'], ['plugin', 'status'], ['node', 'status'], ['event', 'stream'], ['alloc', 'status']]) {
      const res = await c.cli([...cmd, '--help']);
      assert.equal(res.code, 0, cmd.join(' '));
      assert.match(res.stdout, /Examples:\n\s+\$ berth /, cmd.join(' '));
      assert.match(res.stdout, /Exit codes:/, cmd.join(' '));
      // Every example is a line a shell runs: berth itself, or a pipeline into it (never `berth cat ...`).
      for (const example of res.stdout.split('\n').filter((l) => l.trim().startsWith('$ '))) {
        assert.match(example, /^\s+\$ (berth (?!berth |cat |echo )|\S.*\| berth )/, `${cmd.join(' ')}: ${example}`);
      }
    }
  });

  it('an unreachable agent and a bad token each give one line and their own exit code', async () => {
    const down = await c.cli(['job', 'status'], { env: { BERTH_ADDR: 'http://127.0.0.1:1' } });
    assert.equal(down.code, 3);
    assert.match(oneLine(down.stderr), /^error: cannot reach the Berth agent at http:\/\/127\.0\.0\.1:1 .*BERTH_ADDR/);

    const bad = await c.cli(['node', 'status'], { token: 'not-a-known-token-123' });
    assert.equal(bad.code, 5);
    assert.match(oneLine(bad.stderr), /^error: the agent refused the token/);
    assert.doesNotMatch(bad.stderr, /not-a-known-token-123/, 'the token is never printed');

    const none = await c.cli(['node', 'status'], { token: null });
    assert.equal(none.code, 5);

    const readOnly = await c.cli(['job', 'stop', 'anything'], { token: TOKENS.readOnly });
    assert.equal(readOnly.code, 6, 'the job lookup fails first: a read-only token may read');
    const forbidden = await c.cli(['volume', 'deregister', 'x'], { token: TOKENS.readOnly });
    assert.equal(forbidden.code, 6);

    const flagged = await c.cli(['job', 'status', '--address', c.url, '--token', 'wrong-token-via-flag-99']);
    assert.equal(flagged.code, 5);
    assert.doesNotMatch(flagged.stderr + flagged.stdout, /wrong-token-via-flag-99/);
  });

  it('malformed HCL and JSON and schema violations give file:line:col and submit nothing', async () => {
    const badHcl = write('bad.hcl', 'job "bad" {\n  group "g" {\n    count = \n  }\n}\n');
    const res = await c.cli(['job', 'run', badHcl]);
    assert.equal(res.code, 2);
    assert.match(oneLine(res.stderr), new RegExp(`^error: ${badHcl.replace(/[/.]/g, '\\$&')}:3:\\d+: malformed HCL`));

    const zod = write('zod.hcl', jobHcl('zod', '    count = -3'));
    const z = await c.cli(['job', 'run', zod]);
    assert.equal(z.code, 2);
    assert.match(oneLine(z.stderr), /zod\.hcl:4:5: count: must be at least 0/);

    const badJson = write('bad.json', '{\n  "id": "bad",\n  "groups": [\n}');
    const j = await c.cli(['job', 'validate', badJson]);
    assert.equal(j.code, 2);
    assert.match(oneLine(j.stderr), /bad\.json:4:1: malformed JSON/);

    const badVolume = write('badvol.hcl', volumeHcl.replace('"single-node-writer"', '"one-writer"'));
    const v = await c.cli(['volume', 'register', badVolume]);
    assert.equal(v.code, 2);
    assert.match(oneLine(v.stderr), /badvol\.hcl:8:3: capability\.access_mode: must be one of/);
    assert.doesNotMatch(v.stderr, new RegExp(SECRET));

    const missing = await c.cli(['job', 'run', join(files, 'nope.hcl')]);
    assert.equal(missing.code, 2);
    assert.match(oneLine(missing.stderr), /no such file/);

    const jobs = await c.call<api.JobListStub[]>('GET', '/v1/jobs');
    assert.deepEqual(jobs.body, [], 'the server saw no job');
    const vols = await c.call<unknown[]>('GET', '/v1/volumes?type=csi');
    assert.deepEqual(vols.body, [], 'the server saw no volume');
  });

  it('job run with no node to place on shows the blocked evaluation and why, and fails', async () => {
    const res = await c.cli(['job', 'run', write('blocked.hcl', jobHcl('blocked'))]);
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stdout, /Monitoring evaluation "[0-9a-f-]{8}"/);
    assert.match(res.stdout, /Task group "main" \(failed to place 1 allocation\)/);
    assert.match(res.stdout, /finished with status "blocked"/);
    assert.match(res.stderr, /^error: placement failed/m);
    await c.call('DELETE', '/v1/job/blocked?purge=true');
  });

  it('registers a node and a volume; volume status never prints secrets or mount flags', async () => {
    node = await c.registerNode('cli-node-1', { nodePlugin: 'hp' });
    const reg = await c.cli(['volume', 'register', write('vol.hcl', volumeHcl)]);
    assert.equal(reg.code, 0, reg.stderr);
    assert.match(reg.stdout, /Volume "shared" registered/);

    const status = await c.cli(['volume', 'status', 'sha']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^ID\s+shared$/m);
    assert.match(status.stdout, /^Secrets\s+password \(hidden\)$/m);
    assert.match(status.stdout, /^Mount Flags\s+\[REDACTED\]$/m);
    const asJson = await c.cli(['volume', 'status', 'shared', '--json']);
    const doc = json<api.CSIVolume>(asJson);
    assert.deepEqual(doc.BerthSecretNames, ['password']);
    assert.equal(doc.Secrets, null);
    const list = await c.cli(['volume', 'status']);
    assert.match(list.stdout, /^ID\s+Name\s+Plugin ID\s+Schedulable\s+Claims\s+Access Mode$/m);
    // Access Mode is that of the volume's current claims, as Nomad's: none yet.
    assert.match(list.stdout, /^shared\s+shared\s+hp\s+true\s+0\s+-$/m);
    for (const out of [reg, status, asJson, list]) {
      assert.doesNotMatch(out.stdout + out.stderr, new RegExp(`${SECRET}|${FLAG}`));
    }
  });

  it('job run follows the evaluation and the allocation until it runs; job, alloc and node status show it', async () => {
    const file = write(
      'app.hcl',
      jobHcl(
        'app',
        `    volume "data" {
      type   = "csi"
      source = "shared"
    }`,
      ).replace('        command = "/bin/true"\n      }', '        command = "/bin/true"\n      }\n      volume_mount {\n        volume      = "data"\n        destination = "/data"\n      }'),
    );
    const run = startBerth(['job', 'run', file], { env: { BERTH_ADDR: c.url, BERTH_TOKEN: TOKENS.management, NO_COLOR: '1' } });
    // Act as the node agent: once the allocation is placed, report it running.
    const reported: Allocation[] = await eventually('the allocation to be placed (then reported running)', async () => {
      const r = await reportAllocations(c, node.id, 'running', (a) => a.jobId === 'app');
      return r.length ? r : undefined;
    }, { intervalMs: 50 });
    assert.equal(reported.length, 1);
    const res = await run.exited;
    assert.equal(res.code, 0, res.stdout + res.stderr);
    const allocId = reported[0]!.id;
    assert.match(res.stdout, new RegExp(`Allocation "${allocId.slice(0, 8)}" created: node "${node.id.slice(0, 8)}", group "main"`));
    assert.match(res.stdout, /Evaluation status changed: "pending" -> "complete"/);
    assert.match(res.stdout, new RegExp(`Allocation "${allocId.slice(0, 8)}" status changed: "pending" -> "running"`));
    assert.match(res.stdout, /==> 1 allocation running/);

    const status = await c.cli(['job', 'status', 'ap']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^ID\s+= app$/m);
    assert.match(status.stdout, /^Task Group\s+Queued\s+Starting\s+Running\s+Failed\s+Complete\s+Lost$/m);
    assert.match(status.stdout, /^main\s+0\s+0\s+1\s+0\s+0\s+0$/m);
    assert.match(status.stdout, new RegExp(`^${allocId.slice(0, 8)}\\s+${node.id.slice(0, 8)}\\s+main\\s+\\d+\\s+run\\s+running`, 'm'));
    assert.match(status.stdout, /^Latest Evaluations$/m);
    // Nomad's `job status -evals`: every evaluation of the job under "Evaluations"; -verbose with full IDs.
    const evals = json<Array<{ Evaluations: api.Evaluation[] }>>(await c.cli(['job', 'status', '--json', 'app']))[0]?.Evaluations ?? [];
    assert.ok(evals.length >= 1);
    const withEvals = await c.cli(['job', 'status', '-evals', 'app']);
    assert.equal(withEvals.code, 0, withEvals.stderr);
    assert.match(withEvals.stdout, /^Evaluations$/m);
    assert.match(withEvals.stdout, /^ID\s+Priority\s+Triggered By\s+Status\s+Placement Failures$/m);
    for (const e of evals) assert.match(withEvals.stdout, new RegExp(`^${e.ID.slice(0, 8)}\\s+50\\s+${e.TriggeredBy}\\s+${e.Status}\\s+false$`, 'm'));
    const verboseStatus = await c.cli(['job', 'status', '-verbose', 'app']);
    for (const e of evals) assert.match(verboseStatus.stdout, new RegExp(`^${e.ID}\\s+50\\s`, 'm'));

    const alloc = await c.cli(['alloc', 'status', allocId.slice(0, 6)]);
    assert.equal(alloc.code, 0, alloc.stderr);
    assert.match(alloc.stdout, new RegExp(`^ID\\s+${allocId}$`, 'm'));
    assert.match(alloc.stdout, /^Client Status\s+running$/m);
    // This node is played by the test and has no HTTP address: the status prints, with why usage is missing.
    assert.match(alloc.stdout, /^usage unavailable: node cli-node-1 \(\w{8}\) reports no HTTP address; is its agent running\?$/m);
    // Nomad's `alloc status -json`: the allocation as GET /v1/allocation/:id answers it.
    const allocJson = json<api.Allocation>(await c.cli(['alloc', 'status', allocId, '--json']));
    assert.equal(allocJson.ID, allocId);
    assert.equal(allocJson.ClientStatus, 'running');
    // Nomad's -t: the same document through a Go template.
    const templated = await c.cli(['alloc', 'status', '-t', '{{.ID}} {{.ClientStatus}} {{.TaskGroup}}', allocId]);
    assert.equal(templated.code, 0, templated.stderr);
    assert.equal(templated.stdout.trim(), `${allocId} running main`);

    // Nomad's layout: ID, Node Pool, DC, Name, Class, Drain, Eligibility, Status; an empty cell is <none>.
    const nodes = await c.cli(['node', 'status']);
    assert.equal(nodes.code, 0, nodes.stderr);
    assert.match(nodes.stdout, /^ID\s+Node Pool\s+DC\s+Name\s+Class\s+Drain\s+Eligibility\s+Status$/m);
    assert.match(nodes.stdout, new RegExp(`^${node.id.slice(0, 8)}\\s+default\\s+dc1\\s+cli-node-1\\s+<none>\\s+false\\s+eligible\\s+ready$`, 'm'));
    // -verbose: full IDs, the address and version, and (Berth's) whether the leader can call the node:
    // the test's node heartbeats over HTTP but opens no node connection.
    const verbose = await c.cli(['node', 'status', '-verbose']);
    assert.match(verbose.stdout, new RegExp(`^${node.id}\\s+default\\s+dc1\\s+cli-node-1\\s+<none>\\s+<none>\\s+<none>\\s+false\\s+eligible\\s+ready\\s+not connected$`, 'm'));
    assert.equal((await c.cli(['node', 'status', '-quiet'])).stdout, `${node.id}\n`);
    assert.match((await c.cli(['node', 'status', '-filter', 'Status == "down"'])).stdout, /^No nodes registered$/m);
    const badFilter = await c.cli(['node', 'status', '-filter', 'Status ==']);
    assert.notEqual(badFilter.code, 0);
    assert.match(badFilter.stderr, /filter/);

    const one = await c.cli(['node', 'status', node.id.slice(0, 5)]);
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, new RegExp(`^ID\\s+= ${node.id}$`, 'm'));
    assert.match(one.stdout, /^Drain\s+= false$/m);
    assert.match(one.stdout, /^CSI Drivers\s+= hp$/m);
    assert.match(one.stdout, /^Driver Status\s+= raw_exec$/m);
    assert.match(one.stdout, /^Leader Link\s+= not connected$/m);
    assert.match(one.stdout, /^Node Events\n.*\n.*Cluster\s+Node registered$/m);
    assert.match(one.stdout, /^Allocated Resources\nCPU\s+Memory\s+Disk\s+Alloc Count\n\d+\/4000 MHz\s+\S+ \w+\/4\.0 GiB\s+0 B\/0 B\s+1$/m);
    assert.match(one.stdout, new RegExp(`^${allocId.slice(0, 8)}\\s+${node.id.slice(0, 8)}\\s+main\\s+\\d+\\s+run\\s+running`, 'm'));
    const detailed = await c.cli(['node', 'status', '-verbose', node.id]);
    assert.match(detailed.stdout, /^hp\s+node\s+hostpath\.csi\.berth\.dev\s+1\.0\.0\s+true/m);
    assert.match(detailed.stdout, /^raw_exec\s+true\s+true\s+<none>\s+\S+$/m);
    const ambiguous = await c.cli(['node', 'status', 'x']);
    assert.match(ambiguous.stderr, /at least two characters/);
    const nodeJson = json<Api.Node>(await c.cli(['node', 'status', node.id, '--json']));
    assert.equal(nodeJson.ID, node.id, "-json prints Nomad's Node");
    assert.equal(nodeJson.Name, 'cli-node-1');
  });

  it('plugin status shows healthy/expected controllers and nodes, provider and version', async () => {
    const list = await c.cli(['plugin', 'status']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^ID\s+Provider\s+Controllers Healthy\/Expected\s+Nodes Healthy\/Expected$/m);
    assert.match(list.stdout, /^hp\s+hostpath\.csi\.berth\.dev\s+0\/0\s+1\/\d+$/m);
    const one = await c.cli(['plugin', 'status', 'h']);
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /^Provider\s+hostpath\.csi\.berth\.dev$/m);
    assert.match(one.stdout, /^Version\s+1\.0\.0$/m);
    assert.match(one.stdout, /^Nodes Healthy\s+1$/m);
    const doc = json<api.CSIPlugin>(await c.cli(['plugin', 'status', 'hp', '--json']));
    assert.deepEqual([doc.ID, doc.NodesHealthy], ['hp', 1]);
  });

  it('prefixes: unique resolves, ambiguous lists the matches, unknown says so', async () => {
    for (const id of ['alpha-one', 'alpha-two']) {
      const res = await c.cli(['job', 'run', '--detach', write(`${id}.hcl`, jobHcl(id))]);
      assert.equal(res.code, 0, res.stderr);
      assert.match(res.stdout, /^Evaluation ID: [0-9a-f-]{36}$/m);
    }
    const ambiguous = await c.cli(['job', 'status', 'alpha']);
    assert.equal(ambiguous.code, 2);
    assert.match(ambiguous.stderr, /^error: prefix "alpha" matches 2 jobs; give more of the ID\n\s+alpha-one\n\s+alpha-two\n$/);
    const unique = await c.cli(['job', 'status', 'alpha-t']);
    assert.equal(unique.code, 0, unique.stderr);
    assert.match(unique.stdout, /^ID\s+= alpha-two$/m);
    const unknown = await c.cli(['alloc', 'status', 'ffffffff']);
    assert.equal(unknown.code, 6);
    assert.equal(oneLine(unknown.stderr), 'error: no allocation with ID or prefix "ffffffff"');
    const unknownJson = await c.cli(['volume', 'status', 'nothing-here', '--json']);
    assert.equal(unknownJson.code, 6);
    assert.equal(json<{ error: { code: string } }>(unknownJson).error.code, 'NOT_FOUND');
    // Nomad's `job status -json`: each job's summary, allocations, latest deployment and evaluations.
    const jobs = json<Array<{ Summary: api.JobSummary }>>(await c.cli(['job', 'status', '--json']));
    assert.deepEqual(jobs.map((j) => j.Summary.JobID).sort(), ['alpha-one', 'alpha-two', 'app']);
    const template = await c.cli(['job', 'status', '-t', '{{range .}}{{.Summary.JobID}} {{end}}']);
    assert.equal(template.stdout.trim(), 'alpha-one alpha-two app');
  });

  it('/v1/metrics, readable with a read-only token, has plugin health, claims, allocations and nodes', async () => {
    const [alloc] = (await c.call<api.AllocationListStub[]>('GET', '/v1/job/app/allocations')).body;
    await c.call('POST', '/v1/volume/csi/shared/claim', { token: TOKENS.node, body: { allocId: alloc!.ID, mode: 'write' } });
    const res = await fetch(`${c.url}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${TOKENS.readOnly}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await res.text();
    assert.match(text, /^berth_plugin_nodes_healthy\{plugin="hp"\} 1$/m);
    assert.match(text, /^berth_plugin_controllers_healthy\{plugin="hp"\} 0$/m);
    assert.match(text, /^berth_plugin_nodes_expected\{plugin="hp"\} \d+$/m);
    assert.match(text, /^berth_volume_claims\{namespace="default",volume="shared",mode="write",state="taken"\} 1$/m);
    assert.match(text, /^berth_allocations\{client_status="running"\} 1$/m);
    assert.match(text, /^berth_nodes\{status="ready"\} 1$/m);
    assert.doesNotMatch(text, new RegExp(SECRET));
    const anonymous = await fetch(`${c.url}/v1/metrics?format=prometheus`);
    assert.equal(anonymous.status, 401);

    const shown = await c.cli(['volume', 'status', 'shared']);
    assert.match(shown.stdout, new RegExp(`^${alloc!.ID.slice(0, 8)}\\s+${node.id.slice(0, 8)}\\s+write\\s+single-node-writer\\s+taken`, 'm'));
  });

  it('event stream prints changes as they happen and stops cleanly on SIGINT', async () => {
    const stream = startBerth(['event', 'stream', '--topic', 'Job', '--json'], { env: { BERTH_ADDR: c.url, BERTH_TOKEN: TOKENS.management } });
    // The stream starts at "now": keep changing until a line shows up.
    let i = 0;
    await eventually('a job event on the stream', async () => {
      if (stream.stdout.includes('"Topic":"Job"')) return true;
      await c.call('PUT', '/v1/jobs', { body: registration({ id: `ev-${i++}`, type: 'batch', groups: [{ name: 'g', count: 0, tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }] }) });
      return false;
    }, { intervalMs: 100 });
    stream.child.kill('SIGINT');
    const res = await stream.exited;
    assert.equal(res.code, 0, res.stderr);
    // One frame a line, as the API streams them (the heartbeats left out).
    const first = JSON.parse(res.stdout.trim().split('\n')[0] as string) as { Index: number; Events: Array<{ Topic: string; Type: string }> };
    assert.equal(first.Events[0]?.Topic, 'Job');
    assert.equal(first.Events[0]?.Type, 'JobRegistered');
  });

  it('event stream --index 0 --until-now prints the history up to now and ends by itself', async () => {
    await c.call('PUT', '/v1/jobs', { body: registration({ id: 'history-1', type: 'batch', groups: [{ name: 'g', count: 0, tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }] }) });
    const jobs = await c.call<api.JobListStub[]>('GET', '/v1/jobs');
    const ids = jobs.body.map((j) => j.ID);
    assert.ok(ids.includes('history-1'));
    const res = await c.cli(['event', 'stream', '--topic', 'Job', '--index', '0', '--until-now', '--json']);
    assert.equal(res.code, 0, res.stderr);
    const keys = res.stdout.split('\n').filter(Boolean).flatMap((l) => (JSON.parse(l) as { Events: Array<{ Key: string }> }).Events.map((e) => e.Key));
    for (const id of ids) assert.ok(keys.includes(id), `no event of job ${id} in:\n${res.stdout}`);
    // For people: a line per change.
    const table = await c.cli(['event', 'stream', '--topic', 'Job:history-1', '--index', '0', '--until-now']);
    assert.match(table.stdout, /^\s*\d+\s+Job\s+JobRegistered\s+default\/history-1$/m);
    const bad = await c.cli(['event', 'stream', '--until-now', '--index', 'x']);
    assert.equal(bad.code, 2);
  });

  it('job stop stops the job; --purge forgets it', async () => {
    const stop = await c.cli(['job', 'stop', 'app']);
    assert.equal(stop.code, 0, stop.stderr);
    assert.match(stop.stdout, /==> Job "app" stopped/);
    const status = await c.cli(['job', 'status', 'app']);
    assert.match(status.stdout, /^Status\s+= dead \(stopped\)$/m);
    const purge = await c.cli(['job', 'stop', '--purge', 'alpha-one', '--json']);
    assert.equal(purge.code, 0, purge.stderr);
    assert.equal(json<{ purged: boolean }>(purge).purged, true);
    assert.equal((await c.call('GET', '/v1/job/alpha-one', { allowError: true })).status, 404);
  });
});
