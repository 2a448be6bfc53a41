// Rolling update figures (section `rolling-update` of `npm run bench`).
//
// A service job of 10 allocations with `update { max_parallel = 2,
// min_healthy_time = "1s" }` is changed; the time from the registration to
// the deployment's success is measured on the real server parts (SQLite
// store, job service, the leader's deployment watcher on the real clock). A
// simulated node answers through the store as a client does: an allocation
// told to run reports running, one told to stop reports complete, at once,
// so the figure is the server's rollout: 5 batches, each held for its
// 1 s of health time. Goal: < 10 s + the health times (5 s).

import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/lib/index.js';
import { DeploymentWatcher, jobDeployments } from '../src/server/deployments/index.js';
import { JobService } from '../src/server/jobs/index.js';
import { SqliteStateStore, type StateStore } from '../src/server/state/index.js';
import { testNode } from '../test/support/scheduler-nodes.js';
import { round } from './_stats.js';

const COUNT = 10;

function spec(version: string) {
  return {
    id: 'bench-roll',
    groups: [
      {
        name: 'g',
        count: COUNT,
        update: { maxParallel: 2, minHealthyTimeMs: '1s', healthCheck: 'task_states', healthyDeadlineMs: '30s', progressDeadlineMs: '1m' },
        tasks: [{ name: 't', driver: 'exec', env: { VERSION: version }, resources: { cpuMhz: 10, memoryMb: 10 } }],
      },
    ],
  };
}

/** The node's side: follows the allocations and reports them running or stopped, as a client would. */
async function simulatedClient(store: StateStore, jobs: JobService, signal: AbortSignal): Promise<void> {
  let index = 0;
  while (!signal.aborted) {
    index = await store.blockUntil(['allocations'], index, { signal }).catch(() => index);
    for (const a of store.snapshot().list('allocations')) {
      const stopped = a.desiredStatus !== 'run';
      if (stopped ? a.clientStatus === 'complete' : a.clientStatus !== 'pending') continue;
      const task = { state: stopped ? ('dead' as const) : ('running' as const), failed: false, restarts: 0, startedAt: Date.now(), finishedAt: 0, events: [] };
      await jobs.updateAllocations(a.nodeId, [{ id: a.id, clientStatus: stopped ? 'complete' : 'running', taskStates: { t: task } }]);
    }
  }
}

async function until(store: StateStore, done: () => boolean): Promise<void> {
  let index = store.latestIndex();
  while (!done()) index = await store.blockUntil(['deployments'], index, { timeoutMs: 1000 });
}

export default async function rollingUpdate(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join('/tmp', 'berth-bench-roll-'));
  const store = SqliteStateStore.open(join(dir, 'state.db'));
  const jobs = new JobService({ store, logger: silentLogger() });
  const watcher = new DeploymentWatcher({ store, jobs, logger: silentLogger() });
  const stop = new AbortController();
  try {
    await store.write((txn) => {
      for (let i = 0; i < 4; i++) txn.put('nodes', testNode(`n${i}`));
    });
    await watcher.start();
    const client = simulatedClient(store, jobs, stop.signal);
    const latest = () => jobDeployments(store.snapshot(), 'default', 'bench-roll')[0];
    await jobs.register(spec('1'));
    await until(store, () => latest()?.status === 'successful');
    const start = performance.now();
    await jobs.register(spec('2'));
    await until(store, () => latest()?.jobVersion === 1 && latest()?.status !== 'running');
    const totalMs = performance.now() - start;
    const healthMs = (COUNT / 2) * 1000;
    stop.abort();
    await client;
    return {
      allocations: COUNT,
      maxParallel: 2,
      minHealthyTimeMs: 1000,
      status: latest()?.status,
      rolloutMs: round(totalMs),
      healthTimeMs: healthMs,
      overheadMs: round(totalMs - healthMs),
      goal: '< 10 s + the health times',
      loadAverage: loadavg().map((l) => l.toFixed(2)).join(' '),
    };
  } finally {
    stop.abort();
    await watcher.stop();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
