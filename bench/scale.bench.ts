// A thousand nodes: three `berth agent --server` processes on a three-member
// etcd, loaded by the node simulator (test/support/node-sim: simulated
// client nodes in this process that speak to the servers through the
// agent's own serverconn code, running no task). In turn:
//   1. 1,000 nodes register and heartbeat (heartbeat TTL 20 s, as Nomad
//      would pick for 1,000 nodes at 50 heartbeats a second): the heartbeat
//      round trip p50/p99 and the leader's CPU over 30 s at rest;
//   2. a 10,000-allocation batch job placed and reported complete;
//   3. a service job with one allocation per node running, then the leader
//      SIGKILLed: the time until every node's connection is back on the new
//      leader; then, after every node heartbeated three more times, none was
//      marked down and no allocation was lost or run twice;
//   4. 1,000 CSI volumes (a fake plugin's controller, served by one simulated
//      node) claimed and released by a 1,000-allocation batch job.
// SCALE_NODES, SCALE_ALLOCS, SCALE_VOLUMES, SCALE_REST_S shrink it (or grow it:
// SCALE_NODES=5000); SCALE_SIM_THREADS spreads the simulated nodes over that many
// worker threads (default one per 1,500 nodes, at most 4, above 1,500; 0 keeps them
// in the bench's thread); SCALE_START_RATE starts that many nodes a second (default
// all at once up to 1,500 nodes, else 250: a fleet booting, not 5,000 at once); SCALE_DEADLINE_S also bounds the registration; SCALE_LEASE_TTL sets the
// servers' lease TTL (default 5s). SCALE_SCENARIOS=2,4 runs only those (the
// nodes register whatever it says). etcd runs at its default request limit
// (--max-request-bytes 1.5 MiB) unless SCALE_ETCD_MAX_REQUEST_MIB says otherwise.
// SCALE_FAILOVER=0 skips scenario 3 (so that a
// profiled leader exits cleanly and writes its profile); SCALE_CPU_PROF=DIR
// writes each server's CPU profile there (`node --cpu-prof`) when it exits,
// named with its pid (printed). The servers and etcd members run each in a
// session of their own (as on machines of their own: Linux's autogroup then
// does not make them share one CPU share with the simulator's threads);
// SCALE_OWN_SESSIONS=0 keeps them in the bench's session. At rest the bench
// prints how long the leader's main thread and the simulator's threads waited
// for a CPU (runnable, not running): a round trip includes both waits.
// It takes a few minutes; run it alone with `BENCH_ONLY=scale npm run bench`.

import { volumeRequest } from '../test/support/csi-api.js';
import { SimCluster, simBatchJob, simServiceJob, simVolumeJob, threadCpuWaitMs } from '../test/support/node-sim/index.js';
import type { AllocationListStub as Allocation } from '../src/api/index.js';
import { performance } from 'node:perf_hooks';
import { loadavg } from 'node:os';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { round } from './_stats.js';
import { registration } from '../test/support/nomad-jobs.js';

const NODES = Number(process.env['SCALE_NODES'] ?? 1000);
const ALLOCS = Number(process.env['SCALE_ALLOCS'] ?? 10_000);
const VOLUMES = Number(process.env['SCALE_VOLUMES'] ?? 1000);
const REST_S = Number(process.env['SCALE_REST_S'] ?? 30);
const FAILOVER = process.env['SCALE_FAILOVER'] !== '0';
const CPU_PROF = process.env['SCALE_CPU_PROF'];
/** The servers' lease TTL: how long a leader may go without renewing (a stalled process loses leadership after two thirds of it). */
const LEASE_TTL = process.env['SCALE_LEASE_TTL'] ?? '5s';
/** etcd's --max-request-bytes in MiB; unset: etcd's default (1.5 MiB), under which the servers keep every write. */
const ETCD_MAX_REQUEST_MIB = process.env['SCALE_ETCD_MAX_REQUEST_MIB'] ? Number(process.env['SCALE_ETCD_MAX_REQUEST_MIB']) : undefined;
/** How long one scenario may take before the bench gives up on it (printing how far it got). */
const SCENARIO_DEADLINE_S = Number(process.env['SCALE_DEADLINE_S'] ?? 300);
/** Worker threads the simulated nodes run in (0: the bench's own thread); default one per 1,500 nodes (at most 4) above 1,500, so the simulator is not what a figure measures. */
const SIM_THREADS = process.env['SCALE_SIM_THREADS'] !== undefined ? Number(process.env['SCALE_SIM_THREADS']) : NODES > 1500 ? Math.min(4, Math.ceil(NODES / 1500)) : 0;
/** Simulated nodes started a second (machines booting); 0: all at once (a cluster-wide restart). Default 0 up to 1,500 nodes, else 250. */
const START_RATE = process.env['SCALE_START_RATE'] !== undefined ? Number(process.env['SCALE_START_RATE']) : NODES > 1500 ? 250 : 0;
/** More node options for the servers, space-separated (e.g. `--trace-gc`: the leader's GC pauses at rest are then listed). */
const SERVER_NODE_ARGS = (process.env['SCALE_SERVER_NODE_ARGS'] ?? '').split(' ').filter(Boolean);
/** The servers and etcd in sessions of their own (default), or in the bench's (SCALE_OWN_SESSIONS=0). */
const OWN_SESSIONS = process.env['SCALE_OWN_SESSIONS'] !== '0';
const SCENARIOS = new Set((process.env['SCALE_SCENARIOS'] ?? '1,2,3,4').split(',').map(Number));

/** The machine's load averages (1, 5 min), printed beside every figure: the machine is shared. */
function load(): string {
  const [one, five] = loadavg();
  return `load ${round(one ?? 0)}/${round(five ?? 0)}`;
}

/** The q-th percentile of sorted samples. */
function percentile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((q / 100) * sorted.length))] ?? 0;
}

function terminal(a: Allocation): boolean {
  return a.ClientStatus === 'complete' || a.ClientStatus === 'failed' || a.ClientStatus === 'lost';
}

/** The open-file limit this process (and the servers it starts) runs under, from /proc/self/limits. */
function openFileLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
  return m?.[1] === 'unlimited' ? Infinity : Number(m?.[1] ?? Infinity);
}

export default async function scaleBench(): Promise<Record<string, unknown>> {
  // Measured at 300 nodes: about 3 sockets a node in the simulator and 3 in the leader, more while connections move.
  const fds = openFileLimit();
  if (fds < 4 * NODES + 1000) console.log(`  warning: open files limited to ${fds} (ulimit -n); ${NODES} nodes need about ${4 * NODES + 1000} in the simulator and in the leader`);
  const out: Record<string, unknown> = { nodes: NODES, simThreads: SIM_THREADS, ownSessions: OWN_SESSIONS, startPerSecond: START_RATE, leaseTtl: LEASE_TTL, etcdMaxRequestMiB: ETCD_MAX_REQUEST_MIB ?? 1.5 };
  // Node makes the profile directory only when a server exits: the logs written beside the profiles need it
  // before then (without it the bench threw before closing the cluster and left its servers and etcd running).
  if (CPU_PROF) mkdirSync(CPU_PROF, { recursive: true });
  const t0 = performance.now();
  const c = await SimCluster.start({
    nodes: NODES,
    heartbeatTtl: '20s',
    leaseTtl: LEASE_TTL,
    csi: VOLUMES > 0 && SCENARIOS.has(4),
    threads: SIM_THREADS,
    ownSessions: OWN_SESSIONS,
    ...(START_RATE > 0 ? { startPerSecond: START_RATE } : {}),
    progress: (registered, connected) => console.log(`    +${round((performance.now() - t0) / 1000)} s: ${registered} nodes registered, ${connected} connected; ${load()}`),
    ...(ETCD_MAX_REQUEST_MIB ? { etcdMaxRequestBytes: ETCD_MAX_REQUEST_MIB * 2 ** 20 } : {}),
    ...(CPU_PROF || SERVER_NODE_ARGS.length ? { serverNodeArgs: [...(CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`] : []), ...SERVER_NODE_ARGS] } : {}),
  }, AbortSignal.timeout(SCENARIO_DEADLINE_S * 1000));
  try {
    if (CPU_PROF) console.log(`  CPU profiles in ${CPU_PROF}: ${c.processes.servers.map((s) => `${s.name} pid ${s.run.child?.pid}`).join(', ')}`);
    out['registerAllMs'] = round(performance.now() - t0);
    // The servers' CPU from their start to every node registered and connected (their start, some 5 s each, included).
    const leaderNow = await c.leader();
    out['serverCpuToRegisteredS'] = c.processes.servers.map((s) => round(c.cpuSeconds(s), 1));
    console.log(`  servers' CPU from their start to all registered: ${c.processes.servers.map((s) => `${s.name}${s === leaderNow ? ' (leader)' : ''} ${round(c.cpuSeconds(s), 1)} s`).join(', ')}; ${load()}`);
    console.log(`  ${NODES} nodes registered and connected to the leader ${round((performance.now() - t0) / 1000)} s after the cluster started (${START_RATE ? `${START_RATE} started a second` : 'all started at once'}; ${SIM_THREADS || 'no'} sim threads)`);

    if (VOLUMES > 0 && SCENARIOS.has(4)) {
      const plugin = await fetch(`${(await c.leader()).url}/v1/plugin/csi/simcsi`, { headers: { authorization: `Bearer ${c.processes.mgmt}` } });
      out['pluginRowKiB'] = round((await plugin.text()).length / 1024);
      console.log(`  the CSI plugin's row with ${NODES} node instances: ${out['pluginRowKiB']} KiB`);
    }

    // 1. At rest.
    if (SCENARIOS.has(1)) await atRest(c, out);

    // 2. A batch job of ALLOCS allocations.
    if (ALLOCS > 0 && SCENARIOS.has(2)) await batchJob(c, out);

    // 3. Leader SIGKILL with every node connected and a service allocation on each.
    if (FAILOVER && SCENARIOS.has(3)) await failover(c, out);

    // 4. CSI volumes claimed and released.
    if (VOLUMES > 0 && SCENARIOS.has(4)) await csiVolumes(c, out);
  } finally {
    // Leadership lost during the run, from the servers' logs (kept beside the profiles with SCALE_CPU_PROF).
    const logs = c.processes.servers.map((s) => {
      const file = path.join(c.processes.dir, s.name, 'agent.log');
      return existsSync(file) ? readFileSync(file, 'utf8') : '';
    });
    console.log(`  leadership lost (by server): ${c.processes.servers.map((s, i) => `${s.name} ${(logs[i]?.match(/no longer leading/g) ?? []).length}`).join(', ')}; nodes marked down (by server): ${c.processes.servers.map((s, i) => `${s.name} ${(logs[i]?.match(/"msg":"node down"/g) ?? []).length}`).join(', ')}`);
    // What the simulated nodes saw fail (threaded fleets count their nodes' warnings).
    const warned = 'warningCounts' in c.fleet ? [...(c.fleet as { warningCounts(): Map<string, number> }).warningCounts()].sort((a, b) => b[1] - a[1]).slice(0, 8) : [];
    if (warned.length) console.log(`  the simulated nodes' warnings during the run: ${warned.map(([k, n]) => `${n} × ${k}`).join('; ')}`);
    if (CPU_PROF) c.processes.servers.forEach((s, i) => writeFileSync(path.join(CPU_PROF, `${s.name}.log`), logs[i] ?? ''));
    await c.close();
  }
  return out;
}

/** The full GCs a server's memory reclaimer ran so far (its `berth_agent_memory_reclaims`): each one stops its event loop. */
async function reclaimsOf(c: SimCluster, s: SimCluster['processes']['servers'][number]): Promise<number> {
  const res = await fetch(`${s.url}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${c.processes.mgmt}` } });
  return Number(/^berth_agent_memory_reclaims (\d+)/m.exec(await res.text())?.[1] ?? NaN);
}

/** A server's Prometheus text (its event-loop delay percentiles cover the time since the previous scrape, which this one starts anew). */
async function promText(c: SimCluster, s: SimCluster['processes']['servers'][number]): Promise<string> {
  return (await fetch(`${s.url}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${c.processes.mgmt}` } })).text();
}

/** The value of one sample line (`name{labels} value`), NaN when absent. */
function sample(text: string, name: string, labels = ''): number {
  const esc = (x: string): string => x.replace(/[{}"\\]/g, (ch) => `\\${ch}`);
  return Number(new RegExp(`^${esc(name)}${labels ? esc(`{${labels}}`) : ''} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
}

/** A histogram's cumulative bucket counts (le -> count) over all label sets whose labels end with `le`. */
function buckets(text: string, name: string, filter = ''): Map<number, number> {
  const out = new Map<number, number>();
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
    const labels = m[1] ?? '';
    const bound = /le="([^"]+)"/.exec(labels)?.[1];
    if (bound === undefined || (filter && !labels.includes(filter))) continue;
    const le = bound === '+Inf' ? Infinity : Number(bound);
    out.set(le, (out.get(le) ?? 0) + Number(m[2]));
  }
  return out;
}

/** The bound of the bucket holding the q-th percentile of the observations between two scrapes' cumulative buckets. */
function bucketPercentile(before: Map<number, number>, after: Map<number, number>, q: number): number {
  const les = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
  if (total <= 0) return 0;
  for (const le of les) if ((after.get(le) ?? 0) - (before.get(le) ?? 0) >= (q / 100) * total) return le;
  return Infinity;
}

/** Scenario 1: every node heartbeating, REST_S seconds with nothing else to do. */
async function atRest(c: SimCluster, out: Record<string, unknown>): Promise<void> {
  const leader = await c.leader();
  // The leader's own view over the window: its event-loop delay (this scrape starts the percentiles anew), its GC pauses, its time per heartbeat.
  // Being the first scrape, it also tells the same from the leader's start through the registrations.
  const prom0 = await promText(c, leader);
  const reclaims0 = await Promise.all(c.processes.servers.map((s) => reclaimsOf(c, s)));
  const hbStart = buckets(prom0, 'berth_node_heartbeat_seconds');
  const hbStartN = hbStart.get(Infinity) ?? 0;
  out['leaderDuringRegistration'] = {
    loopDelayMs: { p99: round(sample(prom0, 'nodejs_eventloop_lag_p99_seconds') * 1000, 1), max: round(sample(prom0, 'nodejs_eventloop_lag_max_seconds') * 1000, 1) },
    heartbeatsAnswered: { count: hbStartN, meanMs: hbStartN ? round((sample(prom0, 'berth_node_heartbeat_seconds_sum') * 1000) / hbStartN, 2) : 0, p99UnderMs: round(bucketPercentile(new Map(), hbStart, 99) * 1000, 1), over1s: hbStartN - (hbStart.get(1) ?? 0) },
  };
  console.log(`  the leader from its start through the registrations: ${JSON.stringify(out['leaderDuringRegistration'])}`);
  const stdout0 = leader.run.stdout.length;
  c.fleet.takeHeartbeats();
  const followers = c.processes.servers.filter((s) => s !== leader);
  const cpu0 = c.cpuSeconds(leader);
  const fcpu0 = followers.map((s) => c.cpuSeconds(s));
  const loop0 = c.fleet.loopTotals();
  // Each server's main thread (0 for one not running).
  const serverWaitMs = (pid: number | undefined): number => (pid === undefined ? 0 : threadCpuWaitMs(pid));
  const wait0 = c.processes.servers.map((s) => serverWaitMs(s.run.child?.pid));
  const simCpu0 = process.cpuUsage();
  const load0 = loadavg()[0] ?? 0;
  await new Promise((r) => setTimeout(r, REST_S * 1000));
  const cpu = (c.cpuSeconds(leader) - cpu0) / REST_S;
  // Runnable but not running, as a share of the window: the leader's main thread (each server's) and each simulator thread.
  const waits = c.processes.servers.map((s, i) => (serverWaitMs(s.run.child?.pid) - (wait0[i] ?? 0)) / (REST_S * 10));
  const simWaits = c.fleet.loopTotals().map((l, i) => (l.cpuWaitMs - (loop0[i]?.cpuWaitMs ?? 0)) / (REST_S * 10));
  out['cpuWaitAtRestPct'] = { servers: Object.fromEntries(c.processes.servers.map((s, i) => [`${s.name}${s === leader ? ' (leader)' : ''}`, round(waits[i] ?? 0, 1)])), simulatorThreads: simWaits.map((w) => round(w, 1)) };
  const fcpu = followers.map((s, i) => (c.cpuSeconds(s) - (fcpu0[i] ?? 0)) / REST_S);
  // The simulator's own load: each of its threads' event-loop use (busiest first: a busy loop delays the round trips it times), and its CPU.
  const simLoops = c.fleet.loopTotals().map((l, i) => {
    const active = l.active - (loop0[i]?.active ?? 0);
    return active / Math.max(1, active + l.idle - (loop0[i]?.idle ?? 0));
  }).sort((a, b) => b - a);
  const simCpu = process.cpuUsage(simCpu0);
  // The simulator threads' own event-loop delay over the window (each thread's longest in each 100 ms; 5 ms resolution, included).
  const simDelays = c.fleet.loopTotals().flatMap((l, i) => l.delays.slice(loop0[i]?.delays.length ?? 0)).sort((a, b) => a - b);
  out['simulatorLoopDelayMs'] = { windows: simDelays.length, p50: round(percentile(simDelays, 50), 1), p99: round(percentile(simDelays, 99), 1), max: round(simDelays.at(-1) ?? 0, 1), over50: simDelays.filter((d) => d > 50).length };
  const taken = c.fleet.takeHeartbeats();
  const hb = [...taken.ms].sort((a, b) => a - b);
  // The same round trips less the CPU wait of the simulator thread that timed each: a floor of the cluster's part (an answer may have come in after the wait).
  const hbLessSim = taken.ms.map((ms, i) => Math.max(0, ms - (taken.simWaitMs[i] ?? 0))).sort((a, b) => a - b);
  const simWaited = [...taken.simWaitMs].sort((a, b) => a - b);
  const prom = await promText(c, leader);
  const reclaims = await Promise.all(c.processes.servers.map(async (s, i) => (await reclaimsOf(c, s)) - (reclaims0[i] ?? 0)));
  const ms = (x: number): number => round(x * 1000, 2);
  out['leaderLoopDelayMs'] = { p50: ms(sample(prom, 'nodejs_eventloop_lag_p50_seconds')), p99: ms(sample(prom, 'nodejs_eventloop_lag_p99_seconds')), max: ms(sample(prom, 'nodejs_eventloop_lag_max_seconds')) };
  const gc = (t: string): { n: number; s: number } => ({ n: sample(t, 'nodejs_gc_duration_seconds_count', 'kind="major"') + sample(t, 'nodejs_gc_duration_seconds_count', 'kind="minor"'), s: sample(t, 'nodejs_gc_duration_seconds_sum', 'kind="major"') + sample(t, 'nodejs_gc_duration_seconds_sum', 'kind="minor"') });
  const gcLong = (t: string): number => { const b = buckets(t, 'nodejs_gc_duration_seconds'); return (b.get(Infinity) ?? 0) - (b.get(0.01) ?? 0); };
  out['leaderGc'] = { count: gc(prom).n - gc(prom0).n, ms: ms(gc(prom).s - gc(prom0).s), over10ms: gcLong(prom) - gcLong(prom0), majorMs: ms(sample(prom, 'nodejs_gc_duration_seconds_sum', 'kind="major"') - sample(prom0, 'nodejs_gc_duration_seconds_sum', 'kind="major"')) };
  // With --trace-gc: the leader's longest GC pauses in the window (V8's own line: "..., 12.3 / 0.0 ms ...").
  const traced = leader.run.stdout.slice(stdout0).split('\n').filter((l) => /Scavenge|Mark-Compact|Mark-sweep/i.test(l));
  if (traced.length) {
    const pauses = traced.map((l) => ({ ms: Number(/MB, ([\d.]+) \//.exec(l)?.[1] ?? 0), kind: /(Scavenge|Mark-Compact|Mark-sweep)/i.exec(l)?.[1] ?? '?' })).sort((a, b) => b.ms - a.ms);
    out['leaderGcTraced'] = { count: pauses.length, totalMs: round(pauses.reduce((n, p) => n + p.ms, 0)), longest: pauses.slice(0, 5).map((p) => `${p.kind} ${p.ms} ms`) };
  }
  const hb0 = buckets(prom0, 'berth_node_heartbeat_seconds');
  const hb1 = buckets(prom, 'berth_node_heartbeat_seconds');
  const handled = (hb1.get(Infinity) ?? 0) - (hb0.get(Infinity) ?? 0);
  const handledS = sample(prom, 'berth_node_heartbeat_seconds_sum') - sample(prom0, 'berth_node_heartbeat_seconds_sum');
  out['leaderHeartbeatHandling'] = { count: handled, meanMs: handled ? round((handledS * 1000) / handled, 3) : 0, p50UnderMs: ms(bucketPercentile(hb0, hb1, 50)), p99UnderMs: ms(bucketPercentile(hb0, hb1, 99)) };
  out['memoryReclaimsAtRest'] = reclaims;
  out['heartbeatP50Ms'] = round(percentile(hb, 50));
  out['heartbeatP99Ms'] = round(percentile(hb, 99));
  out['heartbeatLessSimWaitMs'] = { p50: round(percentile(hbLessSim, 50)), p99: round(percentile(hbLessSim, 99)) };
  out['simThreadWaitInHeartbeatMs'] = { p50: round(percentile(simWaited, 50)), p99: round(percentile(simWaited, 99)), max: round(simWaited.at(-1) ?? 0) };
  out['heartbeatsPerS'] = round(hb.length / REST_S);
  out['leaderCpuAtRestPct'] = round(cpu * 100);
  // The load-independent figure: the leader's CPU per heartbeat (the whole cluster's heartbeats reach it, directly or forwarded).
  out['leaderCpuMsPerHeartbeat'] = hb.length ? round((cpu * REST_S * 1000) / hb.length, 3) : 0;
  out['followerCpuAtRestPct'] = fcpu.map((f) => round(f * 100));
  out['simulatorLoopBusyPct'] = simLoops.map((u) => round(u * 100));
  out['simulatorCpuPct'] = round(((simCpu.user + simCpu.system) / 1e6 / REST_S) * 100);
  out['loadAtRest'] = [round(load0), round(loadavg()[0] ?? 0)];
  console.log(
    `  leader's own view at rest: event-loop delay p50 ${(out['leaderLoopDelayMs'] as { p50: number }).p50} ms, p99 ${(out['leaderLoopDelayMs'] as { p99: number }).p99} ms, max ${(out['leaderLoopDelayMs'] as { max: number }).max} ms; GC ${JSON.stringify(out['leaderGc'])}${out['leaderGcTraced'] ? ` (traced: ${JSON.stringify(out['leaderGcTraced'])})` : ''}; heartbeats answered ${JSON.stringify(out['leaderHeartbeatHandling'])} (request read to answer sent)`,
  );
  console.log(`  the simulator threads' event-loop delay at rest (longest of each thread's 100 ms windows): ${JSON.stringify(out['simulatorLoopDelayMs'])}`);
  console.log(`  the timing simulator thread's own CPU wait within each round trip: ${JSON.stringify(out['simThreadWaitInHeartbeatMs'])} ms; round trips less it (a floor of the cluster's part): p50 ${(out['heartbeatLessSimWaitMs'] as { p50: number }).p50} ms, p99 ${(out['heartbeatLessSimWaitMs'] as { p99: number }).p99} ms`);
  console.log(`  waiting for a CPU at rest (runnable, not running; % of the window; main threads of the servers, each simulator thread): ${JSON.stringify(out['cpuWaitAtRestPct'])}${OWN_SESSIONS ? '' : ' (servers in the bench\'s session)'}; ${load()}`);
  console.log(
    `  at rest ${REST_S} s: ${hb.length} heartbeats, round trip p50 ${out['heartbeatP50Ms']} ms, p99 ${out['heartbeatP99Ms']} ms (goal < 50); leader CPU ${out['leaderCpuAtRestPct']} % of a core (goal < 50), ${out['leaderCpuMsPerHeartbeat']} ms per heartbeat; followers ${fcpu.map((f) => `${round(f * 100)} %`).join(', ')}; the simulator's event loop${simLoops.length > 1 ? 's' : ''} busy ${simLoops.map((u) => `${round(u * 100)} %`).join(', ')} (${SIM_THREADS || 'no'} worker threads; its CPU ${out['simulatorCpuPct']} % of a core); memory reclaims (full GCs) meanwhile ${c.processes.servers.map((s, i) => `${s.name}${s === leader ? ' (leader)' : ''} ${reclaims[i]}`).join(', ')} (load ${round(load0)} -> ${round(loadavg()[0] ?? 0)})`,
  );
}

/** CPU seconds (user + system) of `pid` so far; 0 once it is gone. */
function pidCpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // After "pid (comm) ": utime is field 11, stime 12, in clock ticks (100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** The pids of this process's etcd children (the cluster's members). */
function etcdPids(): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (comm === 'etcd' && ppid === process.pid) out.push(Number(d));
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** This process's CPU seconds so far (the node simulator and the bench's own polling). */
function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/** When a sampled count first reached each share of `total` (ms since the start), as "10% 1.2 s, ...". */
function marks(samples: ReadonlyArray<{ ms: number; n: number }>, total: number): string {
  return [0.01, 0.1, 0.5, 0.9, 1]
    .map((share) => {
      const hit = samples.find((s) => s.n >= Math.ceil(share * total));
      return `${Math.round(share * 100)}% ${hit ? `${round(hit.ms / 1000, 2)} s` : '-'}`;
    })
    .join(', ');
}

/**
 * Scenario 2: a batch job of ALLOCS allocations placed (in parts, each one
 * store write under etcd's request limit), run by the simulated nodes and
 * reported complete (their reports written in batches): the time to placed
 * and to all complete, how many writes each took, and the leader's CPU.
 */
async function batchJob(c: SimCluster, out: Record<string, unknown>): Promise<void> {
  const leader = await c.leader();
  await c.fleet.fresh();
  const syncBefore = c.fleet.syncCounts();
  const cpu0 = c.cpuSeconds(leader);
  const servers0 = c.processes.servers.map((s) => c.cpuSeconds(s));
  const etcds = etcdPids();
  const etcd0 = etcds.map(pidCpuSeconds);
  const self0 = selfCpuSeconds();
  const t = performance.now();
  const wall0 = Date.now();
  const signal = AbortSignal.timeout(SCENARIO_DEADLINE_S * 1000);
  // Watched through the job's evaluation and status (small answers): reading 10,000 allocations every
  // quarter of a second would cost the servers more than placing them.
  let placedNow = 0;
  let status = '';
  // The placed count at each poll, and the simulator's finished count every 50 ms: the phases' timeline.
  const placedAt: Array<{ ms: number; n: number }> = [];
  const ranAt: Array<{ ms: number; n: number }> = [];
  const sampler = setInterval(() => ranAt.push({ ms: performance.now() - t, n: c.fleet.finished.size }), 50);
  const progress = setInterval(() => {
    console.log(`    +${round((performance.now() - t) / 1000)} s: ${placedNow} placed, ${c.fleet.finished.size} run by the nodes, job ${status}; ${load()}`);
  }, 5_000);
  const poll = async (done: () => boolean): Promise<void> => {
    while (!done()) {
      if (signal.aborted) throw new Error(`scale-batch: not there after ${SCENARIO_DEADLINE_S} s (${placedNow} placed, ${c.fleet.finished.size} run, job ${status})`);
      const evals = await c.call<Array<{ BerthPlaced: number }>>('GET', '/v1/job/scale-batch/evaluations');
      placedNow = evals.body.reduce((n, e) => n + e.BerthPlaced, 0);
      placedAt.push({ ms: performance.now() - t, n: placedNow });
      status = (await c.call<{ Status: string }>('GET', '/v1/job/scale-batch')).body.Status;
      if (!done()) await new Promise((r) => setTimeout(r, 250));
    }
  };
  let [submitted, placedMs, ran, ms] = [0, 0, 0, 0];
  try {
    await c.callRetrying('PUT', '/v1/jobs', registration(simBatchJob('scale-batch', ALLOCS)));
    submitted = performance.now() - t;
    await poll(() => placedNow >= ALLOCS);
    placedMs = performance.now() - t;
    await c.fleet.until(() => c.fleet.finished.size >= ALLOCS, signal);
    ran = performance.now() - t;
    await poll(() => status === 'dead');
    ms = performance.now() - t;
  } finally {
    clearInterval(progress);
    clearInterval(sampler);
  }
  const etcdCpu = etcds.reduce((n, pid, i) => n + pidCpuSeconds(pid) - (etcd0[i] ?? 0), 0);
  const selfCpu = selfCpuSeconds() - self0;
  const followersCpu = c.processes.servers.reduce((n, s, i) => (s === leader ? n : n + c.cpuSeconds(s) - (servers0[i] ?? 0)), 0);
  // Read before the check below: answering the bench's list of every allocation (with their metrics, in Nomad's
  // shape) cost the leader about 1 s of CPU, which no node asked for (it was counted in the leader's figure).
  const cpu = c.cpuSeconds(leader) - cpu0;
  const serversCpu = c.processes.servers.reduce((n, s, i) => n + c.cpuSeconds(s) - (servers0[i] ?? 0), 0);
  const allocs = (await c.call<Allocation[]>('GET', '/v1/job/scale-batch/allocations')).body;
  const indexes = new Set(allocs.map((a) => a.Name));
  const complete = allocs.filter((a) => a.ClientStatus === 'complete').length;
  out['batchAllocs'] = ALLOCS;
  out['batchSubmitMs'] = round(submitted);
  out['batchPlacedMs'] = round(placedMs);
  out['batchAllCompleteMs'] = round(ms);
  // Writes: the placements' (one create index each) and the complete reports' (the final modify indexes).
  out['batchPlacementWrites'] = new Set(allocs.map((a) => a.CreateIndex)).size;
  // Each allocation index placed once (none lost, none doubled).
  out['batchAllocsStored'] = allocs.length;
  out['batchIndexesPlaced'] = indexes.size;
  out['batchCompleteWrites'] = new Set(allocs.map((a) => a.ModifyIndex)).size;
  out['batchLeaderCpuS'] = round(cpu, 2);
  // The load-independent figure: the leader's CPU per allocation placed and reported complete.
  out['batchLeaderCpuMsPerAlloc'] = round((cpu * 1000) / ALLOCS, 3);
  out['batchServersCpuS'] = round(serversCpu, 2);
  // Where the machine's CPU went meanwhile, per allocation: the leader, the other servers, etcd's members, this process (the simulated nodes).
  out['batchCpuMsPerAlloc'] = {
    leader: round((cpu * 1000) / ALLOCS, 3),
    followers: round((followersCpu * 1000) / ALLOCS, 3),
    etcd: round((etcdCpu * 1000) / ALLOCS, 3),
    simulator: round((selfCpu * 1000) / ALLOCS, 3),
  };
  out['batchLoad'] = load();
  console.log(
    `  batch job of ${ALLOCS}: submitted in ${round(submitted)} ms, placed in ${round(placedMs)} ms (${out['batchPlacementWrites']} writes), all run by the nodes in ${round(ran)} ms, all complete on the servers (the job dead) in ${round(ms)} ms (goal < 20000; the complete reports in ${out['batchCompleteWrites']} writes); ${allocs.length} allocations stored, ${indexes.size} distinct indexes, ${complete} complete; run twice: ${c.fleet.doubled().length}; leader CPU ${out['batchLeaderCpuS']} s (${out['batchLeaderCpuMsPerAlloc']} ms per allocation), all servers ${out['batchServersCpuS']} s; ${load()}`,
  );
  const perAlloc = out['batchCpuMsPerAlloc'] as Record<string, number>;
  console.log(
    `  CPU meanwhile: leader ${round(cpu, 2)} s, the other servers ${round(followersCpu, 2)} s, etcd (${etcds.length} members) ${round(etcdCpu, 2)} s, the simulator ${round(selfCpu, 2)} s; per allocation ${Object.entries(perAlloc).map(([k, v]) => `${k} ${v}`).join(', ')} ms (all ${round(Object.values(perAlloc).reduce((a, b) => a + b, 0), 3)} ms)`,
  );
  console.log(`  placed (as the evaluation counts it): ${marks(placedAt, ALLOCS)}; run by the nodes: ${marks(ranAt, ALLOCS)}`);
  // The same phases by the servers' own clock (the rows' times: CreateTime when a part was computed, ModifyTime
  // when the last report was applied), so that the bench's polling and its simulator's loop are not in them.
  const evalRows = (await c.call<Array<{ CreateTime: number; ModifyTime: number }>>('GET', '/v1/job/scale-batch/evaluations')).body;
  const sinceMs = (ns: number): number => round(ns / 1e6 - wall0);
  const created = allocs.map((a) => a.CreateTime).sort((x, y) => x - y);
  const modified = allocs.map((a) => a.ModifyTime).sort((x, y) => x - y);
  out['batchServerTimeline'] = {
    evaluationCreated: sinceMs(Math.min(...evalRows.map((e) => e.CreateTime))),
    firstPlaced: sinceMs(created[0] ?? 0),
    lastPlaced: sinceMs(created.at(-1) ?? 0),
    evaluationDone: sinceMs(Math.max(...evalRows.map((e) => e.ModifyTime))),
    lastReportApplied: sinceMs(modified.at(-1) ?? 0),
  };
  // Each part's compute start (its allocations share one CreateTime): the next part starts once the one before is written.
  const parts = [...new Set(created)].map(sinceMs);
  console.log(`  by the servers' clock (ms after the PUT): ${Object.entries(out['batchServerTimeline'] as Record<string, number>).map(([k, v]) => `${k} ${v}`).join(', ')}; each part computed from ${parts.join(', ')} ms`);
  await c.fleet.fresh();
  const sync = c.fleet.syncCounts();
  console.log(
    `  the nodes' allocation sync meanwhile: ${sync.answers - syncBefore.answers} answers in all (heartbeats and status reports too), ${sync.reads - syncBefore.reads} index reads, ${sync.pulls - syncBefore.pulls} pulls, ${sync.statusPosts - syncBefore.statusPosts} status POSTs, ${sync.allocations - syncBefore.allocations} allocations and ${sync.jobs - syncBefore.jobs} jobs received, ${round((sync.bytes - syncBefore.bytes) / 2 ** 20, 2)} MiB downloaded (heartbeats and claims included)`,
  );
}

/**
 * Scenario 4: VOLUMES CSI volumes (up to 1,000) created through the fake
 * plugin's controller, then claimed, published, run, released and
 * unpublished by a batch job with one allocation per volume: the time until
 * all are claimed, until all are released, and the leader's CPU.
 */
async function csiVolumes(c: SimCluster, out: Record<string, unknown>): Promise<void> {
  const count = Math.min(VOLUMES, 1000);
  const t = performance.now();
  for (let i = 0; i < count; i += 50) {
    await Promise.all(
      Array.from({ length: Math.min(50, count - i) }, (_v, k) =>
        c.callRetrying(
          'PUT',
          `/v1/volume/csi/${encodeURIComponent(`cv[${i + k}]`)}/create`,
          volumeRequest(`cv[${i + k}]`, { pluginId: 'simcsi', name: `cv-${i + k}`, capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] }),
        ),
      ),
    );
  }
  const created = performance.now() - t;
  const startedBefore = c.fleet.finished.size;
  const publishedBefore = c.fake?.callsTo('ControllerPublishVolume').length ?? 0;
  const leader = await c.leader();
  const cpu0 = c.cpuSeconds(leader);
  const servers0 = c.processes.servers.map((s) => c.cpuSeconds(s));
  const t2 = performance.now();
  const signal = AbortSignal.timeout(SCENARIO_DEADLINE_S * 1000);
  let claimsLeft = -1;
  const progress = setInterval(() => {
    const pub = (c.fake?.callsTo('ControllerPublishVolume').length ?? 0) - publishedBefore;
    const unpub = c.fake?.callsTo('ControllerUnpublishVolume').length ?? 0;
    console.log(`    +${round((performance.now() - t2) / 1000)} s: ${pub} published, ${c.fleet.finished.size - startedBefore} run, ${claimsLeft < 0 ? '?' : claimsLeft} claims held, ${unpub} unpublished; ${load()}`);
  }, 10_000);
  let claimedMs = 0;
  let ms = 0;
  let replaced = 0;
  try {
    await c.callRetrying('PUT', '/v1/jobs', registration(simVolumeJob('scale-csi', 'cv', count)));
    // Claimed: every volume claimed and published to its allocation's node (the controller saw it).
    await c.fleet.until(() => (c.fake?.callsTo('ControllerPublishVolume').length ?? 0) >= publishedBefore + count, signal);
    claimedMs = performance.now() - t2;
    // Every volume's allocation complete; one that failed (its claim refused) is replaced by the scheduler, and counted.
    const allocs = await c.waitAllocs('scale-csi', (l) => l.filter((a) => a.ClientStatus === 'complete').length >= count && l.every(terminal), { pollMs: 500, signal });
    const failed = allocs.filter((a) => a.ClientStatus !== 'complete');
    replaced = failed.length;
    if (failed.length > 0) console.log(`    ${failed.length} allocation(s) failed and were replaced, e.g. "${failed[0]?.ClientDescription ?? ''}"`);
    await c.fleet.until(() => c.fleet.finished.size >= startedBefore + count, signal);
    // Released: no volume holds a claim any more.
    for (let index = 0; claimsLeft !== 0; ) {
      if (signal.aborted) throw new Error(`scale-csi: ${claimsLeft} claims still held after ${SCENARIO_DEADLINE_S} s`);
      const r = await c.call<unknown[]>('GET', `/v1/volumes/csi/claims${index ? `?index=${index}&wait=5s` : ''}`);
      claimsLeft = r.body.length;
      index = r.index;
    }
    ms = performance.now() - t2;
  } finally {
    clearInterval(progress);
  }
  const cpu = c.cpuSeconds(leader) - cpu0;
  const serversCpu = c.processes.servers.reduce((n, s, i) => n + c.cpuSeconds(s) - (servers0[i] ?? 0), 0);
  const published = c.fake?.callsTo('ControllerPublishVolume').length ?? 0;
  const unpublished = c.fake?.callsTo('ControllerUnpublishVolume').length ?? 0;
  out['csiVolumes'] = count;
  out['csiCreateMs'] = round(created);
  out['csiAllClaimedMs'] = round(claimedMs);
  out['csiAllReleasedMs'] = round(ms);
  out['csiAllocsReplaced'] = replaced;
  out['csiLeaderCpuS'] = round(cpu, 2);
  out['csiLeaderCpuMsPerVolume'] = round((cpu * 1000) / count, 2);
  out['csiServersCpuS'] = round(serversCpu, 2);
  out['csiLoad'] = load();
  console.log(
    `  ${count} CSI volumes created in ${round(created)} ms; all claimed and published (${published} ControllerPublish) ${round(claimedMs)} ms after the job's POST, all run (${replaced} allocations failed and replaced), released and unpublished (${unpublished}) after ${round(ms)} ms; leader CPU ${out['csiLeaderCpuS']} s (${out['csiLeaderCpuMsPerVolume']} ms per volume), all servers ${out['csiServersCpuS']} s; ${load()}`,
  );
}

/**
 * Scenario 3: a service job with an allocation on each node (up to 1,000)
 * running, then the leader SIGKILLed; records how long until another server
 * leads and every node's connection is on it, and, after every node
 * heartbeated three more times, whether any node was marked down or any
 * allocation lost or doubled. The killed server is started again.
 */
async function failover(c: SimCluster, out: Record<string, unknown>): Promise<void> {
  const svcCount = Math.min(NODES, 1000);
  await c.callRetrying('PUT', '/v1/jobs', registration(simServiceJob('scale-svc', svcCount)));
  const before = await c.waitAllocs('scale-svc', (l) => l.length === svcCount && l.every((a) => a.ClientStatus === 'running'), { pollMs: 500 });
  const leader = await c.leader();
  await c.fleet.fresh();
  const hbBefore = c.fleet.heartbeatCounts();
  const killedAt = performance.now();
  await leader.run.stop('SIGKILL');
  const elected = await c.leader();
  const electedMs = performance.now() - killedAt;
  // How the nodes' connections arrive on the new leader: when half, then nine in ten, were there.
  const marks: Record<string, number> = {};
  const sampler = setInterval(() => {
    const n = c.fleet.connectedCount(elected.url);
    for (const [name, share] of [['half', 0.5], ['ninetyPct', 0.9]] as const) if (marks[name] === undefined && n >= share * NODES) marks[name] = round(performance.now() - killedAt);
  }, 100);
  const next = await c.allOnLeader().finally(() => clearInterval(sampler));
  const reconnectMs = performance.now() - killedAt;
  // Every node heartbeated three more times (a full TTL at TTL/3 intervals) past the kill.
  await c.fleet.until(() => c.fleet.heartbeatCounts().every((n, i) => n >= (hbBefore[i] ?? 0) + 3));
  const nodes = await c.nodes(next);
  const markedDown = nodes.filter((n) => n.Status !== 'ready' || n.StatusDescription !== 'registered').length;
  const after = (await c.call<Allocation[]>('GET', '/v1/job/scale-svc/allocations', undefined, next)).body;
  const same = after.length === before.length && after.every((a) => a.ClientStatus === 'running' && before.some((b) => b.ID === a.ID));
  out['failoverNewLeaderMs'] = round(electedMs);
  out['failoverAllReconnectedMs'] = round(reconnectMs);
  out['failoverHalfReconnectedMs'] = marks['half'] ?? null;
  out['failover90PctReconnectedMs'] = marks['ninetyPct'] ?? null;
  out['failoverNodesMarkedDown'] = markedDown;
  out['failoverAllocsUnchanged'] = same;
  console.log(
    `  leader ${leader.name} SIGKILLed: ${elected.name} leads after ${round(electedMs)} ms, half of the nodes reconnected after ${marks['half'] ?? '?'} ms, nine in ten after ${marks['ninetyPct'] ?? '?'} ms, all ${NODES} to ${next.name} after ${round(reconnectMs)} ms (goal < 10000); nodes marked down since: ${markedDown}; the ${svcCount} service allocations unchanged (none lost, none doubled): ${same}, run twice: ${c.fleet.doubled().length}`,
  );
  await leader.run.start();
  await c.call('DELETE', '/v1/job/scale-svc');
}
