// @ts-check
// Reading the kernel's mount table, shared by the agent (mounts.ts, bundled)
// and the mount helper (mount-helper.mjs, its own process: plain ESM with
// JSDoc types, copied into dist beside it). Types: mount-table.d.mts.

import { readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname } from 'node:path';

/** Mount points (as the kernel names them) at or under `root`, deepest first. @param {string} root @returns {string[]} */
export function mountPointsUnder(root) {
  let real;
  try {
    real = realpathSync(root);
  } catch {
    return [];
  }
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_m, o) => String.fromCharCode(parseInt(o, 8))))
    .filter((m) => m === real || m.startsWith(`${real}/`))
    .sort((a, b) => b.length - a.length);
}

/**
 * Whether `dir` holds a file system other than its parent's (a tmpfs mounted
 * on it): one stat each, where reading the mount table costs more (long with
 * hundreds of allocations). A bind mount from the same file system is not
 * seen. False when `dir` is missing.
 * @param {string} dir
 */
export function hasOwnFileSystem(dir) {
  try {
    return statSync(dir).dev !== statSync(dirname(dir)).dev;
  } catch {
    return false;
  }
}
