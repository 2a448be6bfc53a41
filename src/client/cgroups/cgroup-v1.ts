// cgroup v1: one hierarchy per controller (/sys/fs/cgroup/<controller>). A
// task's group is a directory of the same name in each of memory, cpu,
// cpuacct, pids and freezer, below `<controller><agent's own group>/<parent>`
// so that limits placed on the agent also bound its tasks.

import { existsSync, readdirSync, realpathSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { throwIfAborted } from '../../lib/index.js';
import { CPU_PERIOD_US, cpuShares, type CgroupControllers, type CgroupLimits, type CgroupStats, type Cgroups, type TaskCgroup } from './cgroups.js';
import { CgroupError } from './cgroup-error.js';
import { kill, makeGroup, probeGroup, pause, procsOf, readKeyed, readNumber, readText, removeDir, write, writeAll, type CgroupWrite } from './_fs.js';

const CONTROLLERS = ['memory', 'cpu', 'cpuacct', 'pids', 'freezer'] as const;
type Controller = (typeof CONTROLLERS)[number];
const USER_HZ = 100;

export interface CgroupV1Options {
  /** Where the controllers are mounted, default /sys/fs/cgroup. */
  root?: string;
  /** The Berth parent group's name, default `berth`. */
  parent?: string;
  /** The agent's own /proc/self/cgroup text (to nest below it); default read from the kernel. */
  selfCgroup?: string;
}

/** The v1 backend. Construct with detectCgroups or directly (tests). */
export class CgroupV1 implements Cgroups {
  readonly version = 'v1' as const;
  readonly controllers: CgroupControllers;
  /** Parent dir per controller that is mounted. */
  readonly #parents = new Map<Controller, string>();
  #cfsQuota: boolean | undefined;

  constructor(opts: CgroupV1Options = {}) {
    const root = opts.root ?? '/sys/fs/cgroup';
    const own = ownPaths(opts.selfCgroup ?? readText('/proc/self/cgroup') ?? '');
    const seen = new Set<string>();
    for (const c of CONTROLLERS) {
      const mount = join(root, c);
      if (!existsSync(join(mount, 'cgroup.procs'))) continue;
      const real = realpathSync(mount);
      // cpu and cpuacct are often one hierarchy (cpu,cpuacct): one dir serves both.
      const parent = join(mount, own.get(c) ?? '/', opts.parent ?? 'berth');
      if (seen.has(real)) {
        const twin = [...this.#parents.entries()].find(([k]) => realpathSync(join(root, k)) === real);
        if (twin) this.#parents.set(c, twin[1]);
        continue;
      }
      seen.add(real);
      this.#parents.set(c, parent);
    }
    this.controllers = {
      memory: this.#parents.has('memory'),
      cpu: this.#parents.has('cpu'),
      pids: this.#parents.has('pids'),
      freezer: this.#parents.has('freezer'),
    };
  }

  /** Whether any controller is mounted at all. */
  get usable(): boolean {
    return this.#parents.size > 0;
  }

  async create(name: string, limits: CgroupLimits): Promise<TaskCgroup> {
    const group = this.#ref(name);
    await makeGroup(group.dirs, () => this.#limitWrites(group, limits, () => true), name);
    return group;
  }

  probe(): void {
    const group = this.#ref(`probe-${process.pid}`);
    probeGroup(group.dirs, () => this.update(group, { memoryMb: 64, cpuMhz: 100 }));
  }

  update(group: TaskCgroup, limits: CgroupLimits): void {
    writeAll(this.#limitWrites(group, limits, existsSync), 'CGROUP_LIMIT_FAILED', `cgroup ${group.name}`);
  }

  /** The files to write for `limits`, in the controllers whose directory of the group `exists`. */
  #limitWrites(group: TaskCgroup, limits: CgroupLimits, exists: (dir: string) => boolean): CgroupWrite[] {
    const out: CgroupWrite[] = [];
    const dir = (c: Controller): string | undefined => {
      const parent = this.#parents.get(c);
      return parent && exists(join(parent, group.name)) ? join(parent, group.name) : undefined;
    };
    const mem = dir('memory');
    if (mem) {
      const hard = Math.max(limits.memoryMb, limits.memoryMaxMb ?? 0) * 1024 * 1024;
      out.push([join(mem, 'memory.limit_in_bytes'), String(hard)], [join(mem, 'memory.soft_limit_in_bytes'), String(limits.memoryMb * 1024 * 1024)]);
    }
    const cpu = dir('cpu');
    if (cpu) {
      out.push([join(cpu, 'cpu.shares'), String(cpuShares(limits.cpuMhz))]);
      // CFS bandwidth control is a kernel option: looked up once.
      this.#cfsQuota ??= existsSync(join(cpu, 'cpu.cfs_quota_us'));
      if (this.#cfsQuota) {
        const quota = limits.cores ? Math.round(limits.cores * CPU_PERIOD_US) : -1;
        out.push([join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US)], [join(cpu, 'cpu.cfs_quota_us'), String(quota)]);
      }
    }
    const pids = dir('pids');
    if (pids) out.push([join(pids, 'pids.max'), limits.pidsMax ? String(limits.pidsMax) : 'max']);
    return out;
  }

  join(group: TaskCgroup, pid: number): void {
    for (const dir of group.dirs) write(join(dir, 'cgroup.procs'), String(pid), 'CGROUP_CREATE_FAILED', `cgroup ${group.name}`);
  }

  pids(group: TaskCgroup): number[] {
    const all = new Set<number>();
    for (const dir of group.dirs) for (const p of procsOf(dir)) all.add(p);
    return [...all];
  }

  async killAll(group: TaskCgroup, opts: { signal?: AbortSignal } = {}): Promise<void> {
    const freezer = group.freezerDir && existsSync(group.freezerDir) ? group.freezerDir : undefined;
    for (let round = 0; ; round++) {
      throwIfAborted(opts.signal);
      const left = this.pids(group);
      if (left.length === 0) return;
      if (round > 1000) throw new CgroupError('CGROUP_KILL_FAILED', `cgroup ${group.name} still holds ${left.join(', ')} after SIGKILL`);
      if (freezer && round < 3) await this.#freeze(freezer, opts.signal);
      for (const pid of this.pids(group)) kill(pid, 'SIGKILL');
      if (freezer) write(join(freezer, 'freezer.state'), 'THAWED', 'CGROUP_KILL_FAILED', `cgroup ${group.name}`);
      await pause(round < 20 ? 1 : 10, opts.signal);
    }
  }

  async #freeze(dir: string, signal?: AbortSignal): Promise<void> {
    write(join(dir, 'freezer.state'), 'FROZEN', 'CGROUP_KILL_FAILED', `freezing ${dir}`);
    // FREEZING until every task stopped; give up waiting after a while (a task in D state) and kill anyway.
    for (let i = 0; i < 200; i++) {
      if ((readText(join(dir, 'freezer.state')) ?? '').trim() !== 'FREEZING') return;
      await pause(1, signal);
    }
  }

  oomKills(group: TaskCgroup): number {
    const mem = this.#dir('memory', group);
    return mem ? (readKeyed(join(mem, 'memory.oom_control')).get('oom_kill') ?? 0) : 0;
  }

  stats(group: TaskCgroup): CgroupStats {
    const mem = this.#dir('memory', group);
    const m = mem ? readKeyed(join(mem, 'memory.stat')) : new Map<string, number>();
    const acct = this.#dir('cpuacct', group);
    const a = acct ? readKeyed(join(acct, 'cpuacct.stat')) : new Map<string, number>();
    const cpu = this.#dir('cpu', group);
    const c = cpu ? readKeyed(join(cpu, 'cpu.stat')) : new Map<string, number>();
    const userMs = ((a.get('user') ?? 0) * 1000) / USER_HZ;
    const systemMs = ((a.get('system') ?? 0) * 1000) / USER_HZ;
    const totalMs = acct ? readNumber(join(acct, 'cpuacct.usage')) / 1e6 : userMs + systemMs;
    return {
      memory: {
        rssBytes: m.get('total_rss') ?? m.get('rss') ?? 0,
        cacheBytes: m.get('total_cache') ?? m.get('cache') ?? 0,
        usageBytes: mem ? readNumber(join(mem, 'memory.usage_in_bytes')) : 0,
        maxUsageBytes: mem ? readNumber(join(mem, 'memory.max_usage_in_bytes')) : 0,
      },
      cpu: { userMs, systemMs, totalMs, throttledPeriods: c.get('nr_throttled') ?? 0, throttledMs: (c.get('throttled_time') ?? 0) / 1e6 },
      pids: this.pids(group),
      oomKills: this.oomKills(group),
    };
  }

  async remove(group: TaskCgroup, opts: { signal?: AbortSignal } = {}): Promise<void> {
    await this.killAll(group, opts);
    if (group.freezerDir && existsSync(group.freezerDir)) write(join(group.freezerDir, 'freezer.state'), 'THAWED', 'CGROUP_REMOVE_FAILED', group.name);
    for (const dir of group.dirs) await removeDir(dir, opts.signal);
  }

  list(): TaskCgroup[] {
    const names = new Set<string>();
    for (const parent of this.#parents.values()) {
      try {
        for (const e of readdirSync(parent, { withFileTypes: true })) if (e.isDirectory()) names.add(e.name);
      } catch {
        // no parent yet
      }
    }
    return [...names].map((name) => this.#ref(name));
  }

  prune(): void {
    for (const parent of new Set(this.#parents.values())) {
      try {
        rmdirSync(parent);
      } catch {
        // still holds a task group, or gone
      }
    }
  }

  #ref(name: string): TaskCgroup {
    const dirs = new Set<string>();
    for (const parent of this.#parents.values()) dirs.add(join(parent, name));
    return {
      version: 'v1',
      name,
      dirs: [...dirs],
      ...(this.#parents.has('freezer') ? { freezerDir: join(this.#parents.get('freezer') as string, name) } : {}),
      ...(this.#parents.has('memory') ? { memoryDir: join(this.#parents.get('memory') as string, name) } : {}),
    };
  }

  #dir(c: Controller, group: TaskCgroup): string | undefined {
    const parent = this.#parents.get(c);
    if (!parent) return undefined;
    const dir = join(parent, group.name);
    return existsSync(dir) ? dir : undefined;
  }
}

/** controller -> path from /proc/self/cgroup lines `id:controllers:path`. */
function ownPaths(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line);
    if (!m || !m[1]) continue;
    for (const c of m[1].split(',')) out.set(c, m[2] as string);
  }
  return out;
}
