// The allocation runner with R1's raw_exec driver (real executor processes),
// real alloc dirs and tmpfs, real network namespaces, a real SQLite state.

import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { forgetTaskRunner, TASK_RUNNERS_BUCKET, type RunnerDriver } from '../taskrunner/index.js';
import { ALLOC_RUNNERS_BUCKET, savedAllocRunners } from './alloc-records.js';
import { eventually, makeAlloc, makeJob, mountPointsUnder, Node } from '../../../test/support/client-allocrunner.js';

describe('AllocRunner', () => {
  it('runs a batch allocation: alloc dir with a tmpfs secrets dir, running then complete, destroy unmounts and removes it', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const job = makeJob({
      id: 'hello',
      type: 'batch',
      groups: [
        {
          name: 'g',
          tasks: [
            {
              name: 'main',
              driver: 'raw_exec',
              config: { command: '/bin/sh', args: ['-c', 'test -d "$BERTH_ALLOC_DIR/data" && echo "$BERTH_ALLOC_ID" > "$BERTH_TASK_DIR/out" && sleep 0.3'] },
            },
          ],
        },
      ],
    });
    const alloc = makeAlloc(job);
    const r = node.runner(alloc, job);
    await r.run();
    const taskDir = r.allocDir.task('main');
    for (const sub of ['logs', 'data', 'tmp']) assert.ok(existsSync(path.join(r.allocDir.sharedDir, sub)), `alloc/${sub} exists`);
    assert.ok(existsSync(taskDir.tmpDir));
    const secrets = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').find((l) => l.split(' ')[4] === taskDir.secretsDir);
    assert.match(secrets ?? '', / - tmpfs /, 'secrets/ is a tmpfs');
    await eventually('the allocation completes', () => node.statusOf(alloc.id)?.clientStatus === 'complete');
    const seen = node.statuses.filter((s) => s.allocId === alloc.id).map((s) => s.clientStatus);
    assert.deepEqual([...new Set(seen)], ['pending', 'running', 'complete']);
    assert.equal(readFileSync(path.join(taskDir.localDir, 'out'), 'utf8').trim(), alloc.id);
    const events = node.statusOf(alloc.id)!.taskStates['main']!.events.map((e) => e.type);
    assert.deepEqual(events, ['Received', 'Setting Up', 'Started', 'Terminated']);
    assert.equal(r.status().clientDescription, 'All tasks have completed');

    await r.destroy();
    assert.deepEqual(mountPointsUnder(r.allocDir.dir), []);
    assert.equal(existsSync(r.allocDir.dir), false);
    assert.equal(node.store.bucket(ALLOC_RUNNERS_BUCKET).get(alloc.id), undefined, 'the record is forgotten');
    await r.destroy(); // safe twice
  });

  it('a service allocation stopped by the server: tasks killed, status complete, Killing/Killed in the trail', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const job = makeJob({ id: 'svc', groups: [{ name: 'g', tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['600'] } }] }] });
    const alloc = makeAlloc(job);
    const r = node.runner(alloc, job);
    await r.run();
    assert.equal(r.status().clientStatus, 'running');
    r.update({ ...alloc, desiredStatus: 'stop', desiredDescription: 'job stopped' });
    await eventually('the allocation is complete', () => node.statusOf(alloc.id)?.clientStatus === 'complete');
    const events = r.status().taskStates['main']!.events;
    assert.deepEqual(events.slice(-2).map((e) => e.type), ['Killing', 'Killed']);
    assert.match(events.at(-1)!.message, /allocation stopped: job stopped/);
    assert.equal(r.status().taskStates['main']!.failed, false);
  });

  it('an in-place update (new job version, only resources changed): tasks keep running, "Resources Updated", the saved job follows', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const spec = (memoryMb: number) => ({
      id: 'grow',
      groups: [{ name: 'g', tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['600'] }, resources: { memoryMb } }] }],
    });
    const job = makeJob(spec(64));
    const alloc = makeAlloc(job);
    const r = node.runner(alloc, job);
    await r.run();
    assert.equal(r.status().clientStatus, 'running');
    const next = { ...makeJob(spec(96)), version: 1 };
    r.update({ ...alloc, jobVersion: 1, resources: { cpuMhz: 100, memoryMb: 96 } }, next);
    const updated = await eventually('the Resources Updated event', () =>
      r.status().taskStates['main']!.events.find((e) => e.type === 'Resources Updated'),
    );
    assert.match(updated.message, /memory 96 MB/);
    assert.equal(r.status().clientStatus, 'running');
    assert.deepEqual(r.status().taskStates['main']!.events.map((e) => e.type).filter((e) => e === 'Started' || e === 'Killed'), ['Started']);
    // What an agent restart rebuilds the runner from: the new version and its resources.
    const saved = savedAllocRunners(node.store).find((x) => x.alloc.id === alloc.id);
    assert.equal(saved?.alloc.jobVersion, 1);
    assert.equal(saved?.job.groups[0]!.tasks[0]!.resources.memoryMb, 96);
    r.update({ ...alloc, jobVersion: 1, desiredStatus: 'stop' });
    await eventually('the allocation is complete', () => node.statusOf(alloc.id)?.clientStatus === 'complete');
  });

  it('network mode none: the group gets its own namespace with only loopback, removed in postrun', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const job = makeJob({
      id: 'isolated',
      type: 'batch',
      groups: [
        {
          name: 'g',
          network: { mode: 'none' },
          tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/sh', args: ['-c', 'ip -o link show > "$BERTH_TASK_DIR/links"; sleep 0.2'] } }],
        },
      ],
    });
    const alloc = makeAlloc(job);
    const r = node.runner(alloc, job);
    await r.run();
    assert.ok(node.network.exists(alloc.id), 'the namespace exists while the allocation runs');
    await eventually('the allocation completes', () => node.statusOf(alloc.id)?.clientStatus === 'complete');
    await eventually('postrun removes the namespace', () => !node.network.exists(alloc.id));
    const links = readFileSync(path.join(r.allocDir.task('main').localDir, 'links'), 'utf8').trim().split('\n');
    assert.equal(links.length, 1);
    assert.match(links[0]!, /^1: lo:/);
  });

  it('network mode none with a driver that cannot join it fails the allocation clearly, before anything is set up', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const raw = node.drivers.get('raw_exec')!;
    const hostOnly: RunnerDriver = Object.assign(Object.create(raw) as RunnerDriver, {
      name: 'host_only',
      capabilities: { ...raw.capabilities, networkModes: ['host'] as const },
    });
    node.drivers.set('host_only', hostOnly as never);
    const job = makeJob({
      id: 'bad-net',
      groups: [{ name: 'g', network: { mode: 'none' }, tasks: [{ name: 'main', driver: 'host_only', config: { command: '/bin/true' } }] }],
    });
    const alloc = makeAlloc(job);
    const r = node.runner(alloc, job);
    await r.run();
    const st = r.status();
    assert.equal(st.clientStatus, 'failed');
    assert.match(st.clientDescription, /network: task "main": driver host_only does not support network mode "none" \(it supports host\)/);
    assert.equal(st.taskStates['main']!.failed, true);
    assert.equal(node.network.exists(alloc.id), false);
  });

  it('a task driver missing on the node fails the allocation with its name', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const job = makeJob({ id: 'nodriver', groups: [{ name: 'g', tasks: [{ name: 'main', driver: 'podman', config: { command: '/bin/true' } }] }] });
    const r = node.runner(makeAlloc(job), job);
    await r.run();
    assert.equal(r.status().clientStatus, 'failed');
    assert.match(r.status().clientDescription, /task driver "podman" is not available on this node/);
  });

  it('host volumes: the named host path is bound into the task (read-only when asked) and unbound in postrun', async (t) => {
    const node = new Node({ hostVolumes: {} });
    t.after(() => node.cleanup());
    const shared = path.join(node.dir, 'host-shared');
    const { mkdirSync, writeFileSync } = await import('node:fs');
    mkdirSync(shared, { recursive: true });
    writeFileSync(path.join(shared, 'greeting'), 'from the host');
    node.hostVolumes['shared'] = shared;
    await node.start();
    const job = makeJob({
      id: 'hv',
      type: 'batch',
      groups: [
        {
          name: 'g',
          volumes: { data: { type: 'host', source: 'shared', readOnly: true } },
          tasks: [
            {
              name: 'main',
              driver: 'raw_exec',
              config: { command: '/bin/sh', args: ['-c', 'cat "$BERTH_TASK_DIR/data/greeting" > "$BERTH_TASK_DIR/seen"; touch "$BERTH_TASK_DIR/data/x" 2>/dev/null && echo rw > "$BERTH_TASK_DIR/mode" || echo ro > "$BERTH_TASK_DIR/mode"'] },
              volumeMounts: [{ volume: 'data', destination: '/data' }],
            },
          ],
        },
      ],
    });
    const alloc = makeAlloc(job);
    const r = node.runner(alloc, job);
    await r.run();
    await eventually('the allocation completes', () => node.statusOf(alloc.id)?.clientStatus === 'complete');
    const local = r.allocDir.task('main').localDir;
    assert.equal(readFileSync(path.join(local, 'seen'), 'utf8'), 'from the host');
    assert.equal(readFileSync(path.join(local, 'mode'), 'utf8').trim(), 'ro');
    await eventually('postrun unbinds the volume', () => !mountPointsUnder(local).length);
    assert.equal(existsSync(path.join(shared, 'greeting')), true, 'the host data is untouched');
  });

  it('a missing host volume fails the allocation clearly', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const job = makeJob({
      id: 'hv2',
      groups: [{ name: 'g', volumes: { data: { type: 'host', source: 'nope' } }, tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/true' }, volumeMounts: [{ volume: 'data', destination: '/d' }] }] }],
    });
    const r = node.runner(makeAlloc(job), job);
    await r.run();
    assert.equal(r.status().clientStatus, 'failed');
    assert.match(r.status().clientDescription, /host volume "nope" \(group volume "data"\) is not configured on this node/);
  });

  it('an agent that died after setting up an allocation but before starting its task: the next agent starts it once the server answers', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const job = makeJob({ id: 'unstarted', groups: [{ name: 'g', tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['600'] } }] }] });
    const alloc = makeAlloc(job);
    const first = node.runner(alloc, job);
    await first.run();
    const pid = node.pidOf(first, 'main');
    await node.stopAgent();
    // What an agent that died just before spawning leaves: the allocation set up (phase running), no task record.
    await node.startAgentAgain();
    const saved = node.store.bucket<{ handle?: { executorPid: number } }>(TASK_RUNNERS_BUCKET).get(`${alloc.id}/main`);
    const executor = saved?.handle?.executorPid as number;
    process.kill(-pid, 'SIGKILL');
    const gone = (p: number): boolean => !existsSync(`/proc/${p}/stat`) || readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]?.startsWith('Z') === true;
    await eventually('the old task and its executor gone', () => gone(pid) && gone(executor));
    forgetTaskRunner(node.store, alloc.id, 'main');
    const r = node.runner(alloc, job);
    await r.restore();
    assert.equal(r.status().clientStatus, 'pending', 'nothing starts before the server answers');
    r.update(alloc);
    await eventually('the task to run', () => r.status().clientStatus === 'running');
    assert.notEqual(node.pidOf(r, 'main'), pid, 'a new process');
  });
});
