// A task driver that puts directories in front of its tasks' PATH: the dev
// agent gives every task `berth` (a shim running this checkout's
// bin/berth.js), so the examples' plugin job can run `berth plugin hostpath`.

import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AnyTaskHandle, TaskConfig, TaskDriver } from '../client/index.js';

/** The executor's default PATH (a task that sets its own PATH keeps it). */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Wraps `inner`: startTask adds `dirs` in front of the task's PATH unless the
 * task sets PATH itself. Every other call goes to `inner` unchanged.
 */
export function withPathDirs(inner: TaskDriver, dirs: readonly string[]): TaskDriver {
  const prefix = dirs.join(':');
  return {
    name: inner.name,
    capabilities: inner.capabilities,
    cgroups: inner.cgroups,
    fingerprint: () => inner.fingerprint(),
    startTask: (cfg: TaskConfig, opts?: Parameters<TaskDriver['startTask']>[1]): Promise<AnyTaskHandle> =>
      inner.startTask(cfg.env['PATH'] !== undefined ? cfg : { ...cfg, env: { ...cfg.env, PATH: `${prefix}:${DEFAULT_PATH}` } }, opts),
    recoverTask: (h) => inner.recoverTask(h),
    waitTask: (id, opts) => inner.waitTask(id, opts),
    stopTask: (id, opts) => inner.stopTask(id, opts),
    destroyTask: (id, opts) => inner.destroyTask(id, opts),
    inspectTask: (id) => inner.inspectTask(id),
    signalTask: (id, sig) => inner.signalTask(id, sig),
    taskStats: (id) => inner.taskStats(id),
    updateTaskResources: (id, r) => inner.updateTaskResources(id, r),
    reapOrphans: (keep) => inner.reapOrphans(keep),
    renewLeases: () => inner.renewLeases?.(),
    expectStarts: (count) => inner.expectStarts?.(count),
    execTaskStreaming: (id, opts) => inner.execTaskStreaming(id, opts),
    shutdown: () => inner.shutdown(),
  };
}

/**
 * Writes `<dir>/berth`, a shell script running `node <berthBin>` with this
 * process's node, and returns `dir`. Safe to repeat (rewrites it).
 */
export function writeBerthShim(dir: string, berthBin: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, 'berth');
  const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  writeFileSync(file, `#!/bin/sh\n# berth from the agent that started this task\nexec ${q(process.execPath)} ${q(berthBin)} "$@"\n`);
  chmodSync(file, 0o755);
  return dir;
}
