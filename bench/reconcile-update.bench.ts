// Reconciling a large job after a constraint change (section
// `reconcile-update` of `npm run bench`, BENCH_ONLY=reconcile-update).
//
// A service job of 1,000 allocations over 100 nodes (real SQLite store and
// job service) gets a job constraint that one node in ten no longer
// satisfies. Measured: `job plan` of the change (JobService.plan: the
// registration and its evaluation in a scratch transaction, the diff, the
// scheduler's decisions: 900 in-place updates, 100 stops and placements),
// and the reconciler alone on the same allocations. Goal (issue 37): the
// plan < 50 ms.

import { loadavg } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../src/lib/index.js';
import { JobService } from '../src/server/jobs/index.js';
import { reconcile } from '../src/server/scheduler/index.js';
import { rowKey, SqliteStateStore } from '../src/server/state/index.js';
import { testNode } from '../test/support/scheduler-nodes.js';
import { registerScheduled } from '../test/support/scheduled-jobs.js';
import { round } from './_stats.js';

const NODES = 100;
const ALLOCS = 1000;
const ROUNDS = Number(process.env['BENCH_RECONCILE_ROUNDS'] ?? 9);

const spec = (constrained: boolean) => ({
  id: 'bench-reconcile',
  ...(constrained ? { constraints: [{ attribute: '${meta.rack}', operator: '!=', value: 'r0' }] } : {}),
  groups: [{ name: 'g', count: ALLOCS, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 10, memoryMb: 10 } }] }],
});

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

/** Wall time in ms; with `cpu`, the process's CPU time is pushed too (less swayed by other load on a shared machine). */
function timed(fn: () => void, cpu?: number[]): number {
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  cpu?.push((c.user + c.system) / 1000);
  return wall;
}

export default async function reconcileUpdate(dir: string): Promise<Record<string, unknown>> {
  const store = SqliteStateStore.open(join(dir, 'state.db'));
  try {
    const jobs = new JobService({ store, logger: silentLogger() });
    store.writeNow((txn) => {
      for (let i = 0; i < NODES; i++) txn.put('nodes', testNode(`n${String(i).padStart(3, '0')}`, { meta: { rack: `r${i % 10}` }, resources: { cpuMhz: 100_000, memoryMb: 100_000 } }));
    });
    await registerScheduled(jobs, store, spec(false));
    const placed = store.snapshot().list('allocations').length;
    if (placed !== ALLOCS) throw new Error(`placed ${placed} of ${ALLOCS}`);

    const planMs: number[] = [];
    const planCpuMs: number[] = [];
    let outcome = '';
    for (let r = 0; r < ROUNDS; r++) {
      planMs.push(
        timed(() => {
          const plan = jobs.plan(spec(true));
          outcome = `${plan.inPlaceUpdates} in-place, ${plan.stops.length} stops, ${plan.placements.length} placements`;
        }, planCpuMs),
      );
    }

    // The reconciler alone, on the job as registered with the constraint (the plan's scratch write, kept).
    await jobs.register(spec(true));
    const snap = store.snapshot();
    const job = snap.get('jobs', rowKey('default', 'bench-reconcile'))!;
    const kept = new Map(snap.list('jobVersions').map((v) => [v.version, v.job]));
    const allocs = snap.list('allocations');
    const nodes = new Map(snap.list('nodes').map((n) => [n.id, n]));
    const reconcileMs: number[] = [];
    for (let r = 0; r < ROUNDS; r++) reconcileMs.push(timed(() => reconcile(job, allocs, nodes, Date.now(), { jobAt: (v) => kept.get(v) })));

    const plan = round(median(planMs));
    const planCpu = round(median(planCpuMs));
    const alone = round(median(reconcileMs));
    const load = loadavg().map((l) => round(l, 2)).join(' ');
    console.log(`job plan of a constraint change, ${ALLOCS} allocations over ${NODES} nodes (${outcome}): ${plan} ms, CPU ${planCpu} ms (p50 of ${ROUNDS}; goal < 50 ms)`);
    console.log(`reconcile alone, same change: ${alone} ms (p50 of ${ROUNDS}); load average ${load}`);
    return { nodes: NODES, allocs: ALLOCS, rounds: ROUNDS, planP50Ms: plan, planCpuP50Ms: planCpu, reconcileP50Ms: alone, outcome, goalMs: 50, loadAverage: load };
  } finally {
    store.close();
  }
}
