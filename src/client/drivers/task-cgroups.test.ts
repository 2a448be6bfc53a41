// Tasks that keep to their resources, with real cgroups (v1 controllers here)
// and real processes: OOM kill, whole-task stop, executor death, orphans after
// an agent restart, stats and live limit updates; exec's init and terminal.

import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { CgroupV1, CgroupV2, type Cgroups } from '../cgroups/index.js';
import { readTaskLogs } from '../logs/index.js';
import { Collect, DriverHarness, eventually } from '../../../test/support/client-drivers.js';
import { ExecDriver } from './exec-driver.js';
import { RawExecDriver } from './raw-exec-driver.js';
import type { TaskDriver } from './task-driver.js';

const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

/** Reads a pid a task wrote to a file, once it is there. */
const pidFile = async (file: string): Promise<number> =>
  Number(await eventually(`${file} written`, () => (existsSync(file) && readFileSync(file, 'utf8').trim()) || undefined));

const BACKENDS: Array<[string, (parent: string) => Cgroups]> = [
  ['v1', (parent) => new CgroupV1({ parent })],
  ['v2', (parent) => new CgroupV2({ mount: '/sys/fs/cgroup/unified', parent })],
];

for (const [version, makeCgroups] of BACKENDS) {
  describe(`tasks in cgroups (${version})`, () => {
    let h: DriverHarness;
    let cgroups: Cgroups;
    let raw: TaskDriver;
    let exec: TaskDriver;

    beforeEach(() => {
      h = new DriverHarness();
      cgroups = makeCgroups(`berth-test-${process.pid}-${path.basename(h.dir)}`);
      raw = new RawExecDriver({ stateDir: path.join(h.dir, 'raw'), cgroups });
      exec = new ExecDriver({ stateDir: h.stateDir, cgroups });
      h.drivers.push(raw, exec);
    });
    afterEach(async () => {
      for (const g of cgroups.list()) await cgroups.remove(g).catch(() => undefined);
      cgroups.prune();
      await h.cleanup();
    });

    it('stop leaves no process of the task alive, a daemonised grandchild included, and destroy removes the group', async () => {
      const cfg = h.config('web', 'setsid sh -c "sleep 1000 & echo \\$! > $BERTH_PID_FILE" & exec sleep 1000', {
        env: { BERTH_PID_FILE: path.join(h.taskDir('web'), 'gc.pid') },
      });
      const handle = await h.start(raw, cfg);
      const grandchild = await pidFile(path.join(cfg.taskDir, 'gc.pid'));
      assert.ok(alive(grandchild));
      assert.ok(handle.cgroup, 'the handle names the task cgroup');
      assert.ok(cgroups.pids(handle.cgroup).includes(grandchild), 'the grandchild is in the task cgroup');
      await raw.stopTask(cfg.id, { timeoutMs: 100 });
      assert.equal(alive(grandchild), false, 'the daemonised grandchild is gone');
      assert.deepEqual(cgroups.pids(handle.cgroup), []);
      await raw.destroyTask(cfg.id);
      assert.deepEqual(cgroups.list(), [], 'the group is removed');
    });

    it('each task is in its own group from its first instruction, and the executor that forked them stays in none', async () => {
      const names = ['one', 'two', 'three'];
      const started = [];
      for (const name of names) {
        const cfg = h.config(name, 'cat /proc/self/cgroup > "$FIRST"; exec sleep 1000', {
          env: { FIRST: path.join(h.taskDir(name), 'first-cgroup') },
        });
        started.push({ cfg, handle: await h.start(raw, cfg) });
      }
      const executors = new Set(started.map((s) => s.handle.executorPid));
      for (const { cfg, handle } of started) {
        const group = handle.cgroup!;
        const first = await eventually('the first process wrote its cgroups', () => {
          const f = cfg.env['FIRST']!;
          return existsSync(f) && readFileSync(f, 'utf8').includes('\n') ? readFileSync(f, 'utf8') : undefined;
        });
        const lines = first.split('\n').filter((l) => l.includes(`/${group.name}`));
        assert.ok(lines.length >= (version === 'v1' ? 2 : 1), `the first process is in ${group.name}:\n${first}`);
        // Once its `cat` has exited (it may still be on its way out when the file is read).
        await eventually(`${group.name} holds the task alone`, () => {
          const pids = cgroups.pids(group);
          return pids.length === 1 && pids[0] === handle.taskPid ? pids : undefined;
        });
      }
      for (const pid of executors) {
        for (const tid of readdirSync(`/proc/${pid}/task`)) {
          const own = readFileSync(`/proc/${pid}/task/${tid}/cgroup`, 'utf8');
          for (const name of names) assert.ok(!own.includes(`.${name}`), `executor ${pid} thread ${tid} is back in its own groups:\n${own}`);
        }
      }
    });

    it('an executor killed with SIGKILL while the task runs: stop still leaves nothing behind', async () => {
      const cfg = h.config('web', 'setsid sh -c "sleep 1000 & echo \\$! > $BERTH_PID_FILE" & exec sleep 1000', {
        env: { BERTH_PID_FILE: path.join(h.taskDir('web'), 'gc.pid') },
      });
      const handle = await h.start(raw, cfg);
      const grandchild = await pidFile(path.join(cfg.taskDir, 'gc.pid'));
      process.kill(handle.executorPid, 'SIGKILL');
      await eventually('executor gone', () => !alive(handle.executorPid));
      await raw.stopTask(cfg.id, { timeoutMs: 100 });
      assert.equal(alive(handle.taskPid), false);
      assert.equal(alive(grandchild), false);
      assert.deepEqual(cgroups.pids(handle.cgroup!), []);
    });

    it('after an agent restart, the processes of tasks it no longer runs are found and killed', async () => {
      const keep = h.config('keep', 'exec sleep 1000');
      const gone = h.config('gone', 'sleep 1000 & exec sleep 1000', { allocId: 'alloc-2' });
      const kept = await h.start(raw, keep);
      const lost = await h.start(raw, gone);
      await raw.shutdown();
      // The executor of the forgotten task died while no agent ran.
      process.kill(lost.executorPid, 'SIGKILL');
      const next = new RawExecDriver({ stateDir: path.join(h.dir, 'raw'), cgroups });
      h.drivers.push(next);
      await next.recoverTask(kept);
      const removed = await next.reapOrphans(new Set([`${keep.allocId}.${keep.taskName}`]));
      assert.deepEqual(removed, ['alloc-2.gone']);
      assert.equal(alive(lost.taskPid), false);
      assert.equal(next.inspectTask(keep.id).state, 'running', 'the task still run is left alone');
    });

    it('stats come from the task cgroup', async () => {
      const cfg = h.config('web', 'sleep 1000 & exec sleep 1000');
      const handle = await h.start(raw, cfg);
      const st = await eventually('both processes counted', async () => {
        const s = await raw.taskStats(cfg.id);
        return s.pids.length === 2 ? s : undefined;
      });
      assert.equal(st.source, 'cgroup');
      assert.ok(st.pids.includes(handle.taskPid));
      if (cgroups.controllers.memory) assert.ok(st.memory.usageBytes > 0, 'memory usage from the memory controller');
      assert.ok(st.cpu.totalMs >= 0);
    });

    it('exec: a shell loop that does not trap SIGTERM stops on it (the init forwards it), not by SIGKILL', async () => {
      const cfg = h.config('loop', 'echo ready; while :; do sleep 0.05; done');
      await h.start(exec, cfg);
      await eventually('ready', async () => (await readTaskLogs({ dir: h.logDir, taskName: 'loop', stream: 'stdout' })).toString().includes('ready'));
      await exec.stopTask(cfg.id, { timeoutMs: 30_000 });
      const exit = await exec.waitTask(cfg.id);
      // 128 + SIGTERM(15) from the init: the loop died of SIGTERM, long before the 30 s SIGKILL.
      assert.equal(exit.exitCode, 143);
      assert.equal(exit.oomKilled, false);
    });
  });
}

describe('memory limits (v1 memory controller)', () => {
  let h: DriverHarness;
  let cgroups: CgroupV1;

  beforeEach(() => {
    h = new DriverHarness();
    cgroups = new CgroupV1({ parent: `berth-test-${process.pid}-${path.basename(h.dir)}` });
  });
  afterEach(async () => {
    for (const g of cgroups.list()) await cgroups.remove(g).catch(() => undefined);
    cgroups.prune();
    await h.cleanup();
  });

  for (const kind of ['raw_exec', 'exec'] as const) {
    it(`${kind}: a task that allocates past its memory is OOM-killed and its exit says so`, async () => {
      const driver = kind === 'exec' ? new ExecDriver({ stateDir: h.stateDir, cgroups }) : new RawExecDriver({ stateDir: h.stateDir, cgroups });
      h.drivers.push(driver);
      // The shell keeps 200 MB of command output in memory.
      const cfg = h.config('hog', 'x=$(head -c 200000000 /dev/zero | tr "\\0" a); echo survived', { resources: { cpuMhz: 100, memoryMb: 20 } });
      const handle = await h.start(driver, cfg);
      assert.equal(readFileSync(path.join(handle.cgroup!.memoryDir!, 'memory.limit_in_bytes'), 'utf8').trim(), String(20 * 1024 * 1024));
      const exit = await driver.waitTask(cfg.id);
      assert.equal(exit.oomKilled, true, exit.message);
      assert.match(exit.message, /OOM Killed/);
      assert.doesNotMatch((await readTaskLogs({ dir: h.logDir, taskName: 'hog', stream: 'stdout' })).toString(), /survived/);
    });
  }

  it('memory_max is the hard limit and memory the soft one; a job update changes them on the running task', async () => {
    const driver = new RawExecDriver({ stateDir: h.stateDir, cgroups });
    h.drivers.push(driver);
    const cfg = h.config('web', 'exec sleep 1000', { resources: { cpuMhz: 500, memoryMb: 64, memoryMaxMb: 128, cores: 1.5, pidsMax: 50 } });
    const handle = await h.start(driver, cfg);
    const g = handle.cgroup!;
    const read = (ctl: string, file: string): string => readFileSync(path.join(g.dirs.find((d) => d.includes(`/${ctl}/`))!, file), 'utf8').trim();
    assert.equal(read('memory', 'memory.limit_in_bytes'), String(128 * 1024 * 1024));
    assert.equal(read('memory', 'memory.soft_limit_in_bytes'), String(64 * 1024 * 1024));
    assert.equal(read('cpu', 'cpu.shares'), '500');
    assert.equal(read('cpu', 'cpu.cfs_quota_us'), '150000');
    assert.equal(read('pids', 'pids.max'), '50');
    assert.equal(await driver.updateTaskResources(cfg.id, { cpuMhz: 250, memoryMb: 96 }), true);
    assert.equal(read('memory', 'memory.limit_in_bytes'), String(96 * 1024 * 1024));
    assert.equal(read('cpu', 'cpu.shares'), '250');
    assert.equal(read('cpu', 'cpu.cfs_quota_us'), '-1');
    assert.equal(read('pids', 'pids.max'), 'max');
    assert.equal(driver.inspectTask(cfg.id).state, 'running', 'no restart');
  });
});

describe('exec: a real terminal', () => {
  let h: DriverHarness;

  beforeEach(() => {
    h = new DriverHarness();
  });
  afterEach(() => h.cleanup());

  for (const shell of ['/bin/sh', '/bin/bash']) {
    it(`alloc exec -t runs ${shell} on a pts of the task's own devpts, with job control, and hands back exit 3`, async () => {
      const driver = new ExecDriver({ stateDir: h.stateDir });
      h.drivers.push(driver);
      const cfg = h.config('box', 'exec sleep 1000');
      await h.start(driver, cfg);
      const out = new Collect();
      // Job control: a background job gets its own process group, and fg brings it to the foreground.
      const script = [
        'tty',
        'test -e "$(tty)" && echo pts-exists-inside',
        'set -m',
        'sleep 1 &',
        'test "$(cut -d" " -f5 /proc/$!/stat)" != "$(cut -d" " -f5 /proc/$$/stat)" && echo job-has-own-pgrp',
        'fg %1 >/dev/null && echo fg-ok',
        'exit 3',
      ].join('\n');
      const { exitCode } = await driver.execTaskStreaming(cfg.id, { command: [shell, '-c', script], tty: true, stdout: out });
      assert.equal(exitCode, 3);
      assert.match(out.text, /^\/dev\/pts\/\d+\r?$/m);
      assert.match(out.text, /pts-exists-inside/);
      assert.match(out.text, /job-has-own-pgrp/, out.text);
      assert.match(out.text, /fg-ok/, out.text);
    });
  }
});
