// What the chaos kit checks outside the API: the task and executor
// processes of a run (from /proc) and the writer's file. Private to
// test/chaos (see _harness.ts).

import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

export interface Proc {
  pid: number;
  ppid: number;
  cmd: string;
  cwd: string;
  env: Record<string, string>;
}

function readProc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    const env: Record<string, string> = {};
    for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      const eq = kv.indexOf('=');
      if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
    }
    return { pid, ppid, cmd, cwd, env };
  } catch {
    return undefined; // gone, or a kernel thread
  }
}

/**
 * The Berth task processes of this run (their BERTH_TASK_DIR lies under
 * `root`) and the executors (executor.mjs running in a state dir under `root`).
 */
export function scanProcesses(root: string): { tasks: Proc[]; executors: Proc[] } {
  const tasks: Proc[] = [];
  const executors: Proc[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const p = readProc(Number(entry));
    if (!p) continue;
    if ((p.env['BERTH_TASK_DIR'] ?? '').startsWith(`${root}/`)) tasks.push(p);
    else if (p.cmd.includes('executor.mjs') && p.cwd.startsWith(`${root}/`)) executors.push(p);
  }
  return { tasks, executors };
}

export { alive } from '../support/runtime-cluster.js';

// ---------------------------------------------------------------- the writer's file

/** Reads the writer's lines `<alloc> <pid> <n>` and reports what breaks the rules from line `from` on. */
export function checkLines(text: string, from: number): { lines: number; problems: string[]; twoWriters: number } {
  const lines = text.split('\n').filter((l) => l !== '');
  const last = new Map<string, number>();
  const closed = new Set<string>();
  const problems: string[] = [];
  let twoWriters = 0;
  let prev = '';
  lines.forEach((line, i) => {
    const m = /^(\S+) (\d+) (\d+)$/.exec(line);
    const report = (what: string): void => {
      if (i >= from) problems.push(`line ${i + 1} "${line}": ${what}`);
    };
    if (!m) return report('not a writer line (torn or foreign)');
    const key = `${m[1]} ${m[2]}`;
    const n = Number(m[3]);
    if (key !== prev) {
      if (prev) closed.add(prev);
      if (closed.has(key)) {
        if (i >= from) twoWriters++;
        report(`writer ${key} wrote again after writer ${prev} had started: two live writers on a single-writer volume`);
      }
      prev = key;
    }
    const before = last.get(key) ?? 0;
    if (n <= before) report(`repeats line ${n} of writer ${key} (it was at ${before})`);
    else if (n !== before + 1) report(`lines ${before + 1}..${n - 1} of writer ${key} never reached the volume`);
    last.set(key, Math.max(before, n));
  });
  return { lines: lines.length, problems, twoWriters };
}
