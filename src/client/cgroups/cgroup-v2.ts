// cgroup v2: one unified hierarchy. A task's group is `<mount>/<parent>/<name>`
// (at the hierarchy's root, since v2 lets no process sit in a group whose
// children have controllers). Controllers the hierarchy offers (memory, cpu,
// pids) are enabled down to the parent; limits of missing ones are skipped and
// `controllers` says so. Kill uses cgroup.kill (Linux 5.14+), else freeze.

import { existsSync, mkdirSync, readdirSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { throwIfAborted } from '../../lib/index.js';
import { CPU_PERIOD_US, cpuWeight, type CgroupControllers, type CgroupLimits, type CgroupStats, type Cgroups, type TaskCgroup } from './cgroups.js';
import { CgroupError } from './cgroup-error.js';
import { kill, makeGroup, probeGroup, pause, procsOf, readKeyed, readText, readNumber, removeDir, write, writeAll, type CgroupWrite } from './_fs.js';

export interface CgroupV2Options {
  /** Where the unified hierarchy is mounted, default /sys/fs/cgroup. */
  mount?: string;
  /** The Berth parent group's name, default `berth`. */
  parent?: string;
}

/** The v2 backend. Construct with detectCgroups or directly (tests). */
export class CgroupV2 implements Cgroups {
  readonly version = 'v2' as const;
  readonly controllers: CgroupControllers;
  readonly #parent: string;
  #prepared = false;
  #swap: boolean | undefined;

  constructor(opts: CgroupV2Options = {}) {
    const mount = opts.mount ?? '/sys/fs/cgroup';
    this.#parent = join(mount, opts.parent ?? 'berth');
    const offered = new Set((readText(join(mount, 'cgroup.controllers')) ?? '').trim().split(/\s+/));
    this.controllers = { memory: offered.has('memory'), cpu: offered.has('cpu'), pids: offered.has('pids'), freezer: true };
  }

  /** Makes the parent group and enables the offered controllers for its children. */
  #prepare(): void {
    if (this.#prepared) return;
    try {
      mkdirSync(this.#parent, { recursive: true });
    } catch (err) {
      throw new CgroupError('CGROUP_CREATE_FAILED', `creating cgroup ${this.#parent} failed: ${(err as Error).message}`, { cause: err });
    }
    const wanted = (['memory', 'cpu', 'pids'] as const).filter((c) => this.controllers[c]);
    if (wanted.length) {
      const enable = wanted.map((c) => `+${c}`).join(' ');
      write(join(this.#parent, '..', 'cgroup.subtree_control'), enable, 'CGROUP_CREATE_FAILED', 'enabling controllers at the hierarchy root');
      write(join(this.#parent, 'cgroup.subtree_control'), enable, 'CGROUP_CREATE_FAILED', `enabling controllers in ${this.#parent}`);
    }
    this.#prepared = true;
  }

  async create(name: string, limits: CgroupLimits): Promise<TaskCgroup> {
    this.#prepare();
    const group = this.#ref(name);
    // The swap file's presence is a kernel option: looked up once, in the parent.
    this.#swap ??= existsSync(join(this.#parent, 'memory.swap.max'));
    await makeGroup(group.dirs, () => this.#limitWrites(group, limits, this.#swap as boolean), name);
    return group;
  }

  probe(): void {
    this.#prepare();
    const group = this.#ref(`probe-${process.pid}`);
    probeGroup(group.dirs, () => this.update(group, { memoryMb: 64, cpuMhz: 100 }));
  }

  update(group: TaskCgroup, limits: CgroupLimits): void {
    const swap = existsSync(join(group.dirs[0] as string, 'memory.swap.max'));
    writeAll(this.#limitWrites(group, limits, swap), 'CGROUP_LIMIT_FAILED', `cgroup ${group.name}`);
  }

  #limitWrites(group: TaskCgroup, limits: CgroupLimits, swap: boolean): CgroupWrite[] {
    const dir = group.dirs[0] as string;
    const out: CgroupWrite[] = [];
    if (this.controllers.memory) {
      const hard = Math.max(limits.memoryMb, limits.memoryMaxMb ?? 0) * 1024 * 1024;
      // memory.low is the reservation: reclaim spares it under pressure.
      out.push([join(dir, 'memory.max'), String(hard)], [join(dir, 'memory.low'), String(limits.memoryMb * 1024 * 1024)]);
      if (swap) out.push([join(dir, 'memory.swap.max'), '0']);
    }
    if (this.controllers.cpu) {
      const quota = limits.cores ? String(Math.round(limits.cores * CPU_PERIOD_US)) : 'max';
      out.push([join(dir, 'cpu.weight'), String(cpuWeight(limits.cpuMhz))], [join(dir, 'cpu.max'), `${quota} ${CPU_PERIOD_US}`]);
    }
    if (this.controllers.pids) out.push([join(dir, 'pids.max'), limits.pidsMax ? String(limits.pidsMax) : 'max']);
    return out;
  }

  join(group: TaskCgroup, pid: number): void {
    write(join(group.dirs[0] as string, 'cgroup.procs'), String(pid), 'CGROUP_CREATE_FAILED', `cgroup ${group.name}`);
  }

  pids(group: TaskCgroup): number[] {
    return procsOf(group.dirs[0] as string);
  }

  async killAll(group: TaskCgroup, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const dir = group.dirs[0] as string;
    if (!existsSync(dir)) return;
    const hasKill = existsSync(join(dir, 'cgroup.kill'));
    for (let round = 0; ; round++) {
      throwIfAborted(opts.signal);
      if (!populated(dir)) return;
      if (round > 1000) throw new CgroupError('CGROUP_KILL_FAILED', `cgroup ${group.name} still holds ${this.pids(group).join(', ')} after SIGKILL`);
      if (round === 0 || round % 50 === 0) {
        if (hasKill) {
          write(join(dir, 'cgroup.kill'), '1', 'CGROUP_KILL_FAILED', `cgroup ${group.name}`);
        } else {
          write(join(dir, 'cgroup.freeze'), '1', 'CGROUP_KILL_FAILED', `cgroup ${group.name}`);
          for (const pid of this.pids(group)) kill(pid, 'SIGKILL');
          write(join(dir, 'cgroup.freeze'), '0', 'CGROUP_KILL_FAILED', `cgroup ${group.name}`);
        }
      }
      await pause(round < 20 ? 1 : 10, opts.signal);
    }
  }

  oomKills(group: TaskCgroup): number {
    return readKeyed(join(group.dirs[0] as string, 'memory.events')).get('oom_kill') ?? 0;
  }

  stats(group: TaskCgroup): CgroupStats {
    const dir = group.dirs[0] as string;
    const m = readKeyed(join(dir, 'memory.stat'));
    const c = readKeyed(join(dir, 'cpu.stat'));
    const userMs = (c.get('user_usec') ?? 0) / 1000;
    const systemMs = (c.get('system_usec') ?? 0) / 1000;
    return {
      memory: {
        rssBytes: m.get('anon') ?? 0,
        cacheBytes: m.get('file') ?? 0,
        usageBytes: readNumber(join(dir, 'memory.current')),
        maxUsageBytes: readNumber(join(dir, 'memory.peak')),
      },
      cpu: {
        userMs,
        systemMs,
        totalMs: (c.get('usage_usec') ?? 0) / 1000 || userMs + systemMs,
        throttledPeriods: c.get('nr_throttled') ?? 0,
        throttledMs: (c.get('throttled_usec') ?? 0) / 1000,
      },
      pids: this.pids(group),
      oomKills: this.oomKills(group),
    };
  }

  async remove(group: TaskCgroup, opts: { signal?: AbortSignal } = {}): Promise<void> {
    await this.killAll(group, opts);
    await removeDir(group.dirs[0] as string, opts.signal);
  }

  list(): TaskCgroup[] {
    try {
      return readdirSync(this.#parent, { withFileTypes: true })
        .filter((e) => e.isDirectory())
        .map((e) => this.#ref(e.name));
    } catch {
      return [];
    }
  }

  prune(): void {
    try {
      rmdirSync(this.#parent);
      this.#prepared = false;
    } catch {
      // still holds a task group, or gone
    }
  }

  #ref(name: string): TaskCgroup {
    const dir = join(this.#parent, name);
    return { version: 'v2', name, dirs: [dir], freezerDir: dir, ...(this.controllers.memory ? { memoryDir: dir } : {}) };
  }
}

/** cgroup.events `populated 1` while any process is in the group or below. */
function populated(dir: string): boolean {
  const events = readKeyed(join(dir, 'cgroup.events'));
  if (events.has('populated')) return events.get('populated') === 1;
  return procsOf(dir).length > 0;
}
