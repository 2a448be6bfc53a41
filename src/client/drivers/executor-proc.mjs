// @ts-check
// The /proc and cgroup steps of a task's life under its executor
// (executor.mjs): a process's start time and children (under exec a signal
// goes to unshare's child, the namespace's init), the wait for that init to
// enter its root, the wait for the cgroup join's report, the OOM kills the kernel
// counted and the kill of every process left in the task's cgroup. Plain ESM
// as the executor, copied into dist beside it.

import fs from 'node:fs';
import path from 'node:path';

/** @typedef {import('./executor.mjs').TaskCgroup} TaskCgroup */

/** @param {number} pid */
export function startTicks(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(rest[19]);
}

/** @param {number} pid @returns {number[]} */
export function childrenOf(pid) {
  const out = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(rest[1]) === pid) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/**
 * Resolves once the namespace's pid 1 (the child of unshare) has entered its
 * chroot, so that "started" means the task runs in its root; also when the
 * task ended first or after 10 s of setup.
 * @param {number} unsharePid @param {() => boolean} ended
 */
export async function chrooted(unsharePid, ended) {
  for (let i = 0; i < 5000 && !ended(); i++) {
    for (const c of childrenOf(unsharePid)) {
      try {
        if (fs.readlinkSync(`/proc/${c}/root`) !== '/') return;
      } catch {
        // not there yet
      }
    }
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** Every pid in the task's cgroup. @param {TaskCgroup} cg @returns {number[]} */
function cgroupPids(cg) {
  const all = new Set();
  for (const dir of cg.dirs) {
    try {
      for (const l of fs.readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n')) if (l) all.add(Number(l));
    } catch {
      // removed
    }
  }
  return [...all];
}

/** @param {string} file @param {string} value */
function tryWrite(file, value) {
  try {
    fs.writeFileSync(file, value);
    return true;
  } catch {
    return false;
  }
}

/**
 * Kills every process in the task's cgroup, so that no forked or daemonised
 * child outlives the task: v2 writes cgroup.kill; v1 freezes the group (no
 * fork meanwhile), SIGKILLs each pid, thaws. Resolves once it is empty (or
 * after ~5 s of trying). Same logic as src/client/cgroups' killAll.
 * @param {TaskCgroup} cg
 */
export async function killCgroup(cg) {
  const v2Kill = cg.version === 'v2' && cg.freezerDir && fs.existsSync(path.join(cg.freezerDir, 'cgroup.kill'));
  for (let round = 0; round < 500; round++) {
    const left = cgroupPids(cg);
    if (left.length === 0) return;
    if (v2Kill && cg.freezerDir) {
      if (round % 50 === 0) tryWrite(path.join(cg.freezerDir, 'cgroup.kill'), '1');
    } else {
      const freeze = cg.freezerDir ? path.join(cg.freezerDir, cg.version === 'v1' ? 'freezer.state' : 'cgroup.freeze') : undefined;
      if (freeze && round < 3) {
        tryWrite(freeze, cg.version === 'v1' ? 'FROZEN' : '1');
        for (let i = 0; i < 200 && cg.version === 'v1' && fs.readFileSync(freeze, 'utf8').trim() === 'FREEZING'; i++) {
          await new Promise((r) => setTimeout(r, 1));
        }
      }
      for (const p of cgroupPids(cg)) {
        try {
          process.kill(p, 'SIGKILL');
        } catch {
          // gone
        }
      }
      if (freeze) tryWrite(freeze, cg.version === 'v1' ? 'THAWED' : '0');
    }
    await new Promise((r) => setTimeout(r, round < 20 ? 1 : 10));
  }
}

/**
 * Resolves once the task's join wrapper reported on fd 3 that it is in its
 * cgroup (so "started" means the task runs under its limits), or closed fd 3
 * without (it failed: the task's exit tells).
 * @param {import('node:child_process').ChildProcess} child
 */
export function joined(child) {
  const pipe = /** @type {import('node:stream').Readable | undefined} */ (child.stdio[3]);
  if (!pipe) return Promise.resolve();
  return new Promise((resolve) => {
    pipe.once('data', resolve);
    pipe.once('close', resolve);
    pipe.once('error', resolve);
  }).then(() => pipe.destroy());
}

/** OOM kills the kernel counted in the group. @param {TaskCgroup | undefined} cg */
export function oomKills(cg) {
  if (!cg?.memoryDir) return 0;
  try {
    const file = cg.version === 'v1' ? 'memory.oom_control' : 'memory.events';
    const m = /^oom_kill (\d+)$/m.exec(fs.readFileSync(path.join(cg.memoryDir, file), 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}
