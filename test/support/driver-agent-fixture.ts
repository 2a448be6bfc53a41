// A stand-in agent for the recovery tests: starts one task with the driver
// named in argv[2], prints its handle as one JSON line, then idles until it
// is killed (the test SIGKILLs it to simulate an agent crash).
import { ExecDriver } from '../../src/client/drivers/index.js';
import { RawExecDriver } from '../../src/client/drivers/index.js';
import type { TaskConfig } from '../../src/client/drivers/index.js';

const [kind, stateDir, cfgJson] = process.argv.slice(2) as [string, string, string];
const driver = kind === 'exec' ? new ExecDriver({ stateDir }) : new RawExecDriver({ stateDir });
const handle = await driver.startTask(JSON.parse(cfgJson) as TaskConfig);
process.stdout.write(`${JSON.stringify(handle)}\n`);
setInterval(() => undefined, 60_000);
