// CPU and memory of each running task, live: GET
// /v1/client/allocation/:id/stats (the tasks' cgroups) polled every second
// while the page is open, drawn as two time charts a task (CPU in MHz,
// memory in bytes) beside what the task reserved.

import { useEffect, useState } from 'preact/hooks';
import { ApiError, type Allocation } from '../api';
import { allocApi } from '../api-alloc';
import { TimeChart } from '../chart';
import { bytes, Section, short } from '../components';

/** How often the page reads the usage. */
export const STATS_EVERY_MS = 1000;
/** How many samples a chart keeps (the last two minutes). */
const KEEP = 120;

interface Sample {
  t: number;
  /** MHz used (Nomad's TotalTicks). */
  mhz: number;
  /** Percent of one core. */
  percent: number;
  /** Bytes used: the cgroup's usage where measured, else the resident set. */
  memory: number;
}

type History = Record<string, Sample[]>;

/** Follows the allocation's stats while mounted; the samples by task, or the reason there are none. */
function useStats(allocId: string, running: boolean): { history: History; error?: string } {
  const [state, setState] = useState<{ history: History; error?: string }>({ history: {} });
  useEffect(() => {
    if (!running) return;
    let live = true;
    let busy = false;
    const abort = new AbortController();
    const read = async (): Promise<void> => {
      if (busy) return;
      busy = true;
      try {
        const stats = await allocApi.stats(allocId, abort.signal);
        if (!live) return;
        setState((s) => {
          const next: History = { ...s.history };
          for (const [task, u] of Object.entries(stats.Tasks ?? {})) {
            const r = u.ResourceUsage;
            const mem = r?.MemoryStats;
            const sample: Sample = {
              t: Math.floor(u.Timestamp / 1e6),
              mhz: r?.CpuStats?.TotalTicks ?? 0,
              percent: r?.CpuStats?.Percent ?? 0,
              memory: mem ? (mem.Measured?.includes('Usage') ? mem.Usage : mem.RSS) : 0,
            };
            const prev = next[task] ?? [];
            if (prev[prev.length - 1]?.t === sample.t) continue;
            next[task] = [...prev, sample].slice(-KEEP);
          }
          return { history: next };
        });
      } catch (err) {
        if (!live) return;
        const why =
          err instanceof ApiError && err.status === 404
            ? `this agent does not run the allocation; read its usage with: berth alloc status ${short(allocId)}`
            : (err as Error).message;
        setState((s) => ({ ...s, error: why }));
      } finally {
        busy = false;
      }
    };
    void read();
    const timer = setInterval(() => void read(), STATS_EVERY_MS);
    return () => {
      live = false;
      abort.abort();
      clearInterval(timer);
    };
  }, [allocId, running]);
  return state;
}

export function AllocStats({ alloc }: { alloc: Allocation }) {
  const running = alloc.ClientStatus === 'running';
  const { history, error } = useStats(alloc.ID, running);
  const reserved = alloc.AllocatedResources?.Tasks ?? {};
  const tasks = Object.keys(history).sort();
  return (
    <Section title="Resource use" id="stats">
      {!running ? <p class="muted">The allocation is not running: no usage to read.</p> : null}
      {running && error && tasks.length === 0 ? <p class="muted">Usage unavailable: {error}</p> : null}
      {running && !error && tasks.length === 0 ? <p class="loading">Reading usage…</p> : null}
      {tasks.map((task) => {
        const samples = history[task] ?? [];
        const last = samples[samples.length - 1];
        const cpuMhz = reserved[task]?.Cpu?.CpuShares ?? 0;
        const memBytes = (reserved[task]?.Memory?.MemoryMB ?? 0) * 1024 * 1024;
        return (
          <div class="alloc-stats" data-stats-task={task}>
            <h3>Task {task}</h3>
            <p class="muted" data-stats-now={task}>
              CPU {last ? `${last.mhz.toFixed(0)} MHz (${last.percent.toFixed(1)}% of a core)` : '-'} of {cpuMhz} MHz reserved; memory{' '}
              {last ? bytes(last.memory) : '-'} of {bytes(memBytes)} reserved
            </p>
            <div class="alloc-charts">
              <TimeChart label={`CPU of task ${task}`} unit="MHz" series={[{ name: 'used', points: samples.map((s) => ({ t: s.t, v: s.mhz })) }]} />
              <TimeChart label={`Memory of task ${task}`} unit="bytes" series={[{ name: 'used', points: samples.map((s) => ({ t: s.t, v: s.memory })) }]} />
            </div>
          </div>
        );
      })}
    </Section>
  );
}
