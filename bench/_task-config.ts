// The task config the driver benchmarks start: `/bin/sh -c script` with its
// own task and secrets dirs and logs under `dir`.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { TaskConfig } from '../src/client/drivers/index.js';

/** A `/bin/sh -c script` task `id` under `dir`; `opts` sets its kill timeout and resources. */
export function shellTask(dir: string, id: string, script: string, opts: Pick<TaskConfig, 'killTimeoutMs' | 'resources'>): TaskConfig {
  const allocDir = join(dir, 'alloc');
  const taskDir = join(allocDir, id, 'local');
  mkdirSync(taskDir, { recursive: true });
  return {
    id,
    allocId: 'bench',
    taskName: id,
    command: '/bin/sh',
    args: ['-c', script],
    env: {},
    taskDir,
    allocDir,
    secretsDir: join(allocDir, id, 'secrets'),
    mounts: [],
    logs: { disabled: false, dir: join(allocDir, 'alloc', 'logs'), maxFiles: 2, maxFileSizeMb: 1 },
    ...opts,
  };
}
