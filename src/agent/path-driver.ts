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
 * task sets PATH itself. Every other member, optional ones included, is
 * `inner`'s own (read through, methods bound to `inner`), so a method added
 * to TaskDriver later reaches the agent's drivers without a change here.
 */
export function withPathDirs(inner: TaskDriver, dirs: readonly string[]): TaskDriver {
  const prefix = dirs.join(':');
  const startTask: TaskDriver['startTask'] = (cfg: TaskConfig, opts): Promise<AnyTaskHandle> =>
    inner.startTask(cfg.env['PATH'] !== undefined ? cfg : { ...cfg, env: { ...cfg.env, PATH: `${prefix}:${DEFAULT_PATH}` } }, opts);
  const bound = new Map<PropertyKey, unknown>();
  return new Proxy(inner, {
    get(target, prop) {
      if (prop === 'startTask') return startTask;
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function') return value;
      let fn = bound.get(prop);
      if (fn === undefined) bound.set(prop, (fn = (value as (...args: unknown[]) => unknown).bind(target)));
      return fn;
    },
  });
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
