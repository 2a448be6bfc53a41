// What the chaos kit checks outside the API: the task and executor
// processes of a run (from /proc) and the writer's file. Private to
// test/chaos (see _harness.ts).

import { executorsUnder, processes, tasksUnder, type Proc } from '../support/procs.js';

export type { Proc } from '../support/procs.js';

/**
 * The Berth task processes of this run (their BERTH_TASK_DIR lies under
 * `root`) and the executors (executor.mjs running in a state dir under
 * `root`), from one scan of /proc (test/support/procs.ts).
 */
export function scanProcesses(root: string): { tasks: Proc[]; executors: Proc[] } {
  const procs = processes();
  const tasks = tasksUnder(root, { procs });
  const executors = executorsUnder(root, { procs }).filter((e) => !tasks.includes(e));
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
