// Nomad-style job files (test/nomad-corpus/) run through a real dev agent and
// the real CLI, each checked by what a user would observe: the environment a
// raw_exec task writes into its allocation directory, run-time `${...}` in
// args, env and a volume_mount destination, the lifecycle order, the kill
// signal a stopped task receives, max_run_duration, the hostpath plugin
// written as Nomad's demos write it, and the blocks Berth refuses by name at
// their line.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GO_ZERO_TIME, type Allocation, type AllocationListStub, type TaskEvent, type TaskState } from '../../src/api/index.js';
import { killProcessesUnder } from '../support/agent-run.js';
import { until } from '../support/runtime-cluster.js';
import { REPO, startAgent, tempDir, type AgentUnderTest } from './_agent.js';

const CORPUS = path.join(REPO, 'test', 'nomad-corpus');

describe('Nomad-style job files on a dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;

  before(async () => {
    dir = await tempDir('bnr-');
    const config = path.join(dir, 'agent.hcl');
    writeFileSync(config, 'client {\n  node_class = "fast"\n  meta {\n    rack = "r7"\n  }\n}\n');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0', '--config', config]).ready(true);
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    killProcessesUnder(dir);
    rmSync(dir, { recursive: true, force: true });
  });

  /** `berth job run --detach` of a corpus file (or of `text` written under the test's dir); fails on a non-zero exit. */
  async function run(file: string, text?: string): Promise<void> {
    let target = path.join(CORPUS, file);
    if (text !== undefined) {
      target = path.join(dir, file);
      writeFileSync(target, text);
    }
    const r = await agent.cli(['job', 'run', '--detach', target]);
    assert.equal(r.code, 0, `job run ${file}: ${r.stderr}${r.stdout}`);
  }

  async function allocOf(job: string, want: (a: Allocation) => boolean, what: string, ms = 90_000): Promise<Allocation> {
    return until(what, async () => {
      const list = await agent.get<AllocationListStub[]>(`/v1/job/${job}/allocations`);
      for (const a of list) {
        const full = await agent.get<Allocation>(`/v1/allocation/${a.ID}`);
        if (want(full)) return full;
      }
      return undefined;
    }, ms);
  }

  /** The allocation's shared directory on the host (`NOMAD_ALLOC_DIR` of a raw_exec task). */
  const sharedDir = (allocId: string): string => path.join(dir, 'a', 'client', 'alloc', allocId, 'alloc');
  const task = (a: Allocation, name: string): TaskState => {
    const t = a.TaskStates?.[name];
    assert.ok(t, `no task state for ${name}: ${JSON.stringify(a.TaskStates)}`);
    return t;
  };
  const events = (t: TaskState): TaskEvent[] => t.Events ?? [];
  /** A task state's time (RFC 3339) in milliseconds; fails on Go's zero time. */
  const ms = (t: string, what: string): number => {
    assert.notEqual(t, GO_ZERO_TIME, `${what} is set`);
    return Date.parse(t);
  };

  it('gives a task Nomad\'s environment and interpolates its env and args at run time', async () => {
    await run('env.hcl');
    const alloc = await allocOf('envdump', (a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed', 'the env dump to finish');
    assert.equal(alloc.ClientStatus, 'complete', JSON.stringify(alloc.TaskStates));
    const env = Object.fromEntries(
      readFileSync(path.join(sharedDir(alloc.ID), 'env.txt'), 'utf8')
        .split('\n')
        .filter((l) => l.includes('='))
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
    const nodes = await agent.get<Array<{ ID: string; Name: string; Datacenter: string }>>('/v1/nodes');
    const found = nodes.find((n) => n.ID === alloc.NodeID);
    const node = found && { id: found.ID, name: found.Name, datacenter: found.Datacenter };
    assert.ok(node);
    const expected: Record<string, string> = {
      NOMAD_ALLOC_ID: alloc.ID,
      NOMAD_SHORT_ALLOC_ID: alloc.ID.slice(0, 8),
      NOMAD_ALLOC_NAME: 'envdump.g[0]',
      NOMAD_ALLOC_INDEX: '0',
      NOMAD_ALLOC_DIR: sharedDir(alloc.ID),
      NOMAD_TASK_DIR: path.join(dir, 'a', 'client', 'alloc', alloc.ID, 'dump', 'local'),
      NOMAD_SECRETS_DIR: path.join(dir, 'a', 'client', 'alloc', alloc.ID, 'dump', 'secrets'),
      NOMAD_JOB_ID: 'envdump',
      NOMAD_JOB_NAME: 'envdump',
      NOMAD_GROUP_NAME: 'g',
      NOMAD_TASK_NAME: 'dump',
      NOMAD_DC: node.datacenter,
      NOMAD_REGION: 'global',
      NOMAD_NAMESPACE: 'default',
      NOMAD_CPU_LIMIT: '120',
      NOMAD_MEMORY_LIMIT: '64',
      NOMAD_NODE_ID: node.id,
      NOMAD_NODE_NAME: node.name,
      NOMAD_META_team: 'storage',
      NOMAD_META_TEAM: 'storage',
      NOMAD_META_tier: 'group',
      NOMAD_META_build: 'b42',
      BERTH_ALLOC_ID: alloc.ID,
      BERTH_NODE_ID: node.id,
      DATA_DIR: `${sharedDir(alloc.ID)}/data`,
      WHERE: `${node.name}@${node.datacenter}`,
    };
    for (const [k, v] of Object.entries(expected)) assert.equal(env[k], v, `${k} in the task's environment`);
    const args = readFileSync(path.join(sharedDir(alloc.ID), 'args.txt'), 'utf8').trimEnd().split('\n');
    assert.deepEqual(args, ['envdump', node.id, 'linux', 'r7', 'fast', 'dump', '${NOMAD_PORT_http}']);
    const unresolved = events(task(alloc, 'dump')).find((e) => e.Type === 'Interpolation Unresolved');
    assert.match(unresolved?.Message ?? '', /\$\{NOMAD_PORT_http\}/);
  });

  it('makes a group of a task written directly under the job (JSON), named after the task', async () => {
    await run('solo.json');
    const alloc = await allocOf('solo', (a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed', 'the solo task to finish');
    assert.equal(alloc.TaskGroup, 'only');
    assert.equal(readFileSync(path.join(sharedDir(alloc.ID), 'who.txt'), 'utf8').trim(), 'only/only/ops');
  });

  it('runs lifecycle tasks in order: prestart to completion, then main with its sidecar, poststart, then poststop', async () => {
    await run('lifecycle.hcl');
    const alloc = await allocOf('order', (a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed', 'the lifecycle job to finish');
    assert.equal(alloc.ClientStatus, 'complete', alloc.ClientDescription);
    const order = readFileSync(path.join(sharedDir(alloc.ID), 'order.txt'), 'utf8').trim().split('\n');
    assert.ok(order.indexOf('init') >= 0 && order.indexOf('init') < order.indexOf('main'), order.join(','));
    assert.equal(order.at(-1), 'cleanup', order.join(','));
    assert.ok(order.includes('side'), order.join(','));
    assert.equal(readFileSync(path.join(sharedDir(alloc.ID), 'post.txt'), 'utf8').trim(), 'post');
    const [init, side, main, post, cleanup] = ['init', 'side', 'main', 'post', 'cleanup'].map((n) => task(alloc, n));
    assert.ok(ms(init!.FinishedAt, 'init finished') <= ms(main!.StartedAt, 'main started'), 'main started after init completed');
    assert.ok(ms(post!.StartedAt, 'post started') >= ms(main!.StartedAt, 'main started'), 'poststart after main started');
    assert.ok(ms(side!.FinishedAt, 'side finished') >= ms(main!.FinishedAt, 'main finished'), 'the sidecar stopped once main had');
    assert.ok(ms(cleanup!.StartedAt, 'cleanup started') >= ms(main!.FinishedAt, 'main finished'), 'poststop after main stopped');
    assert.ok(events(main!).some((e) => e.Type === 'Lifecycle Waiting'), 'main said it waited for init');
    for (const t of [init, main, post, cleanup]) assert.equal(t!.Failed, false);
  });

  it('does not restart a prestart task that succeeded in a service job, and runs poststop when the job is stopped', async () => {
    await run('lifecycle-service.json');
    const running = await allocOf('svc-order', (a) => a.TaskStates?.['main']?.State === 'running', 'main to run');
    assert.equal(task(running, 'init').State, 'dead');
    assert.equal(task(running, 'init').Restarts, 0);
    assert.equal(task(running, 'cleanup').State, 'pending');
    const stop = await agent.cli(['job', 'stop', 'svc-order']);
    assert.equal(stop.code, 0, stop.stderr);
    const done = await allocOf('svc-order', (a) => ['complete', 'failed'].includes(a.ClientStatus) && a.TaskStates?.['cleanup']?.State === 'dead', 'the stopped allocation to finish');
    assert.deepEqual(readFileSync(path.join(sharedDir(done.ID), 'order.txt'), 'utf8').trim().split('\n'), ['init', 'main', 'cleanup']);
  });

  it('stops a task with its kill_signal after its shutdown_delay', async () => {
    await run('signals.hcl');
    const alloc = await allocOf('signals', (a) => a.TaskStates?.['trap']?.State === 'running', 'the trap task to run');
    await until('the task to have set its traps', () => existsSync(path.join(sharedDir(alloc.ID), 'ready.txt')));
    assert.equal((await agent.cli(['job', 'stop', 'signals'])).code, 0);
    const done = await allocOf('signals', (a) => a.TaskStates?.['trap']?.State === 'dead', 'the trap task to stop');
    assert.equal(readFileSync(path.join(sharedDir(alloc.ID), 'signal.txt'), 'utf8').trim(), 'INT');
    const types = events(task(done, 'trap')).map((e) => e.Type);
    assert.ok(types.indexOf('Waiting for shutdown delay') > types.indexOf('Killing'), types.join(','));
  });

  it('kills a task that runs past its max_run_duration and does not restart it', async () => {
    await run('max-run.hcl');
    const alloc = await allocOf('overrun', (a) => a.ClientStatus === 'failed' || a.ClientStatus === 'complete', 'the overrunning task to end');
    assert.equal(alloc.ClientStatus, 'failed');
    const t = task(alloc, 'sleepy');
    assert.equal(t.Restarts, 0);
    assert.ok(events(t).some((e) => e.Type === 'Max Run Duration Exceeded'), events(t).map((e) => e.Type).join(','));
    assert.match(alloc.ClientDescription, /max_run_duration of 2s/);
  });

  it('stops the other tasks once the leader task is dead, and refuses two leaders in a group at the second', async () => {
    await run('leader.hcl');
    const alloc = await allocOf('leader', (a) => a.ClientStatus === 'failed' || a.ClientStatus === 'complete', 'the leader group to end');
    assert.equal(alloc.ClientStatus, 'complete', JSON.stringify(alloc.TaskStates));
    assert.equal(readFileSync(path.join(sharedDir(alloc.ID), 'leader.txt'), 'utf8'), 'led\n');
    const follower = task(alloc, 'follower');
    assert.equal(follower.State, 'dead');
    assert.equal(follower.Failed, false);
    assert.ok(events(follower).some((e) => e.Type === 'Leader Task Dead' && e.DisplayMessage === 'Leader Task in Group dead'), events(follower).map((e) => e.Type).join(','));
    // The follower was stopped, not left to sleep its ten minutes.
    assert.ok(ms(follower.FinishedAt, 'FinishedAt') - ms(task(alloc, 'leader').FinishedAt, 'FinishedAt') < 60_000);

    const two = readFileSync(path.join(CORPUS, 'leader.hcl'), 'utf8').replace('driver = "raw_exec"\n      config {\n        command = "/bin/sleep"', 'driver = "raw_exec"\n      leader = true\n      config {\n        command = "/bin/sleep"');
    writeFileSync(path.join(dir, 'two-leaders.hcl'), two);
    const r = await agent.cli(['job', 'run', '--detach', path.join(dir, 'two-leaders.hcl')]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /two-leaders\.hcl:17:\d+: .*only one task may be marked as leader \(tasks "leader", "follower" are\)/);
  });

  it("stops a batch group at its max_run_duration, completing it without its poststop task; refuses it on a service job", async () => {
    await run('group-max-run.hcl');
    const alloc = await allocOf('capped', (a) => a.ClientStatus === 'failed' || a.ClientStatus === 'complete', 'the capped group to end');
    assert.equal(alloc.ClientStatus, 'complete', JSON.stringify(alloc.TaskStates));
    assert.equal(alloc.ClientDescription, 'allocation exceeded max_run_duration');
    assert.equal(task(alloc, 'work').Failed, false);
    assert.equal(existsSync(path.join(sharedDir(alloc.ID), 'after.txt')), false, 'the poststop task was skipped');
    const service = readFileSync(path.join(CORPUS, 'group-max-run.hcl'), 'utf8').replace('type = "batch"', 'type = "service"');
    writeFileSync(path.join(dir, 'service-capped.hcl'), service);
    const r = await agent.cli(['job', 'run', '--detach', path.join(dir, 'service-capped.hcl')]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /service-capped\.hcl:7:\d+: .*job type "service" does not allow max_run_duration/);
  });

  it("keeps a group's scaling block: listed as Nomad's policy, and job scale refused outside its min and max", async () => {
    await run('scaling.hcl');
    const policies = await agent.get<Array<{ ID: string; Enabled: boolean; Type: string; Target: Record<string, string> }>>('/v1/scaling/policies?job=scaled');
    assert.equal(policies.length, 1);
    assert.deepEqual(policies[0]!.Target, { Namespace: 'default', Job: 'scaled', Group: 'web' });
    assert.equal(policies[0]!.Type, 'horizontal');
    const policy = await agent.get<{ Min: number; Max: number; Policy: Record<string, unknown> }>(`/v1/scaling/policy/${policies[0]!.ID}`);
    assert.equal(policy.Min, 2, 'min left out is the count at registration');
    assert.equal(policy.Max, 4);
    const listed = await agent.cli(['scaling', 'policy', 'list']);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${policies[0]!.ID.slice(0, 8)}\\s+true\\s+horizontal\\s+Namespace:default,Job:scaled,Group:web$`, 'm'));
    const info = await agent.cli(['scaling', 'policy', 'info', policies[0]!.ID.slice(0, 6)]);
    assert.match(info.stdout, /^Min\s+= 2\nMax\s+= 4$/m);
    assert.match(info.stdout, /"cooldown": "1m"/);
    const job = await agent.get<{ TaskGroups: Array<{ Scaling: { ID: string; Min: number } }> }>('/v1/job/scaled');
    assert.equal(job.TaskGroups[0]!.Scaling.ID, policies[0]!.ID);

    const tooMany = await agent.cli(['job', 'scale', 'scaled', 'web', '5']);
    assert.notEqual(tooMany.code, 0);
    assert.match(tooMany.stderr, /group count was greater than scaling policy maximum: 5 > 4/);
    const tooFew = await agent.cli(['job', 'scale', 'scaled', 'web', '1']);
    assert.match(tooFew.stderr, /group count was less than scaling policy minimum: 1 < 2/);
    const ok = await agent.cli(['job', 'scale', 'scaled', 'web', '3']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal((await agent.get<{ TaskGroups: Array<{ Count: number }> }>('/v1/job/scaled')).TaskGroups[0]!.Count, 3);
    // The same file sent again is the same job: min stays the count it was registered with.
    await run('scaling.hcl');
    assert.equal((await agent.get<{ Min: number }>(`/v1/scaling/policy/${policies[0]!.ID}`)).Min, 2);
    assert.equal((await agent.cli(['job', 'stop', '-purge', 'scaled'])).code, 0);
  });

  it("keeps a job's ui block: in the API as Nomad's UI, in job status, and a change to it restarts nothing", async () => {
    await run('ui.hcl');
    const job = await agent.get<{ UI: { Description: string; Links: Array<{ Label: string; URL: string }> } }>('/v1/job/described');
    assert.deepEqual(job.UI, {
      Description: "The team's **web** front end.\nSecond line.",
      Links: [
        { Label: 'Runbook', URL: 'https://runbooks.example.com/web' },
        { Label: 'Dashboard', URL: 'https://grafana.example.com/d/web' },
      ],
    });
    const status = await agent.cli(['job', 'status', '-short', 'described']);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /^Description\s+= The team's \*\*web\*\* front end\.$/m);
    assert.match(status.stdout, /^Link "Runbook"\s+= https:\/\/runbooks\.example\.com\/web$/m);
    const first = await allocOf('described', (a) => a.ClientStatus === 'running', 'the described job to run');
    await run('ui-changed.hcl', readFileSync(path.join(CORPUS, 'ui.hcl'), 'utf8').replace('Second line.', 'Changed.'));
    const changed = await agent.get<{ Version: number; UI: { Description: string } }>('/v1/job/described');
    assert.equal(changed.Version, 1);
    assert.match(changed.UI.Description, /Changed\.$/);
    const allocs = await agent.get<Array<{ ID: string; DesiredStatus: string }>>('/v1/job/described/allocations');
    assert.deepEqual(allocs.map((a) => [a.ID, a.DesiredStatus]), [[first.ID, 'run']], 'the running allocation was kept');
    assert.equal((await agent.cli(['job', 'stop', '-purge', 'described'])).code, 0);
  });

  it('runs a task as its `user` under raw_exec and exec', async () => {
    await run('user.hcl');
    const alloc = await allocOf('as-nobody', (a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed', 'the tasks run as nobody to finish');
    assert.equal(alloc.ClientStatus, 'complete', `${alloc.ClientDescription} ${JSON.stringify(alloc.TaskStates)}`);
    for (const name of ['raw', 'jailed']) {
      const uid = readFileSync(path.join(dir, 'a', 'client', 'alloc', alloc.ID, name, 'local', 'uid.txt'), 'utf8').trim();
      assert.equal(uid, '65534', `${name} ran as nobody`);
    }
  });

  it('runs the hostpath plugin written as Nomad demos write it, and mounts a volume at ${NOMAD_ALLOC_DIR}/data', async () => {
    const data = path.join(dir, 'hp');
    await run('csi-hostpath-plugin.hcl', readFileSync(path.join(CORPUS, 'csi-hostpath-plugin.hcl'), 'utf8').replaceAll('DATA_ROOT', data));
    await until('the plugin to be healthy', async () => {
      const r = await agent.cli(['plugin', 'status', 'hostpath-ns']);
      return r.code === 0 && /Nodes Healthy\s+1\b/.test(r.stdout) ? r : undefined;
    }, 120_000);
    const nodes = await agent.get<Array<{ ID: string }>>('/v1/nodes');
    assert.ok(existsSync(path.join(data, nodes[0]!.ID)), `the plugin got the node ID through \${node.unique.id}: ${existsSync(data) ? readdirSync(data).join(',') : 'no data dir'}`);
    const create = await agent.cli(['volume', 'create', path.join(CORPUS, 'csi-volume.hcl')]);
    assert.equal(create.code, 0, create.stderr);
    await run('csi-consumer.hcl');
    const alloc = await allocOf('ns-consumer', (a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed', 'the consumer to finish', 120_000);
    assert.equal(alloc.ClientStatus, 'complete', `${alloc.ClientDescription} ${JSON.stringify(alloc.TaskStates?.['write']?.Events?.map((e) => e.Message))}`);
    const written = readdirSync(data, { recursive: true }).map(String).filter((f) => f.endsWith('hello.txt'));
    assert.equal(written.length, 1, `hello.txt in the volume: ${written.join(', ')}`);
    assert.equal(readFileSync(path.join(data, written[0]!), 'utf8').trim(), `hello-from-${alloc.ID.slice(0, 8)}`);
  });

  it('refuses the blocks Berth does not have by name, at their line', async () => {
    const refused = path.join(CORPUS, 'refused');
    for (const name of readdirSync(refused).sort()) {
      const file = path.join(refused, name);
      const expected = readFileSync(file, 'utf8')
        .split('\n')
        .map((l) => /^# expect: (\d+:\d+) \S+: (.*)$/.exec(l))
        .filter((m): m is RegExpExecArray => m !== null);
      assert.ok(expected.length > 0, `${name} says what it expects`);
      const r = await agent.cli(['job', 'validate', file]);
      assert.notEqual(r.code, 0, `${name} was accepted`);
      const lines = r.stderr.split('\n').map((l) => l.replace(/^error: /, ''));
      for (const [, where, message] of expected) {
        const hit = lines.find((l) => l.startsWith(`${file}:${where}: `) && l.endsWith(message as string));
        assert.ok(hit, `${name}: expected "${where} ... ${message}" in:\n${r.stderr}`);
      }
      assert.doesNotMatch(r.stderr, /unknown field/, `${name}: a Nomad block reported as a typo`);
    }
  });
});
