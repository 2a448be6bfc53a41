// `berth alloc status`, `berth node` (its commands: node-*-command.ts), `berth plugin status` and
// `berth event stream`: reading what the cluster runs, as tables for people
// and JSON for scripts.

import { Command, Option } from 'commander';
import type { Events } from '../api/index.js';
import { AbortedError } from '../lib/index.js';
import type * as api from '../api/index.js';
import type { AllocMetric } from '../structs/index.js';
import { addAllocIoCommands, allocationOf, nodeAgentOf, tokenOf } from './alloc-io-commands.js';
import { addNodeMetaCommands, printPlacementMetrics } from './node-meta-command.js';
import { addNodeDrainCommands } from './node-drain-command.js';
import { addNodeStatusCommand } from './node-status-command.js';
import { addAllocOpsCommands } from './alloc-ops-commands.js';
import { ApiClientError, KINDS, type HttpAnswer } from './api-client.js';
import { age, apiAction, apiCommand, shortId, timestamp, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';
import { UsageError } from './usage-error.js';
import { addAllocChecks, printChecks } from './service-command.js';


/** Builds `berth alloc` (status, logs, exec). */
export function allocCommand(ctx: CommandContext): Command {
  const alloc = new Command('alloc').description('Inspect allocations, read their logs, run commands in their tasks').enablePositionalOptions();
  apiCommand(
    alloc
      .command('status')
      .description("Show an allocation: placement, status, volumes, task events and each running task's resource usage")
      .argument('<id>', 'allocation ID or a unique prefix')
      .option('--verbose', "also show the placement metrics: nodes filtered by each constraint, each candidate node's scores"),
    ['alloc status 3f2a9c1b', 'alloc status 3f2a --json', 'alloc status --verbose 3f2a'],
  ).action(apiAction(ctx, allocStatus));
  addAllocIoCommands(alloc, ctx);
  addAllocOpsCommands(alloc, ctx);
  addAllocChecks(alloc, ctx);
  return alloc;
}

/** Builds `berth node`. */
export function nodeCommand(ctx: CommandContext): Command {
  const node = new Command('node').description('Inspect client nodes, drain them, set their eligibility and meta');
  addNodeStatusCommand(node, ctx);
  addNodeMetaCommands(node, ctx);
  addNodeDrainCommands(node, ctx);
  return node;
}

/** Builds `berth event`. */
export function eventCommand(ctx: CommandContext): Command {
  const event = new Command('event').description('Follow changes in the cluster');
  apiCommand(
    event
      .command('stream')
      .description("Print every change (Nomad's topics Job, Allocation, Evaluation, Deployment, Node, Service, CSIVolume, CSIPlugin; Berth's claim, volume-condition, drift) as it happens, until Ctrl-C")
      .addOption(new Option('--topic <topic>', 'a topic, optionally with a key: an ID, or a job ID or name the change names (Job:web, CSIVolume:shared-data); repeatable; default all').argParser(collectTopic))
      .option('--index <n>', 'start at this index, as Nomad (0: the oldest change kept; default: now)')
      .option('--until-now', 'stop once every change up to now is printed, instead of following (with --index 0: the history)'),
    ['event stream', 'event stream --topic CSIVolume --topic claim', 'event stream --topic CSIVolume:shared-data --json', 'event stream --topic claim --index 0 --until-now', 'event stream -n "*" --topic Job'],
  ).action(apiAction(ctx, eventStream));
  return event;
}

/** Collects `--topic` values; the server checks the names (and names the topics it knows). */
function collectTopic(value: string, previous: string[] | undefined): string[] {
  if (!value || value.startsWith(':')) throw new UsageError(`--topic takes TOPIC or TOPIC:KEY (Job, Job:web, claim:shared-data), got "${value}"`);
  return [...(previous ?? []), value];
}

/** Per running task, or why there is none. */
type AllocUsage = { tasks: Record<string, api.TaskResourceUsage> } | { unavailable: string };

/**
 * For each CSI volume of the allocation held by a fenced write claim (a writer
 * on a silent node), a line saying until when and why: the allocation's own
 * claim, or the one its claim waits for. A volume that cannot be read is skipped.
 */
async function claimWaits(s: ApiSession, a: api.Allocation): Promise<string[]> {
  const lines: string[] = [];
  for (const v of a.CSIVolumes ?? []) {
    const answer = await s.api.get<api.CSIVolume>(KINDS.volume.getPath(v.VolumeID), { namespace: a.Namespace }).catch((err: unknown) => {
      if (err instanceof AbortedError) throw err;
      return undefined;
    });
    for (const c of answer?.body.BerthClaims ?? []) {
      if (c.State !== 'taken' || !c.FencedUntil) continue;
      const whose = c.AllocationID === a.ID ? 'its write claim' : `it waits for the write claim of allocation ${shortId(c.AllocationID)}, which`;
      lines.push(`Volume ${v.VolumeID}: ${whose} is held until ${c.FencedUntil.replace(/\.\d+Z$/, 'Z')}: ${c.FenceReason}`);
    }
  }
  return lines;
}

/** How long `alloc status` waits for the node agent's usage before it prints without it. */
const USAGE_TIMEOUT_MS = 5_000;

/**
 * Asks the allocation's node agent for its running tasks' resource usage
 * (Nomad's AllocResourceUsage). Never throws but for Ctrl-C: an unreachable
 * node, a refused token or a node without the allocation becomes
 * `unavailable` with the reason.
 */
async function allocUsage(s: ApiSession, a: api.Allocation, token: string | undefined): Promise<AllocUsage> {
  const timeout = AbortSignal.timeout(USAGE_TIMEOUT_MS);
  try {
    const agent = await nodeAgentOf(s, a, token);
    const { body } = await agent.request<api.AllocResourceUsage>('GET', `/v1/client/allocation/${encodeURIComponent(a.ID)}/stats`, { signal: timeout });
    return { tasks: body.Tasks ?? {} };
  } catch (err) {
    if (s.signal.aborted) throw err;
    if (timeout.aborted) return { unavailable: `the node agent did not answer within ${USAGE_TIMEOUT_MS / 1000} s` };
    return { unavailable: err instanceof Error ? err.message : String(err) };
  }
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** Nanoseconds since the epoch (Nomad's times) as milliseconds. */
const ms = (nanos: number): number => Math.floor(nanos / 1_000_000);
/** A Go time (RFC 3339; the zero time is none) as milliseconds, 0 for none. */
const goMs = (t: string): number => (t.startsWith('0001-') ? 0 : Date.parse(t) || 0);

/** Nomad's AllocationMetric as the placement printer reads it. */
function placementMetric(m: api.AllocationMetric): AllocMetric {
  return {
    nodesEvaluated: m.NodesEvaluated,
    nodesFiltered: m.NodesFiltered,
    nodesAvailable: m.NodesAvailable ?? {},
    classFiltered: m.ClassFiltered ?? {},
    constraintFiltered: m.ConstraintFiltered ?? {},
    nodesExhausted: m.NodesExhausted,
    dimensionExhausted: m.DimensionExhausted ?? {},
    scoreMetaData: (m.ScoreMetaData ?? []).map((x) => ({ nodeId: x.NodeID, scores: x.Scores ?? {}, normScore: x.NormScore })),
  };
}

async function allocStatus(s: ApiSession, [idArg]: string[], opts: Record<string, unknown>): Promise<void> {
  const a = await allocationOf(s, idArg as string);
  const states = a.TaskStates ?? {};
  const running = a.DesiredStatus === 'run' && (a.ClientStatus === 'running' || Object.values(states).some((t) => t.State === 'running'));
  const usage = running ? await allocUsage(s, a, tokenOf(opts)) : undefined;
  if (s.out.json) return s.out.document(a);
  const network = a.AllocatedResources?.Shared.Networks?.[0];
  const status = a.NetworkStatus;
  s.out.fields([
    ['ID', a.ID],
    ['Name', a.Name],
    ['Node ID', a.NodeID],
    ['Node Name', a.NodeName || undefined],
    ['Job ID', a.JobID],
    ['Namespace', a.Namespace],
    ['Job Version', a.Job?.Version ?? undefined],
    ['Task Group', a.TaskGroup],
    ['Desired Status', s.style.status(a.DesiredStatus)],
    ['Desired Description', a.DesiredDescription || undefined],
    ['Client Status', s.style.status(a.ClientStatus)],
    ['Client Description', a.ClientDescription || undefined],
    ['Network', network ? `${network.Mode}${status?.Address ? `, address ${status.Address}${status.InterfaceName ? ` (${status.InterfaceName})` : ''}` : ''}` : undefined],
    ['Reschedule Attempts', a.RescheduleTracker?.Events?.length ?? 0],
    ['Previous Allocation', a.PreviousAllocation || undefined],
    ['Replacement Alloc ID', a.NextAllocation || undefined],
    ['Created', `${timestamp(ms(a.CreateTime))} (${age(ms(a.CreateTime))})`],
    ['Modified', `${timestamp(ms(a.ModifyTime))} (${age(ms(a.ModifyTime))})`],
  ]);
  const ports = a.AllocatedResources?.Shared.Ports ?? [];
  if (ports.length) {
    s.out.line();
    s.out.line(s.style.bold('Allocation Addresses'));
    s.out.table(['Label', 'Address'], ports.map((p) => [p.Label, `${p.HostIP.includes(':') ? `[${p.HostIP}]` : p.HostIP}:${p.Value}${p.To > 0 && p.To !== p.Value ? ` -> ${p.To}` : ''}`]));
  }
  if (opts['verbose'] && a.Metrics) printPlacementMetrics(s, placementMetric(a.Metrics), (nodeId) => (nodeId === a.NodeID ? '(chosen)' : ''));
  if (a.CSIVolumes?.length) {
    s.out.line();
    s.out.line(s.style.bold('CSI Volumes'));
    s.out.table(['ID', 'Plugin', 'Read Only'], a.CSIVolumes.map((v) => [v.VolumeID, v.PluginID, String(v.ReadOnly)]));
    for (const line of await claimWaits(s, a)) s.out.line(line);
  }
  if (usage && 'unavailable' in usage) {
    s.out.line();
    s.out.line(s.style.bold('Resource usage'));
    s.out.line(`usage unavailable: ${usage.unavailable}`);
  }
  const checks = (await s.api.get<api.AllocCheckStatuses>(`/v1/allocation/${encodeURIComponent(a.ID)}/checks`)).body;
  if (Object.keys(checks).length) {
    s.out.line();
    s.out.line(s.style.bold('Checks'));
    printChecks(s, checks);
  }
  for (const [task, st] of Object.entries(states)) {
    s.out.line();
    s.out.line(s.style.bold(`Task "${task}" is "${st.State}"${st.Failed ? ' (failed)' : ''}`));
    s.out.fields([
      ['Restarts', st.Restarts],
      ['Started', timestamp(goMs(st.StartedAt))],
      ['Finished', timestamp(goMs(st.FinishedAt))],
    ]);
    const u = usage && 'tasks' in usage && st.State === 'running' ? usage.tasks[task]?.ResourceUsage : undefined;
    if (u?.MemoryStats && u.CpuStats) {
      s.out.line();
      s.out.line(s.style.bold('Resource usage'));
      s.out.table(
        ['Memory (RSS)', 'Cache', 'Max Usage', 'CPU', 'Throttled Periods', 'Measured'],
        [
          [
            mib(u.MemoryStats.RSS),
            mib(u.MemoryStats.Cache),
            mib(u.MemoryStats.MaxUsage),
            `${u.CpuStats.Percent.toFixed(1)}% (${Math.floor(u.CpuStats.TotalTicks)} MHz)`,
            String(u.CpuStats.ThrottledPeriods),
            (u.MemoryStats.Measured ?? []).join(', '),
          ],
        ],
      );
    }
    s.out.line();
    s.out.table(['Time', 'Type', 'Description'], [...(st.Events ?? [])].reverse().map((e) => [timestamp(ms(e.Time)), e.Type, e.DisplayMessage || e.Message]));
  }
}

async function eventStream(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const topics = (opts['topic'] as string[] | undefined) ?? ['*'];
  const index = opts['index'] as string | undefined;
  if (index !== undefined && !/^\d+$/.test(index)) throw new UsageError('--index must be a non-negative integer');
  const untilNow = Boolean(opts['untilNow']);
  let res: HttpAnswer;
  try {
    res = await s.api.stream('/v1/event/stream', { topic: topics, namespace: s.namespace, ...(index !== undefined ? { index } : {}), ...(untilNow ? { until: 'now' } : {}) });
  } catch (err) {
    if (err instanceof AbortedError) return;
    throw err;
  }
  if (!s.out.json && !untilNow) s.out.warn(`==> Following events on ${topics.join(', ')} (Ctrl-C to stop)`);
  const decoder = new TextDecoder();
  let buffered = '';
  try {
    for await (const chunk of res.body) {
      buffered += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (!line || line === '{}') continue;
        if (s.out.json) {
          s.out.line(line);
          continue;
        }
        const frame = JSON.parse(line) as Events;
        for (const ev of frame.Events ?? []) {
          const key = ev.Namespace ? `${ev.Namespace}/${ev.Key}` : ev.Key;
          s.out.line(`${String(ev.Index).padStart(6)}  ${ev.Topic.padEnd(16)}  ${ev.Type.padEnd(22)}  ${key}`);
        }
      }
    }
  } catch (err) {
    if (s.signal.aborted) return;
    throw err;
  }
  if (untilNow && buffered.trim() === '') return;
  if (!s.signal.aborted) throw new ApiClientError('API_UNREACHABLE', `the event stream ended: the agent at ${s.api.address} closed the connection`, 0);
}
