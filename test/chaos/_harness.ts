// The chaos kit (issue 12): real Berth processes SIGKILLed at random
// instants, and after every cycle the invariants an operator relies on.
//
//   npm run chaos                         the long run: 100 cycles (dev agent, then server + client)
//   CHAOS_SEED=1234 npm run chaos         replays a run (the seed is printed at the start and the end)
//   CHAOS_CYCLES=20 npm run chaos         fewer or more cycles
//   CHAOS_CLUSTERS=pair npm run chaos     only one kind of cluster (dev, pair, or dev,pair)
//
// `npm run chaos` builds dist/ first (every process here runs bin/berth.js);
// test/chaos/chaos-short.test.ts runs a few cycles of the same kit in `npm
// test`.
//
// What runs (the web workload beside it is _web.ts's): a cluster (a `berth agent --dev`, or a `berth agent --server`
// plus a `berth agent --client` on a fixed server port), the hostpath plugin as a
// system job, one single-node-writer volume, and a service job whose task
// appends `<alloc> <pid> <n>` to a file in the volume every 100 ms. A cycle
// picks (from a seeded PRNG, so the plan depends on the seed alone) a phase
// (steady state, `job run`, `job stop`, plugin update), a victim (the dev
// agent, the server, the client, the plugin task, a task executor) and an
// instant; it starts the phase's command, SIGKILLs the victim at that instant,
// restarts a killed agent with the same data dir, resubmits what the operator
// wanted (a resubmit must always be enough: a job that does not converge
// after it is "wedged"), waits until the cluster has settled and checks:
//   - at most one write claim on the volume;
//   - the mounts under the run's directory are exactly those the running
//     allocations need (staging per volume, publish per allocation, the
//     task's bind, secrets tmpfs of known allocations);
//   - every task process (found in /proc by the BERTH_TASK_DIR in its
//     environment) belongs to an allocation the API shows running, and every
//     running allocation's task runs under its executor;
//   - the writer's file: every writer's lines are 1, 2, 3... with no gap and no
//     repeat, no writer writes again once another started, and the running
//     writer's lines reach the volume;
//   - an agent restart in steady state kept the writer's process.
// After the last cycle both jobs are stopped and the agents drained (SIGINT):
// nothing may stay mounted and no task or executor process may be left. The
// run prints the issue's figures and every violation with its cycle, and
// reports failure when there was any.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { AllocCheckStatuses, Allocation, AllocationListStub, CSIPlugin, CSIVolume, Deployment } from '../../src/api/index.js';
import { mountsUnder, type AgentRun, type BerthResult } from '../support/agent-run.js';
import { eventually } from '../support/eventually.js';
import { alive, checkLines, scanProcesses } from './_checks.js';
import { Cluster, PLUGIN_JOB, VOLUME_ID, WRITER_JOB, type ClusterKind } from './_cluster.js';
import { planCycles, type CyclePlan } from './_plan.js';
import type { ChaosReport, Violation } from './_report.js';
import { WEB_JOB, WebPart, webCleanUp, webLeaks, webSkip, webUnsettled } from './_web.js';

export { checkLines, scanProcesses } from './_checks.js';
export type { ClusterKind } from './_cluster.js';
export { planCycles, prng, type CyclePlan, type Phase, type Victim } from './_plan.js';
export { formatReport, type ChaosReport, type Violation } from './_report.js';

export interface ChaosOptions {
  seed: number;
  cycles: number;
  clusters: readonly ClusterKind[];
  /** How long a cluster may take to settle after a cycle before it counts as wedged. */
  settleMs?: number;
  /** Run the web workload (_web.ts) beside the writer. Default: when the CNI plugins are installed. */
  web?: boolean;
  log?: (line: string) => void;
}

const TERMINAL = new Set(['complete', 'failed', 'lost']);

// ---------------------------------------------------------------- the run

/** Runs the chaos plan and returns what it saw; never throws for a violation (only for a broken harness). */
export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const settleMs = opts.settleMs ?? 90_000;
  const web = opts.web ?? !webSkip();
  const plans = planCycles(opts.seed, opts.cycles, opts.clusters, web);
  const t0 = performance.now();
  const report: ChaosReport = { seed: opts.seed, cycles: opts.cycles, cyclesRun: 0, cleanCycles: 0, durationMs: 0, adoptionMs: [], wedged: 0, twoWriters: 0, linesChecked: 0, violations: [] };
  log(`chaos: seed ${opts.seed}, ${opts.cycles} cycles over ${opts.clusters.join(' + ')}${web ? ', with the web workload' : ''} (replay: CHAOS_SEED=${opts.seed} CHAOS_CYCLES=${opts.cycles} CHAOS_CLUSTERS=${opts.clusters.join(',')} npm run chaos)`);

  for (const kind of opts.clusters) {
    const root = mkdtempSync(path.join(tmpdir(), `bch${kind[0]}-`));
    const cluster = new Cluster(kind, root, web ? await WebPart.open(`${kind[0]}${(process.pid % 4096).toString(36)}`) : undefined);
    let linesFrom = 0;
    // A problem that outlives its cycle (an orphan stays an orphan) is listed once; it still spoils every cycle it is seen in.
    const listed = new Set<string>();
    let spoiled = false;
    const violate = (cycle: Violation['cycle'], what: string): void => {
      spoiled = true;
      if (listed.has(what)) return;
      listed.add(what);
      report.violations.push({ cycle, cluster: kind, what });
      log(`  VIOLATION (${kind}, cycle ${cycle}): ${what}`);
    };
    try {
      await setUp(cluster);
      for (const plan of plans.filter((p) => p.cluster === kind)) {
        spoiled = false;
        const outcome = await runCycle(cluster, plan, settleMs);
        report.cyclesRun++;
        if (outcome.adoptionMs !== undefined) report.adoptionMs.push(outcome.adoptionMs);
        for (const v of outcome.violations) violate(plan.index, v);
        if (outcome.wedged) {
          report.wedged++;
          violate(plan.index, `wedged: ${outcome.wedged}`);
        }
        if (!outcome.wedged) {
          const lines = await checkWriterFile(cluster, linesFrom, plan.writerAfter);
          linesFrom = lines.lines;
          report.twoWriters += lines.twoWriters;
          for (const p of lines.problems) violate(plan.index, `writer file: ${p}`);
        }
        if (!spoiled) report.cleanCycles++;
        log(
          `cycle ${plan.index}/${plans.length} ${kind} ${plan.phase}, SIGKILL ${plan.victim} at +${plan.delayMs} ms: ${spoiled ? 'VIOLATED' : 'ok'}${outcome.note ? ` (${outcome.note})` : ''}`,
        );
        if (outcome.wedged) {
          log(`  ${kind}: wedged, its remaining cycles are skipped`);
          break;
        }
      }
      const final = await finalStop(cluster, settleMs);
      const lines = await checkWriterFile(cluster, linesFrom, false).catch(() => ({ lines: linesFrom, problems: [], twoWriters: 0 }));
      report.linesChecked += lines.lines;
      for (const v of [...final, ...lines.problems]) violate('final', v);
    } catch (err) {
      violate('setup', `the harness could not go on: ${(err as Error).stack ?? String(err)}`);
    } finally {
      await cluster.kill();
      cleanUp(root);
      if (cluster.web) await webCleanUp(cluster.web);
    }
  }
  report.durationMs = performance.now() - t0;
  return report;
}

async function setUp(cluster: Cluster): Promise<void> {
  mkdirSync(cluster.hostpathDir, { recursive: true });
  await cluster.start();
  must(await cluster.cli(['job', 'run', cluster.pluginFile()]), 'job run (plugin)');
  await eventually('the hostpath plugin healthy', async () => pluginHealthy(cluster), { timeoutMs: 60_000, intervalMs: 200 });
  const vol = cluster.file(
    'volume.hcl',
    `id = "${VOLUME_ID}"\nname = "${VOLUME_ID}"\ntype = "csi"\nplugin_id = "hostpath"\ncapacity_min = "1MiB"\ncapability {\n  access_mode     = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`,
  );
  must(await cluster.cli(['volume', 'create', vol]), 'volume create');
  must(await cluster.cli(['job', 'run', cluster.writerFile()]), 'job run (writer)');
  if (cluster.web) must(await cluster.cli(['job', 'run', '--detach', cluster.webFile()]), 'job run (web)');
  const settled = await settle(cluster, true, 60_000);
  if (settled) throw new Error(`the cluster did not settle after setup: ${settled}`);
}

function must(r: BerthResult, what: string): void {
  if (r.code !== 0) throw new Error(`${what}: exit ${r.code}\n${r.stdout}${r.stderr}`);
}

async function pluginHealthy(cluster: Cluster): Promise<boolean> {
  const p = await cluster.get<CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined);
  return !!p && p.ControllersHealthy >= 1 && p.NodesHealthy >= 1;
}

/**
 * Waits until the cluster has converged on what the operator asked for: the
 * plugin healthy at its job's current version, every allocation meant to run
 * running, every other one terminal, the writer running (or not) and the
 * volume's claims those of the running writer. Returns undefined once so, or
 * the last reason it was not (wedged) after `ms`.
 */
async function settle(cluster: Cluster, writer: boolean, ms: number): Promise<string | undefined> {
  let reason = '';
  try {
    await eventually(
      'the cluster to settle',
      async () => {
        reason = (await unsettled(cluster, writer).catch((err: Error) => `the API: ${err.message}`)) ?? '';
        return reason === '';
      },
      { timeoutMs: ms, intervalMs: 250 },
    );
    return undefined;
  } catch {
    return `${reason || 'did not settle'} (after ${Math.round(ms / 1000)} s)\n${await describeState(cluster)}`;
  }
}

/** An allocation's last task events, oldest first: why its deployment judged it unhealthy, or what its undecided verdict waits on. */
function unhealthyEvents(a: AllocationListStub): string {
  return Object.entries(a.TaskStates ?? {})
    .flatMap(([n, t]) => (t.Events ?? []).slice(-6).map((e) => `        ${n}: ${new Date(e.Time / 1e6).toISOString().slice(11, 23)} ${e.Type}: ${e.DisplayMessage}`))
    .join('\n');
}

/** A live allocation whose deployment health is undecided: its service checks and last task events, what its verdict waits on. */
async function undecidedDetail(cluster: Cluster, a: AllocationListStub): Promise<string> {
  const checks = (await cluster.get<AllocCheckStatuses>(`/v1/allocation/${a.ID}/checks`)) ?? {};
  const rows = Object.values(checks).map((c) => `        check ${c.Service}/${c.Check}: ${c.Status} at ${new Date(c.Timestamp * 1000).toISOString().slice(11, 19)}: ${c.Output.slice(0, 200)}`);
  return [...(rows.length ? rows : ['        no check results reported']), unhealthyEvents(a)].join('\n');
}

/** What a wedged cluster looks like: its allocations and its plugin, for the report. */
async function describeState(cluster: Cluster): Promise<string> {
  try {
    const allocs = (await cluster.get<AllocationListStub[]>('/v1/allocations')) ?? [];
    const plugin = await cluster.get<CSIPlugin>('/v1/plugin/csi/hostpath');
    const rows: string[] = [];
    for (const a of allocs) {
      const health = a.DeploymentStatus?.Healthy;
      const undecided = a.DeploymentStatus && health == null && a.DesiredStatus === 'run' && a.ClientStatus === 'running';
      const detail = health === false ? `\n${unhealthyEvents(a)}` : undecided ? `\n${await undecidedDetail(cluster, a)}` : '';
      rows.push(
        `      alloc ${a.ID.slice(0, 8)} ${a.JobID} v${a.JobVersion} desired ${a.DesiredStatus} client ${a.ClientStatus} (${a.ClientDescription})${a.DeploymentStatus ? `; healthy ${String(health)}` : ''}; tasks ${Object.entries(a.TaskStates ?? {})
          .map(([n, t]) => `${n}=${t.State}${t.Events?.length ? ` last "${t.Events.at(-1)?.DisplayMessage ?? ''}"` : ''}`)
          .join(', ')}${detail}`,
      );
    }
    const deployments = (await cluster.get<Deployment[]>('/v1/deployments')) ?? [];
    const deploymentRows = deployments.map((d) => `      deployment ${d.ID.slice(0, 8)} ${d.JobID} v${d.JobVersion} ${d.Status} (${d.StatusDescription}); ${Object.entries(d.TaskGroups ?? {}).map(([g, s]) => `${g}: placed ${s.PlacedAllocs}, healthy ${s.HealthyAllocs}, unhealthy ${s.UnhealthyAllocs}, desired ${s.DesiredTotal}`).join('; ')}`);
    return [`      plugin hostpath: controllers ${plugin?.ControllersHealthy ?? '?'} healthy, nodes ${plugin?.NodesHealthy ?? '?'} healthy`, ...rows, ...deploymentRows].join('\n');
  } catch (err) {
    return `      (the API did not answer: ${(err as Error).message})`;
  }
}

async function unsettled(cluster: Cluster, writer: boolean): Promise<string | undefined> {
  if (!(await pluginHealthy(cluster))) return 'the hostpath plugin is not healthy';
  const allocs = (await cluster.get<AllocationListStub[]>('/v1/allocations')) ?? [];
  const nodes = (await cluster.get<Array<{ ID: string; Status: string }>>('/v1/nodes')) ?? [];
  const down = nodes.filter((n) => n.Status !== 'ready');
  if (down.length) return `node ${down.map((n) => `${n.ID.slice(0, 8)} ${n.Status}`).join(', ')}`;
  for (const a of allocs) {
    const terminal = TERMINAL.has(a.ClientStatus);
    // A terminal allocation may keep desired "run" once replaced; the live counts below say whether it was.
    if (!terminal && a.ClientStatus !== 'running') return `allocation ${a.ID.slice(0, 8)} (${a.JobID}) is ${a.ClientStatus}: ${a.ClientDescription}`;
    if (a.DesiredStatus !== 'run' && !terminal) return `allocation ${a.ID.slice(0, 8)} (${a.JobID}) desired ${a.DesiredStatus} is still ${a.ClientStatus}`;
    if (a.ClientStatus === 'running') {
      const dead = Object.entries(a.TaskStates ?? {}).filter(([, t]) => t.State !== 'running');
      if (dead.length) return `allocation ${a.ID.slice(0, 8)} (${a.JobID}) is running but task ${dead[0]![0]} is ${dead[0]![1].State}`;
    }
  }
  const live = (job: string): AllocationListStub[] => allocs.filter((a) => a.JobID === job && !TERMINAL.has(a.ClientStatus));
  const plugin = live(PLUGIN_JOB);
  if (plugin.length !== 1) return `${plugin.length} live plugin allocations`;
  const pluginJob = await cluster.get<{ Version: number }>(`/v1/job/${PLUGIN_JOB}`);
  if (pluginJob && plugin[0]!.JobVersion !== pluginJob.Version) return `the plugin allocation is at version ${plugin[0]!.JobVersion}, its job at ${pluginJob.Version}`;
  const writers = live(WRITER_JOB);
  if (writers.length !== (writer ? 1 : 0)) return `${writers.length} live writer allocations (want ${writer ? 1 : 0})`;
  const vol = await cluster.get<CSIVolume>(`/v1/volume/csi/${VOLUME_ID}`);
  if (!vol) return 'the volume is gone';
  const claims = vol.BerthClaims.map((c) => `${c.AllocationID.slice(0, 8)}:${c.Mode}:${c.State}`).sort();
  const want = writers.map((a) => `${a.ID.slice(0, 8)}:write:taken`);
  if (claims.join(',') !== want.join(',')) return `volume claims [${claims.join(', ')}], want [${want.join(', ')}]`;
  if (cluster.web) return webUnsettled(cluster.web, cluster.webWanted, (p) => cluster.get(p), allocs, cluster.nodeDir);
  return undefined;
}

interface CycleOutcome {
  violations: string[];
  wedged?: string;
  adoptionMs?: number;
  note?: string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function runningWriter(cluster: Cluster): Promise<{ allocId: string; pid: number } | undefined> {
  const { tasks } = scanProcesses(cluster.root);
  const top = tasks.find((t) => t.env['BERTH_JOB_ID'] === WRITER_JOB && t.cmd.startsWith('/bin/sh -c') && !tasks.some((o) => o.pid === t.ppid));
  return top ? { allocId: top.env['BERTH_ALLOC_ID'] ?? '', pid: top.pid } : undefined;
}

async function runCycle(cluster: Cluster, plan: CyclePlan, settleMs: number): Promise<CycleOutcome> {
  const out: CycleOutcome = { violations: [] };
  const writerBefore = await runningWriter(cluster);
  let action: Promise<BerthResult> | undefined;
  if (plan.phase === 'job-run') action = cluster.cli(['job', 'run', cluster.writerFile()]);
  if (plan.phase === 'job-stop') action = cluster.cli(['job', 'stop', WRITER_JOB]);
  if (plan.phase === 'plugin-update') {
    cluster.pluginGen++;
    action = cluster.cli(['job', 'run', cluster.pluginFile()]);
  }
  if (plan.phase === 'web-update' && cluster.web) {
    cluster.web.gen++;
    action = cluster.cli(['job', 'run', '--detach', cluster.webFile()]);
  }
  // The random instant: a plain timer is the point here (the kill lands wherever the system is).
  await sleep(plan.delayMs);

  let restarted: 'agent' | 'server' | 'client' | undefined;
  if (plan.victim === 'agent' || plan.victim === 'server' || plan.victim === 'client') {
    const a = cluster.agents.get(plan.victim) as AgentRun;
    a.child?.kill('SIGKILL');
    await a.exited;
    restarted = plan.victim;
  } else {
    const { tasks, executors } = scanProcesses(cluster.root);
    let pid: number | undefined;
    if (plan.victim === 'plugin') pid = tasks.find((t) => t.env['BERTH_JOB_ID'] === PLUGIN_JOB && t.cmd.includes('plugin hostpath'))?.pid;
    else pid = executors.sort((x, y) => x.pid - y.pid)[Math.floor(plan.pick * executors.length)]?.pid;
    if (pid === undefined) out.note = `no ${plan.victim} process at that instant`;
    else process.kill(pid, 'SIGKILL');
  }

  if (restarted) {
    const t = performance.now();
    await cluster.restart(restarted);
    const adopting = plan.phase === 'steady' && restarted !== 'server' && writerBefore;
    if (adopting) {
      // Back: the API answers, the node is ready and the writer's allocation runs with the very same process.
      await eventually(
        'the writer adopted',
        async () => {
          const a = await cluster.get<Allocation>(`/v1/allocation/${writerBefore.allocId}`).catch(() => undefined);
          const nodes = (await cluster.get<Array<{ Status: string }>>('/v1/nodes').catch(() => undefined)) ?? [];
          return a?.ClientStatus === 'running' && nodes.length > 0 && nodes.every((n) => n.Status === 'ready') && alive(writerBefore.pid);
        },
        { timeoutMs: 60_000, intervalMs: 20 },
      ).then(
        () => (out.adoptionMs = performance.now() - t),
        () => out.violations.push(`the ${restarted} came back but the writer's allocation ${writerBefore.allocId.slice(0, 8)} did not run again with its process ${writerBefore.pid} within 60 s`),
      );
      if (out.adoptionMs !== undefined) out.note = `back with its tasks in ${Math.round(out.adoptionMs)} ms`;
    }
  }
  const acted = action ? await action : undefined;
  if (acted && acted.code !== 0) out.note = [out.note, `the interrupted command exited ${acted.code}`].filter(Boolean).join('; ');

  // What the operator does next: ask again for what they wanted. It must be enough.
  const resubmits: Array<[string, string[]]> = [
    ['job run (plugin)', ['job', 'run', '--detach', cluster.pluginFile()]],
    plan.writerAfter ? ['job run (writer)', ['job', 'run', '--detach', cluster.writerFile()]] : ['job stop (writer)', ['job', 'stop', WRITER_JOB]],
    ...(cluster.web ? [['job run (web)', ['job', 'run', '--detach', cluster.webFile()]] as [string, string[]]] : []),
  ];
  for (const [what, args] of resubmits) {
    const r = await cluster.cli(args);
    if (r.code !== 0) out.violations.push(`resubmit ${what} exited ${r.code}: ${(r.stderr || r.stdout).trim().slice(0, 500)}`);
  }
  const wedged = await settle(cluster, plan.writerAfter, settleMs);
  if (wedged) {
    out.wedged = wedged;
    return out;
  }
  if (plan.phase === 'steady' && restarted && writerBefore) {
    const now = await runningWriter(cluster);
    if (now?.pid !== writerBefore.pid) out.violations.push(`the ${restarted} restart did not keep the writer's process (pid ${writerBefore.pid} -> ${now?.pid ?? 'none'})`);
  }
  out.violations.push(...(await inspect(cluster)));
  return out;
}

/** The invariants of a settled cluster: claims, mounts, processes. */
async function inspect(cluster: Cluster): Promise<string[]> {
  const problems: string[] = [];
  const allocs = (await cluster.get<AllocationListStub[]>('/v1/allocations')) ?? [];
  const vol = await cluster.get<CSIVolume>(`/v1/volume/csi/${VOLUME_ID}`);
  const writes = vol?.BerthClaims.filter((c) => c.Mode === 'write') ?? [];
  if (writes.length > 1) problems.push(`${writes.length} write claims on ${VOLUME_ID}: ${writes.map((c) => `${c.AllocationID.slice(0, 8)} ${c.State}`).join(', ')}`);

  const byId = new Map(allocs.map((a) => [a.ID, a]));
  const running = allocs.filter((a) => a.ClientStatus === 'running');
  // The list's stubs do not name the CSI volumes an allocation uses: the full allocation (Berth's CSIVolumes) does.
  const full = (await Promise.all(running.map((a) => cluster.get<Allocation>(`/v1/allocation/${a.ID}`)))).filter((a): a is Allocation => a !== undefined);
  problems.push(...checkMounts(cluster, byId, full, allocs.some((a) => a.JobID === PLUGIN_JOB && !TERMINAL.has(a.ClientStatus))));

  const { tasks, executors } = scanProcesses(cluster.root);
  const execPids = new Set(executors.map((e) => e.pid));
  const taskPids = new Set(tasks.map((t) => t.pid));
  for (const t of tasks) {
    const id = t.env['BERTH_ALLOC_ID'] ?? '';
    const a = byId.get(id);
    if (!a || a.ClientStatus !== 'running') problems.push(`task process ${t.pid} (${t.cmd.slice(0, 80)}) of allocation ${id.slice(0, 8)}, which the API shows ${a ? `${a.ClientStatus} (desired ${a.DesiredStatus})` : 'not at all'}`);
    else if (!taskPids.has(t.ppid) && !execPids.has(t.ppid) && !inContainer(a)) problems.push(`task process ${t.pid} of allocation ${id.slice(0, 8)} (${a.JobID}) runs without its executor (parent ${t.ppid})`);
  }
  for (const a of running) {
    if (!inContainer(a) && !tasks.some((t) => t.env['BERTH_ALLOC_ID'] === a.ID)) problems.push(`allocation ${a.ID.slice(0, 8)} (${a.JobID}) is running in the API but has no task process`);
  }
  if (cluster.web) {
    // A stopped allocation's network and container go as it stops: given a moment, nothing of them may stay.
    const part = cluster.web;
    let leaks: string[] = [];
    await eventually('no leaked network or container', async () => (leaks = await webLeaks(part, full)).length === 0, { timeoutMs: 15_000, intervalMs: 250 }).catch(() => undefined);
    problems.push(...leaks);
  }
  return problems;
}

/** A container's processes live under dockerd's shim, not under an executor. */
function inContainer(a: AllocationListStub): boolean {
  return a.JobID === WEB_JOB && a.TaskGroup === 'box';
}

/**
 * Compares the mounts under the node's data dir with what the running
 * allocations need: per volume in use a staging mount, per allocation using it
 * a publish mount and the task's bind; a secrets tmpfs per task of a known
 * allocation; the plugin's mount dir while the plugin job runs.
 */
function checkMounts(cluster: Cluster, byId: Map<string, AllocationListStub>, running: Allocation[], pluginLive: boolean): string[] {
  const problems: string[] = [];
  const client = path.join(cluster.nodeDir, 'client');
  const want = new Set<string>();
  for (const a of running) {
    for (const v of a.CSIVolumes ?? []) {
      want.add(`staging ${v.PluginID} ${v.VolumeID}`);
      want.add(`publish ${v.PluginID} ${a.ID} ${v.VolumeID}`);
      for (const t of Object.keys(a.TaskStates ?? {})) want.add(`bind ${a.ID} ${t}`);
    }
  }
  const have: string[] = [];
  for (const m of mountsUnder(cluster.root)) {
    const rel = m.startsWith(`${client}/`) ? m.slice(client.length + 1).split('/') : [];
    if (rel[0] === 'alloc' && rel.length === 4 && rel[3] === 'secrets') {
      if (!byId.has(rel[1] as string)) problems.push(`secrets tmpfs ${m} of an allocation the API does not know`);
    } else if (rel[0] === 'alloc' && rel.length === 5 && rel[3] === 'local') {
      have.push(`bind ${rel[1]} ${rel[2]}`);
    } else if (rel[0] === 'p' && rel.length === 3 && rel[2] === 'mounts') {
      if (!pluginLive) problems.push(`plugin mount dir ${m} while no plugin allocation runs`);
    } else if (rel[0] === 'p' && rel[2] === 'mounts' && rel[3] === 'staging' && rel.length === 7) {
      have.push(`staging ${rel[1]} ${rel[5]}`);
    } else if (rel[0] === 'p' && rel[2] === 'mounts' && rel[3] === 'per-alloc' && rel.length === 7) {
      have.push(`publish ${rel[1]} ${rel[4]} ${rel[5]}`);
    } else {
      problems.push(`unexpected mount ${m}`);
    }
  }
  const seen = new Set<string>();
  for (const h of have) {
    if (seen.has(h)) problems.push(`mounted twice: ${h}`);
    seen.add(h);
    if (!want.has(h)) problems.push(`mount no running allocation needs: ${h}`);
  }
  for (const w of want) if (!seen.has(w)) problems.push(`a running allocation's mount is missing: ${w}`);
  return problems;
}

/** The writer's file in the volume: its rules, and (when it should run) that the running writer's lines arrive. */
async function checkWriterFile(cluster: Cluster, from: number, writer: boolean): Promise<{ lines: number; problems: string[]; twoWriters: number }> {
  const vol = await cluster.get<CSIVolume>(`/v1/volume/csi/${VOLUME_ID}`);
  if (!vol) return { lines: from, problems: ['the volume is gone from the API'], twoWriters: 0 };
  const file = path.join(cluster.hostpathDir, 'volumes', vol.ExternalID, 'counter');
  const read = (): string => {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      return '';
    }
  };
  const problems: string[] = [];
  if (writer) {
    const w = await runningWriter(cluster);
    const tag = w ? `${w.allocId.split('-')[0]} ${w.pid} ` : undefined;
    const start = read().length;
    const arrived = tag
      ? await eventually('the running writer to append to the volume', () => read().slice(start).includes(`\n${tag}`) || read().slice(start).startsWith(tag), { timeoutMs: 10_000, intervalMs: 100 }).then(
          () => true,
          () => false,
        )
      : false;
    if (!arrived) problems.push(`the running writer (${tag?.trim() ?? 'no process'}) does not append to the volume's file ${file}`);
  }
  const checked = checkLines(read(), from);
  return { lines: checked.lines, problems: [...problems, ...checked.problems], twoWriters: checked.twoWriters };
}

/** Stops both jobs, drains the agents and checks that nothing is left. */
async function finalStop(cluster: Cluster, settleMs: number): Promise<string[]> {
  const problems: string[] = [];
  if (cluster.web) {
    cluster.webWanted = false;
    const w = await cluster.cli(['job', 'stop', WEB_JOB]);
    if (w.code !== 0) problems.push(`job stop (web) exited ${w.code}: ${w.stderr.trim()}`);
  }
  const r = await cluster.cli(['job', 'stop', WRITER_JOB]);
  if (r.code !== 0) problems.push(`job stop (writer) exited ${r.code}: ${r.stderr.trim()}`);
  const wedged = await settle(cluster, false, settleMs);
  if (wedged) problems.push(`after the final job stop: ${wedged}`);
  const p = await cluster.cli(['job', 'stop', PLUGIN_JOB]);
  if (p.code !== 0) problems.push(`job stop (plugin) exited ${p.code}: ${p.stderr.trim()}`);
  problems.push(...(await cluster.drain()));
  const left = mountsUnder(cluster.root);
  if (left.length) problems.push(`still mounted after the final stop: ${left.join(', ')}`);
  const { tasks, executors } = scanProcesses(cluster.root);
  for (const t of [...tasks, ...executors]) problems.push(`process ${t.pid} left after the final stop: ${t.cmd.slice(0, 120)}`);
  if (cluster.web) problems.push(...(await webLeaks(cluster.web, [])).map((l) => `after the final stop: ${l}`));
  return problems;
}

/** Kills what a failed run left (only processes of this run's directory) and removes the directory. */
function cleanUp(root: string): void {
  const { tasks, executors } = scanProcesses(root);
  for (const p of [...executors, ...tasks]) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const m of mountsUnder(root).reverse()) spawnSync('umount', ['-l', m]);
  rmSync(root, { recursive: true, force: true });
}
