// The node's task drivers as the Client opens them: the built-in drivers the
// agent's options enable (the others are shut down at once), then the
// external driver plugins, which join them or replace a built-in of the same
// name and send their task events to the task's runner. Private to
// src/client; the drivers themselves are drivers/ and driverplugins/.

import path from 'node:path';
import type { Clock, Logger } from '../lib/index.js';
import { createDrivers, type TaskDriver } from './drivers/index.js';
import type { ClientOptions, RunnerEntry } from './_client-types.js';

/** What opening the drivers reads and fills in: `drivers` gets every driver the node runs. */
export interface TaskDriversDeps {
  opts: ClientOptions;
  drivers: Map<string, TaskDriver>;
  runners: ReadonlyMap<string, RunnerEntry>;
  dataDir: string;
  root: Logger;
  log: Logger;
  clock: Clock;
}

/**
 * Builds the built-in drivers, keeps the enabled ones (exec by default, not
 * raw_exec), shuts the others down, then starts the driver plugins. Call
 * once, at start; throws what a driver's shutdown or the plugins' start throws.
 */
export async function openTaskDrivers(deps: TaskDriversDeps): Promise<void> {
  const { dataDir } = deps;
  const enabled: Record<string, boolean | undefined> = { exec: true, raw_exec: false, ...deps.opts.drivers };
  const built = (deps.opts.createDrivers ?? ((c) => createDrivers({ stateDir: path.join(c.dataDir, 'd'), logger: c.logger, clock: c.clock })))({
    logger: deps.root,
    clock: deps.clock,
    dataDir,
  });
  for (const [name, driver] of built) {
    if (enabled[name]) deps.drivers.set(name, driver);
    else await driver.shutdown();
  }
  await startExternalDrivers(deps);
}

/** Starts the driver plugins; their drivers join (or replace) the built-ins, their task events go to the task's runner. */
async function startExternalDrivers(deps: TaskDriversDeps): Promise<void> {
  const ext = deps.opts.externalDrivers;
  if (!ext) return;
  await ext.start();
  for (const [name, driver] of ext.drivers()) {
    const builtIn = deps.drivers.get(name);
    if (builtIn) {
      deps.log.info({ driver: name }, 'an external driver plugin replaces the built-in driver');
      await builtIn.shutdown();
    }
    deps.drivers.set(name, driver);
    driver.onTaskEvent?.((ev) => deps.runners.get(ev.allocId)?.runner.driverEvent?.(ev.taskName, ev.message, { ...ev.annotations }));
  }
}
