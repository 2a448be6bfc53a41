// A stand-in agent for the recovery tests: starts one task with the driver
// named in argv[2], prints its handle as one JSON line, then idles until it
// is killed (the test SIGKILLs it to simulate an agent crash). argv[5], when
// given, is the driver's tasksPerExecutor (a shared executor).
import { ExecDriver } from '../../src/client/drivers/index.js';
import { RawExecDriver } from '../../src/client/drivers/index.js';
import type { TaskConfig } from '../../src/client/drivers/index.js';

const [kind, stateDir, cfgJson, perExecutor] = process.argv.slice(2) as [string, string, string, string | undefined];
const opts = { stateDir, tasksPerExecutor: Number(perExecutor ?? 1) };
const driver = kind === 'exec' ? new ExecDriver(opts) : new RawExecDriver(opts);
const handle = await driver.startTask(JSON.parse(cfgJson) as TaskConfig);
process.stdout.write(`${JSON.stringify(handle)}\n`);
setInterval(() => undefined, 60_000);
