// @ts-check
// How a task's first process lands in the task's cgroup on a v1 host without
// a shell in front of it: the executor's own thread steps into the task's
// group in each hierarchy, forks the task there (a child starts in the
// cgroups of the thread that forked it), and steps back, all in one turn of
// its event loop, so nothing else of the executor runs meanwhile. The shell
// wrapper this replaces cost a fork and exec of /bin/sh a task start (about
// a third of a start's CPU on this kind of host). Where a step cannot be
// planned (v2, which moves whole processes only; a hierarchy whose mount
// this process cannot see; a pids limit below two), the caller keeps the
// wrapper (executor-spawn.mjs, JOIN_SCRIPT).

import fs from 'node:fs';
import path from 'node:path';

/**
 * @typedef {import('./executor.mjs').TaskCgroup} TaskCgroup
 * @typedef {{ into: string, back: string, root: string }} JoinStep
 */

/**
 * The v1 cgroup mounts this process sees, by mount point (symlinks resolved):
 * the controllers each carries, and the path in the hierarchy it shows at
 * that mount point.
 * @type {Array<{ point: string, root: string, options: Set<string> }> | undefined}
 */
let mounts;

/**
 * This thread's own group in each v1 hierarchy, by its controllers
 * ("cpu,cpuacct", "name=systemd"): read once, before any step (the thread
 * is at home then).
 * @type {Map<string, string> | undefined}
 */
let home;

function readMounts() {
  const out = [];
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const [fstype, , superOptions] = right.split(' ');
    if (fstype !== 'cgroup' || !superOptions) continue;
    const fields = left.split(' ');
    const root = fields[3];
    const point = fields[4];
    if (!root || !point) continue;
    out.push({ point: point.replace(/\\040/g, ' '), root, options: new Set(superOptions.split(',')) });
  }
  return out;
}

function readHome() {
  const out = new Map();
  for (const line of fs.readFileSync('/proc/thread-self/cgroup', 'utf8').split('\n')) {
    const m = /^\d+:([^:]+):(.*)$/.exec(line);
    if (m?.[1] && m[2] !== undefined) out.set(m[1], m[2]);
  }
  return out;
}

/**
 * Each parent directory of a task's group (the agent's group in one
 * hierarchy, the same for every task) resolved once: where this thread
 * goes home in that hierarchy, or null when the parent cannot be matched. A task's own group is a directory made in that parent
 * and a cgroup hierarchy holds no symlinks, so the parent's resolution is
 * the task's too: a start costs no walk of the path (lstat of each of its
 * components) and no look at the home's `tasks` file.
 * @type {Map<string, { back: string, root: string, pids: boolean } | null>}
 */
const parents = new Map();

/**
 * Where this thread goes back to after a step into `taskDir`'s hierarchy:
 * its own group's `tasks` file there, and the hierarchy's root `tasks` as
 * the last resort. Undefined when the hierarchy cannot be matched.
 * @param {string} taskDir
 * @returns {{ back: string, root: string, pidsMax?: string } | undefined}
 */
function homeFor(taskDir) {
  const parent = path.dirname(taskDir);
  let found = parents.get(parent);
  if (found === undefined) {
    found = resolveParent(parent);
    // A parent not there yet (no task group made in it) is looked at again next time.
    if (found !== undefined) parents.set(parent, found);
  }
  if (!found) return undefined;
  return { back: found.back, root: found.root, ...(found.pids ? { pidsMax: path.join(taskDir, 'pids.max') } : {}) };
}

/**
 * This thread's home in the hierarchy of a task group's parent `dir` (its
 * real path below a v1 mount); null when it cannot be matched, undefined
 * when `dir` does not exist (yet).
 * @param {string} dir
 * @returns {{ back: string, root: string, pids: boolean } | null | undefined}
 */
function resolveParent(dir) {
  mounts ??= readMounts();
  home ??= readHome();
  let real;
  try {
    real = fs.realpathSync(dir);
  } catch {
    return undefined;
  }
  const mount = mounts.find((m) => real === m.point || real.startsWith(`${m.point}/`));
  // A mount showing a sub-tree of its hierarchy (root other than /) would need the
  // thread's path rewritten against it: the wrapper handles that case as it always has.
  if (!mount || mount.root !== '/') return null;
  for (const [controllers, own] of home) {
    if (!controllers.split(',').every((c) => mount.options.has(c))) continue;
    const back = path.join(mount.point, own, 'tasks');
    if (!fs.existsSync(back)) return null;
    return { back, root: path.join(mount.point, 'tasks'), pids: mount.options.has('pids') };
  }
  return null;
}

/**
 * The steps that put a forked task into `cgroup` (one a hierarchy), or
 * undefined when the caller must use the shell wrapper instead.
 * @param {TaskCgroup} cgroup
 * @returns {JoinStep[] | undefined}
 */
export function joinPlan(cgroup) {
  if (cgroup.version !== 'v1') return undefined;
  /** @type {JoinStep[]} */
  const steps = [];
  for (const dir of cgroup.dirs) {
    const h = homeFor(dir);
    if (!h) return undefined;
    if (h.pidsMax) {
      // While stepped in, this thread counts against the task's pids limit: the fork then needs room for two.
      let max = 'max';
      try {
        max = fs.readFileSync(h.pidsMax, 'utf8').trim();
      } catch {
        return undefined;
      }
      if (max !== 'max' && Number(max) < 2) return undefined;
    }
    steps.push({ into: path.join(dir, 'tasks'), back: h.back, root: h.root });
  }
  return steps;
}

/**
 * Runs `fork` (a synchronous spawn) with this thread in the task's groups,
 * then brings the thread home whatever happened. A `tasks` file written
 * `0` moves the writing thread alone and spares the kernel the lock that
 * moving a whole process takes (see executor-spawn.mjs). Throws when a
 * group refused the thread (the task is not started then).
 * @template T
 * @param {JoinStep[]} steps
 * @param {() => T} fork
 * @returns {T}
 */
export function forkInGroups(steps, fork) {
  /** @type {JoinStep[]} */
  const entered = [];
  try {
    for (const step of steps) {
      try {
        fs.writeFileSync(step.into, '0');
      } catch (err) {
        throw new Error(`joining the task's cgroup failed: ${step.into}: ${/** @type {Error} */ (err).message}`);
      }
      entered.push(step);
    }
    return fork();
  } finally {
    for (const step of entered) goHome(step);
  }
}

/**
 * Back to this thread's own group; its hierarchy's root if that fails (a
 * thread left in a task's group would be killed with the task's processes).
 * @param {JoinStep} step
 */
function goHome(step) {
  try {
    fs.writeFileSync(step.back, '0');
  } catch {
    fs.writeFileSync(step.root, '0');
  }
}
