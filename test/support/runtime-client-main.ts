// Runs a node agent (Client) as its own process, for end-to-end tests and
// benchmarks, until the `berth agent` command exists. Usage:
//   node --import tsx test/support/runtime-client-main.ts <options.json>
// The JSON holds ClientOptions' plain fields (dataDir, servers, token,
// nodeName, drivers, hostVolumes, heartbeatIntervalMs, csi, netnsPrefix,
// killTimeoutMs, retry) and `logFile`. Prints one line `{"ready":true,
// "nodeId":...}` once started. SIGTERM stops it leaving tasks running (an
// agent restart); SIGINT drains (every allocation stopped, volumes released).

import { createWriteStream, readFileSync } from 'node:fs';
import { Client, type ClientOptions } from '../../src/client/index.js';
import { createLogger } from '../../src/lib/index.js';

type Plain = Omit<ClientOptions, 'clock' | 'logger' | 'createDrivers' | 'createAllocRunner'> & { logFile?: string; logLevel?: string };

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: runtime-client-main.ts <options.json>\n');
  process.exit(2);
}
const opts = JSON.parse(readFileSync(file, 'utf8')) as Plain;
const { logFile, logLevel, ...clientOpts } = opts;
const logger = createLogger({ level: logLevel ?? 'info', ...(logFile ? { destination: createWriteStream(logFile, { flags: 'a' }) } : {}) });
const client = new Client({ ...clientOpts, logger });

let stopping = false;
async function stop(drain: boolean): Promise<void> {
  if (stopping) return;
  stopping = true;
  await client.stop({ drain });
  process.stdout.write(`${JSON.stringify({ stopped: true, drained: drain })}\n`);
  process.exit(0);
}
process.on('SIGTERM', () => void stop(false));
process.on('SIGINT', () => void stop(true));

try {
  await client.start();
  process.stdout.write(`${JSON.stringify({ ready: true, nodeId: client.nodeId, pid: process.pid })}\n`);
} catch (err) {
  process.stderr.write(`agent failed to start: ${(err as Error).message}\n`);
  process.exit(1);
}
