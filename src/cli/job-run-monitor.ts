// `job run`'s monitor: follows the evaluation a submission made, then every
// allocation it placed, with blocking reads, until each runs (or completes,
// for batch jobs). It follows an allocation for its whole life, not only
// while the server wants it to run: one whose node goes down is reported as
// lost, with the node and why, and its replacement followed in its place;
// when none could be placed (no other node fits), the monitor says which
// group and why, and `job run` fails. The same holds for groups the first
// evaluation could place only in part: the evaluation waits (blocked) for the
// cluster to change, and `job run` fails unless it placed the rest meanwhile.

import type { Evaluation } from '../api/index.js';
import { AbortedError } from '../lib/index.js';
import type * as Structs from '../structs/index.js';
import type * as api from '../api/index.js';
import { ApiClientError, KINDS } from './api-client.js';
import { shortId, timestamp, type ApiSession } from './api-command.js';
import { failedGroups, failedPlacementLines, metricLines, placementSummary } from './placement-failures.js';

/** How long one blocking read of the monitor waits before asking again. */
const MONITOR_WAIT = '30s';

/** job run ended without every allocation running: exit 1 with the reason (already shown). */
export class MonitorFailure extends ApiClientError {
  constructor(reason: string) {
    super('JOB_FAILED', reason, 0);
  }
}

/** What `job run` ends with (its --json document). */
export interface MonitorResult {
  ok: boolean;
  reason: string;
  jobId: string;
  evaluation: Evaluation;
  allocations: Array<{ id: string; nodeId: string; taskGroup: string; clientStatus: string; clientDescription: string }>;
}

/**
 * The evaluation once the scheduler ran it (it left `pending`), followed with
 * blocking reads: the server answers a registration before it schedules.
 * Throws ApiClientError as the API answers; AbortedError on Ctrl-C.
 */
export async function settledEvaluation(s: ApiSession, evalId: string): Promise<Evaluation> {
  let index = 0;
  for (;;) {
    const ans = await s.api.get<Evaluation>(KINDS.evaluation.getPath(evalId), index ? { index, wait: MONITOR_WAIT } : {});
    if (ans.body.Status !== 'pending') return ans.body;
    index = ans.index;
  }
}

/** The job `job run` follows: the version its registration made. */
export interface RunTarget {
  id: string;
  namespace: string;
  type: string;
  version: number;
}

/** "1 allocation" / "2 allocations". */
const allocations = (n: number): string => `${n} allocation${n === 1 ? '' : 's'}`;

/**
 * Follows the evaluation `evalId` of the submission at `submitIndex` until it
 * leaves `pending`, then the allocations created since (and the replacements
 * of any lost) until each runs (or completes, for batch jobs), one fails, one
 * is lost with no replacement, or the evaluation stays blocked. Resolves with
 * ok=false (never throws) for those; Ctrl-C stops following with ok=true (the
 * job keeps running). Throws ApiClientError when the API fails.
 */
export async function monitorRun(s: ApiSession, structs: typeof Structs, job: RunTarget, evalId: string, submitIndex: number): Promise<MonitorResult> {
  const { isClientTerminal } = structs;
  const say = (text: string): void => {
    if (!s.out.json) s.out.line(text);
  };
  const jobAllocs = async (index = 0): Promise<{ body: api.AllocationListStub[]; index: number }> =>
    s.api.get<api.AllocationListStub[]>(`/v1/job/${encodeURIComponent(job.id)}/allocations`, { namespace: job.namespace, ...(index ? { index, wait: MONITOR_WAIT } : {}) });
  const failures = (ev: Evaluation, only?: string): void => {
    for (const line of failedPlacementLines(ev, { heading: 'Task group', indent: '    ', ...(only === undefined ? {} : { group: only }) })) say(line);
  };
  say(`==> ${timestamp(Date.now())}: Monitoring evaluation "${shortId(evalId)}"`);
  say(`    Evaluation triggered by job "${job.id}"`);
  let evaluation: Evaluation | undefined;
  const result = (ok: boolean, reason: string, allocs: api.AllocationListStub[] = []): MonitorResult => ({
    ok,
    reason,
    jobId: job.id,
    evaluation: evaluation as Evaluation,
    allocations: allocs.map((a) => ({ id: a.ID, nodeId: a.NodeID, taskGroup: a.TaskGroup, clientStatus: a.ClientStatus, clientDescription: a.ClientDescription })),
  });
  try {
    const ev = (evaluation = await settledEvaluation(s, evalId));
    let allocs = (await jobAllocs()).body;
    // This submission's allocations: created by its evaluation or since (replacements), whatever became of them.
    const mine = (list: api.AllocationListStub[]): api.AllocationListStub[] => list.filter((a) => a.CreateIndex >= submitIndex);
    for (const a of mine(allocs)) say(`    Allocation "${shortId(a.ID)}" created: node "${shortId(a.NodeID)}", group "${a.TaskGroup}"`);
    // Older allocations this submission's evaluation moved to the new job version without a stop (resource-only changes).
    const inPlace = allocs.filter((a) => a.CreateIndex < submitIndex && a.EvalID === evalId && a.JobVersion === job.version && a.DesiredStatus === 'run');
    for (const a of inPlace) say(`    Allocation "${shortId(a.ID)}" updated in place: node "${shortId(a.NodeID)}", group "${a.TaskGroup}" (new resources, no restart)`);
    say(`    Evaluation status changed: "pending" -> "${ev.Status}"`);
    failures(ev);
    say(`==> Evaluation "${shortId(evalId)}" finished with status "${ev.Status}"${ev.Status === 'blocked' ? '; it is retried when the cluster changes' : ''}`);
    if (ev.Status === 'failed' || ev.Status === 'canceled') return result(false, `evaluation ${shortId(evalId)} ${ev.Status}: ${ev.StatusDescription}`);
    // A system job's evaluation completes even when no node can run it: nothing placed and failures is a failure for both kinds.
    const placementFailed = ev.Status === 'blocked' || failedGroups(ev).length > 0;
    if (placementFailed && mine(allocs).length === 0) {
      return result(false, `placement failed: ${placementSummary(ev) || 'no node fits'}`);
    }
    if (mine(allocs).length === 0 && inPlace.length > 0) {
      say(`==> ${allocations(inPlace.length)} updated in place`);
      return result(true, 'updated in place', inPlace);
    }
    if (mine(allocs).length === 0) {
      say('    No allocations placed (nothing to change, or no eligible nodes)');
      return result(ev.Status === 'complete', 'no allocations placed');
    }

    // Follow each allocation until it runs (or completes) or fails; a lost one's replacement in its place.
    const followed = new Map(mine(allocs).map((a) => [a.ID, a]));
    const seen = new Map<string, string>();
    const told = new Set<string>();
    const lostWords = new Map<string, string>();
    let allocIndex = 0;
    for (;;) {
      // Oldest first: a lost allocation's line comes before its replacement's.
      // Which allocation each replaces (the replaced one names its replacement: NextAllocation).
      const previousOf = new Map(allocs.filter((a) => a.NextAllocation).map((a) => [a.NextAllocation, a.ID]));
      for (const a of mine(allocs).sort((x, y) => x.CreateIndex - y.CreateIndex)) {
        const prev = previousOf.get(a.ID);
        if (!followed.has(a.ID)) {
          const why = prev && lostWords.has(prev) ? ` (replaces lost allocation "${shortId(prev)}")` : '';
          say(`    Allocation "${shortId(a.ID)}" created: node "${shortId(a.NodeID)}", group "${a.TaskGroup}"${why}`);
        }
        followed.set(a.ID, a);
        const before = seen.get(a.ID);
        if (before !== a.ClientStatus) {
          if (before !== undefined || a.ClientStatus !== 'pending') {
            const why = a.ClientDescription ? ` (${a.ClientDescription})` : '';
            say(`    Allocation "${shortId(a.ID)}" status changed: "${before ?? 'pending'}" -> "${a.ClientStatus}"${why}`);
          }
          seen.set(a.ID, a.ClientStatus);
        }
        if (a.ClientStatus === 'lost' && !lostWords.has(a.ID)) {
          lostWords.set(a.ID, await lostBecause(s, a));
          say(`==> Allocation "${shortId(a.ID)}" of group "${a.TaskGroup}" lost: ${lostWords.get(a.ID)}`);
        }
      }
      const current = [...followed.values()];
      const failed = current.find((a) => a.ClientStatus === 'failed');
      if (failed) {
        say(`==> Allocation "${shortId(failed.ID)}" failed${failed.ClientDescription ? `: ${failed.ClientDescription}` : ''}`);
        return result(false, `allocation ${shortId(failed.ID)} failed`, current);
      }
      // The newest of each line of replacements: what is meant to run now.
      const standing = current.filter((a) => !(a.NextAllocation && followed.has(a.NextAllocation)));
      const lost = standing.find((a) => a.ClientStatus === 'lost');
      if (lost) {
        // Its replacement is placed by the evaluation that marked it lost; one still pending may yet place it.
        const since = await evaluationsSince(s, job, submitIndex);
        const pending = since.find((e) => e.Status === 'pending');
        if (pending) {
          await settledEvaluation(s, pending.ID);
          allocs = (await jobAllocs()).body;
          continue;
        }
        const blocked = since.filter((e) => e.Status === 'blocked' && e.FailedTGAllocs?.[lost.TaskGroup]).at(-1);
        let why = `a ${job.type} job is not moved to another node`;
        if (blocked) {
          failures(blocked, lost.TaskGroup);
          say(`==> Evaluation "${shortId(blocked.ID)}" is blocked; it is retried when the cluster changes`);
          const metric = blocked.FailedTGAllocs?.[lost.TaskGroup];
          why = (metric && metricLines(metric).join('; ')) || 'no node fits';
        }
        return result(false, `allocation ${shortId(lost.ID)} of group "${lost.TaskGroup}" lost: ${lostWords.get(lost.ID)}; no replacement could be placed: ${why}`, current);
      }
      // Stopped by the server (a newer version, a scale-down, the job stopped): no longer followed.
      const stopped = standing.filter((a) => a.DesiredStatus !== 'run' && isClientTerminal(a.ClientStatus as Structs.AllocClientStatus));
      for (const a of stopped.filter((x) => !told.has(x.ID))) {
        told.add(a.ID);
        say(`==> Allocation "${shortId(a.ID)}" stopped by the server${a.DesiredDescription ? `: ${a.DesiredDescription}` : ''}`);
      }
      const live = standing.filter((a) => !stopped.includes(a));
      if (live.length === 0) return result(false, 'every allocation stopped', current);
      const done = live.every((a) => a.DesiredStatus === 'run' && (a.ClientStatus === 'running' || (a.ClientStatus === 'complete' && job.type === 'batch')));
      if (done) {
        const words = job.type === 'batch' && live.every((a) => a.ClientStatus === 'complete') ? 'complete' : 'running';
        const lostCount = current.filter((a) => a.ClientStatus === 'lost').length;
        say(`==> ${allocations(live.length)} ${words}${lostCount ? ` (${lostCount} lost and replaced)` : ''}`);
        // Placed in part: the rest waits for the cluster to change (the evaluation stays blocked).
        if (placementFailed) {
          const now = await settledEvaluation(s, evalId);
          if (now.Status === 'blocked') {
            say(`==> Evaluation "${shortId(evalId)}" is still blocked: not every allocation could be placed`);
            return result(false, `placement failed: ${placementSummary(now) || 'no node fits'}`, live);
          }
        }
        return result(true, words, live);
      }
      const ans = await jobAllocs(allocIndex);
      allocs = ans.body;
      allocIndex = ans.index;
    }
  } catch (err) {
    if (err instanceof AbortedError) {
      say('==> Monitoring stopped; the job keeps running (see `berth job status ' + job.id + '`)');
      return { ...result(true, 'monitoring interrupted'), evaluation: evaluation ?? ({ ID: evalId } as Evaluation) };
    }
    throw err;
  }
}

/** The job's evaluations created at or after `index`, oldest first. */
async function evaluationsSince(s: ApiSession, job: RunTarget, index: number): Promise<Evaluation[]> {
  const { body } = await s.api.get<Evaluation[]>(`/v1/job/${encodeURIComponent(job.id)}/evaluations`, { namespace: job.namespace });
  return body.filter((e) => e.CreateIndex >= index).sort((a, b) => a.CreateIndex - b.CreateIndex);
}

/** Why an allocation was lost, in the operator's words: its node by name, down and why; else what its client said. */
async function lostBecause(s: ApiSession, alloc: api.AllocationListStub): Promise<string> {
  let node: api.Node | undefined;
  try {
    node = (await s.api.get<api.Node>(KINDS.node.getPath(alloc.NodeID))).body;
  } catch (err) {
    if (!(err instanceof ApiClientError) || err.code !== 'NOT_FOUND') throw err;
  }
  if (node?.Status === 'down') return `node "${node.Name}" (${shortId(node.ID)}) is down${node.StatusDescription ? `: ${node.StatusDescription}` : ''}`;
  return alloc.ClientDescription || `on node "${node?.Name ?? shortId(alloc.NodeID)}"`;
}
