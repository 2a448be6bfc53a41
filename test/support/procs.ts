// The test kit's one reading of /proc: the host's processes (and mounts) as a
// test sees them (command line, working directory, parent, environment), and the rules
// that pick Berth's processes out of them. Every test that looks for a task,
// an executor or a leftover process asks here, so that "an executor" means
// the same thing in every file.

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** One process as /proc shows it. */
export interface Proc {
  pid: number;
  ppid: number;
  /** Its command line, arguments joined by spaces. */
  cmd: string;
  /** Its working directory ('' when unreadable); an executor's is its state dir. */
  cwd: string;
  env: Record<string, string>;
}

/** The parent of process `pid` (0 once it is gone). Never throws. */
export function parentOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return 0;
  }
}

/** Process `pid` as /proc shows it, or undefined once it is gone (or is a kernel thread). Never throws. */
export function readProc(pid: number): Proc | undefined {
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    const ppid = parentOf(pid);
    let cwd = '';
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`).replace(/ \(deleted\)$/, '');
    } catch {
      // A process being reaped, or not ours to read: no directory to match.
    }
    const env: Record<string, string> = {};
    try {
      for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
        const eq = kv.indexOf('=');
        if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
      }
    } catch {
      // Likewise.
    }
    return { pid, ppid, cmd, cwd, env };
  } catch {
    return undefined;
  }
}

/** Every process but this test's own, each read once. Never throws. */
export function processes(): Proc[] {
  const out: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const p = readProc(Number(entry));
    if (p) out.push(p);
  }
  return out;
}

/**
 * The pids of the processes whose command line (arguments joined by spaces)
 * contains `needle`, without those whose parent's does too: a shell running
 * `sleep` forks a copy of itself that holds the shell's command line until it
 * execs, and that copy is not another task. `all: true` keeps them (for
 * killing everything).
 */
export function pidsWith(needle: string, opts: { all?: boolean } = {}): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').includes(needle)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces and parentheses.
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* gone */
    }
  }
  return [...parents.keys()].filter((pid) => opts.all || !parents.has(parents.get(pid)!));
}

/** Whether `dir` is `root` or lies below it. */
function within(dir: string, root: string): boolean {
  return dir === root || dir.startsWith(`${root}/`);
}

/**
 * The task executors of the agents under `root`: processes running Berth's
 * executor (executor.mjs) whose working directory, their state dir, lies
 * under `root`. With `running: true` only those that run a task (have a
 * child): an agent starts spare executors ahead of need, and they run none.
 * `procs` is a scan already made (processes()), to match tasks and
 * executors against one moment.
 */
export function executorsUnder(root: string, opts: { running?: boolean; procs?: Proc[] } = {}): Proc[] {
  const procs = opts.procs ?? processes();
  const executors = procs.filter((p) => /executor\.[cm]js/.test(p.cmd) && p.cwd !== root && within(p.cwd, root));
  if (!opts.running) return executors;
  const parents = new Set(procs.map((p) => p.ppid));
  return executors.filter((e) => parents.has(e.pid));
}

/**
 * The pids, ascending, of the executors of one driver whose state dir is
 * exactly `dir` (their working directory): what a driver test started, not
 * another agent's. Never throws.
 */
export function executorsIn(dir: string): number[] {
  return processes()
    .filter((p) => /executor\.[cm]js/.test(p.cmd) && p.cwd === dir)
    .map((p) => p.pid)
    .sort((a, b) => a - b);
}

/** The task processes of the agents under `root`: their BERTH_TASK_DIR lies below it. */
export function tasksUnder(root: string, opts: { procs?: Proc[] } = {}): Proc[] {
  const procs = opts.procs ?? processes();
  return procs.filter((p) => (p.env['BERTH_TASK_DIR'] ?? '').startsWith(`${root}/`));
}

/**
 * SIGKILLs every process whose working directory is at or under `root`
 * (task executors and tasks an agent killed with SIGKILL left running: their
 * cwd is their task directory) and returns their pids. For a kit's final
 * clean-up, after its agents are gone. Never throws.
 */
export function killProcessesUnder(root: string): number[] {
  const killed: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${pid}/cwd`).replace(/ \(deleted\)$/, '');
      if (!within(cwd, root)) continue;
      process.kill(pid, 'SIGKILL');
      killed.push(pid);
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return killed;
}

/** Mount points (from /proc/self/mountinfo) at or under `root`. */
export function mountsUnder(root: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((p) => within(p, root));
}

/** SIGKILLs every process whose command line names `needle` (a test's directory); never throws. */
export function killProcessesNaming(needle: string): number[] {
  const killed: number[] = [];
  for (const pid of pidsWith(needle, { all: true })) {
    if (pid === process.pid) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed.push(pid);
    } catch {
      /* gone */
    }
  }
  return killed;
}
