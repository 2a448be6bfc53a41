// The stages a burst's allocations passed, from the agent's own records
// (BENCH_SUBMIT_TIMELINE=1 in the concurrent-submit bench): for each stage,
// when its first, median and last allocation passed it, in ms after the
// burst's release. Read from the API once every allocation runs, so the
// reading adds nothing to the burst: the evaluations' ModifyTime (run), the
// allocations' CreateTime (placed) and ModifyTime (the server's last write of
// it: the running report), and each task's events (Received when the client
// built its runner, Setting Up when its set-up began, Started when its
// driver had it). The same fields exist on Nomad's API. Beside them, when
// the executors' pids are given, when each executor process was forked (its
// /proc start time).

import { readFileSync } from 'node:fs';
import { round } from './_stats.js';

export interface TimelineStage {
  stage: string;
  first: number;
  median: number;
  last: number;
}

interface AllocDetail {
  ID: string;
  JobID: string;
  CreateTime: number;
  ModifyTime: number;
  TaskStates: Record<string, { Events: Array<{ Type: string; Time: number }> } | null> | null;
}

const stats = (stage: string, xs: number[]): TimelineStage | undefined => {
  if (!xs.length) return undefined;
  const s = [...xs].sort((a, b) => a - b);
  return { stage, first: round(s[0]!), median: round(s[Math.floor(s.length / 2)]!), last: round(s.at(-1)!) };
};

/**
 * The burst's stages on `addr` (jobs whose ID starts with `prefix`), in ms
 * after `releasedAt` (epoch ms); `answered`: the submissions' answer times
 * (epoch ms), the first stage.
 */
export async function burstTimeline(
  addr: string,
  headers: Record<string, string>,
  prefix: string,
  releasedAt: number,
  answered: readonly number[],
  executorPids: readonly number[] = [],
): Promise<TimelineStage[]> {
  const get = async <T>(path: string): Promise<T> => (await (await fetch(`${addr}${path}`, { headers })).json()) as T;
  const rel = (ns: number): number => ns / 1e6 - releasedAt;
  const evals = (await get<Array<{ JobID: string; ModifyTime: number; Status: string }>>('/v1/evaluations?namespace=*')).filter((e) => e.JobID.startsWith(prefix) && e.Status === 'complete');
  const ids = (await get<Array<{ ID: string; JobID: string }>>('/v1/allocations')).filter((a) => a.JobID.startsWith(prefix)).map((a) => a.ID);
  const allocs: AllocDetail[] = [];
  // A few at a time: the agent is idle by now, and 200 reads at once would only queue.
  for (let i = 0; i < ids.length; i += 8) allocs.push(...(await Promise.all(ids.slice(i, i + 8).map((id) => get<AllocDetail>(`/v1/allocation/${id}`)))));
  const event = (type: string): number[] =>
    allocs.flatMap((a) => Object.values(a.TaskStates ?? {}).flatMap((t) => (t?.Events ?? []).filter((e) => e.Type === type).slice(0, 1).map((e) => rel(e.Time))));
  return [
    stats('submissions answered', answered.map((t) => t - releasedAt)),
    stats('evaluations run', evals.map((e) => rel(e.ModifyTime))),
    stats('allocations placed', allocs.map((a) => rel(a.CreateTime))),
    stats('executors forked', executorPids.flatMap((pid) => forkedAt(pid) ?? []).map((t) => t - releasedAt)),
    stats('runners built (Received)', event('Received')),
    stats('set-up begun (Setting Up)', event('Setting Up')),
    stats('tasks handed over (Started)', event('Started')),
    stats('running written on the server', allocs.map((a) => rel(a.ModifyTime))),
  ].filter((s): s is TimelineStage => s !== undefined);
}

/** When process `pid` was forked (epoch ms, to the kernel's 10 ms tick), if it still runs. */
function forkedAt(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const uptimeS = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    return Date.now() - uptimeS * 1000 + ticks * 10;
  } catch {
    return undefined;
  }
}

/** The stages as lines. */
export function formatTimeline(stages: readonly TimelineStage[]): string[] {
  const w = Math.max(...stages.map((s) => s.stage.length));
  return stages.map((s) => `    ${s.stage.padEnd(w)}  first ${s.first} ms, median ${s.median} ms, last ${s.last} ms`);
}
