import { join } from 'node:path';
import type { Clock, Logger } from '../../lib/index.js';
import { ExecDriver } from './exec-driver.js';
import { RawExecDriver } from './raw-exec-driver.js';
import type { TaskDriver } from './task-driver.js';

/**
 * Berth's drivers by name ('raw_exec', 'exec'), their executor state under
 * `stateDir/<driver>`. Keep stateDir short: control sockets live below it.
 */
export function createDrivers(opts: { stateDir: string; logger?: Logger; clock?: Clock }): Map<string, TaskDriver> {
  const common = { ...(opts.logger ? { logger: opts.logger } : {}), ...(opts.clock ? { clock: opts.clock } : {}) };
  return new Map<string, TaskDriver>([
    ['raw_exec', new RawExecDriver({ ...common, stateDir: join(opts.stateDir, 'raw_exec') })],
    ['exec', new ExecDriver({ ...common, stateDir: join(opts.stateDir, 'exec') })],
  ]);
}
