// A stand-in agent for the recovery tests: starts one task with the driver
// named in argv[2], prints its handle as one JSON line, then idles until it
// is killed (the test SIGKILLs it to simulate an agent crash). argv[5], when
// given, is the driver's tasksPerExecutor (a shared executor); argv[6]
// `spare` keeps a spare executor, as an agent's drivers do (the driver is
// fingerprinted first); a task config of `-` starts no task (it prints {}).
import { ExecDriver } from '../../src/client/drivers/index.js';
import { RawExecDriver } from '../../src/client/drivers/index.js';
import type { TaskConfig } from '../../src/client/drivers/index.js';

const [kind, stateDir, cfgJson, perExecutor, spare] = process.argv.slice(2) as [string, string, string, string | undefined, string | undefined];
const opts = { stateDir, tasksPerExecutor: Number(perExecutor ?? 1), spareExecutor: spare === 'spare' };
const driver = kind === 'exec' ? new ExecDriver(opts) : new RawExecDriver(opts);
await driver.fingerprint();
const handle = cfgJson === '-' ? {} : await driver.startTask(JSON.parse(cfgJson) as TaskConfig);
process.stdout.write(`${JSON.stringify(handle)}\n`);
setInterval(() => undefined, 60_000);
