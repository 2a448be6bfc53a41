// A node's allocation sync, per change (section `alloc-sync` of `npm run
// bench`): one node holding N (BENCH_SYNC_ALLOCS, 200) allocations of N
// one-task jobs on a real Server (SQLite, HTTP on loopback), watched by the
// agent's own AllocWatcher and ServerApi, in two ways:
//
// - incremental (this build): the blocking read answers IDs and alloc modify
//   indexes; the node pulls only what the server changed;
// - whole list (the old protocol, still served to old agents and read from
//   old servers): every change resends every allocation with its job.
//
// Two kinds of change, each applied one at a time and followed until the
// watcher has read past it: the node's own status reports (one allocation
// starts running, with its task events: what a burst of starts is made of),
// and server changes (a job's new version moves its allocation in place).
// Figures per change: bytes the node downloaded, allocations and jobs it
// received, requests, and the CPU of the process (server and node together).

import { join } from 'node:path';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { AllocWatcher, ServerApi, ServerConnError } from '../src/client/serverconn/index.js';
import { ManualClock, silentLogger } from '../src/lib/index.js';
import { Server } from '../src/server/index.js';
import type { Node } from '../src/structs/index.js';
import { round } from './_stats.js';
import { registration } from '../test/support/nomad-jobs.js';

const ALLOCS = Number(process.env['BENCH_SYNC_ALLOCS'] ?? 200);
const SERVER_CHANGES = Number(process.env['BENCH_SYNC_SERVER_CHANGES'] ?? 20);
const MGMT = 'bench-mgmt-token-0123';
const NODE_TOKEN = 'bench-node-token-0123';

const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

function job(id: string, cpuMhz: number): Record<string, unknown> {
  return {
    id,
    type: 'service',
    groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['3600'] }, resources: { cpuMhz, memoryMb: 10 } }] }],
  };
}

/** A node's report that its allocation's task runs, with the events a real start records. */
function runningReport(id: string): Record<string, unknown> {
  const at = Date.now();
  const events = ['Received', 'Task Setup', 'Started'].map((type, i) => ({ at: at + i, type, message: type === 'Started' ? 'Task started by client' : '', details: {} }));
  return { id, clientStatus: 'running', clientDescription: 'Tasks are running', taskStates: { t: { state: 'running', failed: false, restarts: 0, startedAt: at, finishedAt: 0, events } } };
}

/** A ServerApi that reads as a node of the old protocol: the indexes route "does not exist", so whole lists are read. */
class WholeListApi extends ServerApi {
  override allocationIndexes(): ReturnType<ServerApi['allocationIndexes']> {
    return Promise.reject(new ServerConnError('SERVER_REFUSED', 'GET /v1/node/:id/allocation-indexes: NOT_FOUND: no route', { status: 404, apiCode: 'NOT_FOUND', retryable: false }));
  }
}

interface PerChange {
  changes: number;
  bytesPerChange: number;
  allocationsPerChange: number;
  jobsPerChange: number;
  requestsPerChange: number;
  cpuMsPerChange: number;
}

export default async function bench(dir: string): Promise<Record<string, unknown>> {
  const server = new Server({
    dataDir: join(dir, 'server'),
    clock: new ManualClock(Date.now()),
    tokens: [
      { name: 'ops', secret: MGMT, role: 'management' },
      { name: 'agents', secret: NODE_TOKEN, role: 'node' },
    ],
    logger: silentLogger(),
  });
  const { url } = await server.start();
  /** A call; resolves with the body and the X-Nomad-Index of the answer (X-Berth-Index from routes not yet moved onto Nomad's API). */
  const call = async <T>(method: string, path: string, body: unknown, token = MGMT): Promise<{ body: T; index: number }> => {
    const res = await fetch(url + path, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${(await res.text()).slice(0, 200)}`);
    return { body: (await res.json()) as T, index: Number(res.headers.get('x-nomad-index') ?? res.headers.get('x-berth-index') ?? 0) };
  };
  try {
    const fingerprint = {
      name: 'sync-node',
      datacenter: 'dc1',
      httpAddr: '',
      drivers: { raw_exec: { detected: true, healthy: true, healthReason: 'healthy', networkModes: ['host'] } },
      resources: { cpuMhz: 1_000_000, memoryMb: 1_000_000 },
      attributes: {},
      csiControllerPlugins: {},
      csiNodePlugins: {},
    };
    const { node } = (await call<{ node: Node }>('POST', '/v1/node/register', { fingerprint }, NODE_TOKEN)).body;
    for (let i = 0; i < ALLOCS; i++) await call('PUT', '/v1/jobs', registration(job(`sync-${i}`, 5)));
    // The registrations' evaluations place after the answers: wait for every allocation on the node.
    let allocs: Array<{ id: string; jobId: string }> = [];
    for (const deadline = Date.now() + 60_000; allocs.length < ALLOCS && Date.now() < deadline; await sleep(50)) {
      allocs = (await call<Array<{ id: string; jobId: string }>>('GET', `/v1/internal/node/${node.id}/allocations`, undefined, NODE_TOKEN)).body;
    }
    if (allocs.length !== ALLOCS) throw new Error(`${allocs.length} allocations on the node, not ${ALLOCS}`);
    console.log(`  one node, ${ALLOCS} allocations of ${ALLOCS} jobs; per change, server and node in one process (load ${load()})`);

    let cpu = ALLOCS;
    const measure = async (mode: 'incremental' | 'whole list' | 'no node watching'): Promise<{ reports: PerChange; serverChanges: PerChange }> => {
      const api = mode === 'whole list' ? new WholeListApi({ address: url, token: NODE_TOKEN }) : new ServerApi({ address: url, token: NODE_TOKEN });
      const watcher = mode === 'no node watching' ? undefined : new AllocWatcher({ api, nodeId: node.id, waitMs: 60_000, onAllocations: () => undefined });
      watcher?.start();
      await watcher?.waitFirstList();
      // Followed until the watcher has read past the change; but an incremental node's blocking read is
      // not ended by its own status reports (nothing for it to pull): those it never reads past.
      let ownReports = false;
      const caughtUp = async (index: number): Promise<void> => {
        if (ownReports && mode === 'incremental') return;
        while (watcher && watcher.index < index) await sleep(1);
      };
      const counts = (): { allocations: number; jobs: number; answers: number; bytes: number } => ({ allocations: 0, jobs: 0, ...watcher?.counts, ...api.received });
      const phase = async (changes: number, change: (i: number) => Promise<number>): Promise<PerChange> => {
        const before = { ...counts(), cpu: process.cpuUsage() };
        for (let i = 0; i < changes; i++) await caughtUp(await change(i));
        const used = process.cpuUsage(before.cpu);
        const after = counts();
        return {
          changes,
          bytesPerChange: round((after.bytes - before.bytes) / changes),
          allocationsPerChange: round((after.allocations - before.allocations) / changes, 2),
          jobsPerChange: round((after.jobs - before.jobs) / changes, 2),
          requestsPerChange: round((after.answers - before.answers) / changes, 2),
          cpuMsPerChange: round((used.user + used.system) / 1000 / changes, 2),
        };
      };
    const reports = (): Promise<PerChange> =>
        phase(ALLOCS, async (i) => (await call('POST', `/v1/internal/node/${node.id}/allocations`, { allocations: [runningReport(allocs[i]!.id)] }, NODE_TOKEN)).index);
      const serverChanges = (): Promise<PerChange> =>
        phase(SERVER_CHANGES, async (i) => {
          cpu++;
          return (await call('PUT', '/v1/jobs', registration(job(allocs[i % ALLOCS]!.jobId, cpu)))).index;
        });
      try {
        ownReports = true;
        const own = await reports();
        ownReports = false;
        return { reports: own, serverChanges: await serverChanges() };
      } finally {
        await watcher?.stop();
        api.close();
      }
    };

    // The cost of the changes themselves (the report's write, the job's registration), then with a node watching.
    const none = await measure('no node watching');
    const whole = await measure('whole list');
    const incremental = await measure('incremental');
    const row = (name: string, p: PerChange): string =>
      `  ${name.padEnd(34)} ${String(p.bytesPerChange).padStart(9)} B  ${String(p.allocationsPerChange).padStart(6)} allocs  ${String(p.jobsPerChange).padStart(6)} jobs  ${String(p.requestsPerChange).padStart(4)} requests  ${String(p.cpuMsPerChange).padStart(6)} ms CPU`;
    console.log(`  per change                          downloaded  received             requests       CPU (server + node)`);
    console.log(row(`no node watching, node's report`, none.reports));
    console.log(row(`whole list, node's own report`, whole.reports));
    console.log(row(`incremental, node's own report`, incremental.reports));
    console.log(row(`no node watching, server change`, none.serverChanges));
    console.log(row(`whole list, server change`, whole.serverChanges));
    console.log(row(`incremental, server change`, incremental.serverChanges));
    const sync = (p: PerChange, base: PerChange): number => round(p.cpuMsPerChange - base.cpuMsPerChange, 2);
    console.log(
      `  the sync's own CPU per change: own report ${sync(whole.reports, none.reports)} -> ${sync(incremental.reports, none.reports)} ms, server change ${sync(whole.serverChanges, none.serverChanges)} -> ${sync(incremental.serverChanges, none.serverChanges)} ms`,
    );
    console.log(`  (load ${load()})`);
    return { allocations: ALLOCS, noNodeWatching: none, wholeList: whole, incremental, load: load() };
  } finally {
    await server.stop();
  }
}
