// What an agent leaves behind on its host once it stopped: the processes and
// mounts of its data dir, and the network namespaces its records name. A drained agent (SIGINT) must leave none, and names
// each one it did leave; an agent that leaves its tasks running by design
// (SIGTERM) says which processes those are.

import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { mountsUnder } from './agent.js';

/** A process of the data dir that outlived its agent. */
export interface LeftProcess {
  pid: number;
  /** Its command line, cut to 200 characters. */
  command: string;
}

/** What is left of an agent's data dir on the host. */
export interface LeftBehind {
  processes: LeftProcess[];
  /** Mount points below the data dir, deepest first. */
  mounts: string[];
  /** Network namespaces the client wrote down (`<data dir>/client/network/*.json`) that still exist. */
  namespaces: string[];
}

/**
 * The processes whose command line names a path in `dataDir` or whose
 * working directory is in it (executors, log monitors, plugins, tasks),
 * other than `self` and its ancestors; the mounts below it; and the network
 * namespaces of the client's allocation network records that still exist. Reads
 * /proc; never throws (a process that ends meanwhile is skipped).
 */
export function leftBehind(dataDir: string, self = process.pid): LeftBehind {
  const root = path.resolve(dataDir);
  const inside = (p: string): boolean => p === root || p.startsWith(`${root}/`);
  const skip = ancestors(self);
  const processes: LeftProcess[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    // no /proc: nothing to tell
  }
  for (const e of entries) {
    const pid = Number(e);
    if (skip.has(pid)) continue;
    try {
      const argv = readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.length === 0) continue; // a kernel thread, or a zombie
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${e}/cwd`);
      } catch {
        // not ours to read
      }
      const named = argv.some((a) => a.split(/[=:,\s]/).some((part) => inside(part)));
      if (named || inside(cwd)) processes.push({ pid, command: argv.join(' ').slice(0, 200) });
    } catch {
      // gone meanwhile
    }
  }
  // The data dir itself may be a mount of the operator's (its own disk): only what is below it is the agent's.
  return { processes, mounts: mountsUnder(root).filter((m) => m !== root), namespaces: recordedNamespaces(path.join(root, 'client', 'network')) };
}

/** The namespace paths of the allocation network records in `dir` whose namespace still exists. */
function recordedNamespaces(dir: string): string[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const f of files) {
    try {
      const rec = JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as { path?: unknown; ownNetns?: unknown };
      if (typeof rec.path === 'string' && rec.ownNetns !== false && existsSync(rec.path)) out.push(rec.path);
    } catch {
      // a record being written, or not one
    }
  }
  return out.sort();
}

/** `pid` and the pids above it up to init: the agent and what started it are not "left". */
function ancestors(pid: number): Set<number> {
  const out = new Set<number>([pid]);
  let cur = pid;
  for (let i = 0; i < 64 && cur > 1; i++) {
    try {
      const stat = readFileSync(`/proc/${cur}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!ppid) break;
      out.add(ppid);
      cur = ppid;
    } catch {
      break;
    }
  }
  return out;
}

/** The lines an agent prints for what it left: one per process and per mount. */
export function describeLeftBehind(left: LeftBehind): string[] {
  return [...left.processes.map((p) => `process ${p.pid}: ${p.command}`), ...left.mounts.map((m) => `mount ${m}`), ...left.namespaces.map((n) => `network namespace ${n}`)];
}
