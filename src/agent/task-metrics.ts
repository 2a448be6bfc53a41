// Per-task gauges read at scrape time: usage from each running task's cgroup
// (through its driver's taskStats; /proc without one) and the OOM kills its
// task events record.

import { Gauge, type Registry } from 'prom-client';
import { AllocRunner, type Client, type TaskDriver, type TaskResourceUsage } from '../client/index.js';

/** The usage of every running task of `client`, keyed `<allocId>/<task>`. Never throws (tasks that end meanwhile are left out). */
export async function runningTaskUsage(client: Client, drivers: ReadonlyMap<string, TaskDriver>): Promise<Map<string, { allocId: string; task: string; usage: TaskResourceUsage }>> {
  const out = new Map<string, { allocId: string; task: string; usage: TaskResourceUsage }>();
  for (const allocId of client.allocIds()) {
    const runner = client.runner(allocId);
    if (!(runner instanceof AllocRunner)) continue;
    for (const [task, taskId] of Object.entries(runner.taskIds())) {
      if (!taskId) continue;
      for (const d of drivers.values()) {
        try {
          out.set(`${allocId}/${task}`, { allocId, task, usage: await d.taskStats(taskId) });
          break;
        } catch {
          // another driver's task, or it ended meanwhile
        }
      }
    }
  }
  return out;
}

/**
 * Registers `berth_client_task_*` gauges: memory (rss, cache, usage, max
 * usage) in bytes, CPU user/system seconds and throttled periods, process
 * count, and `berth_client_task_oom_kills` (OOM Killed events in the task's
 * event trail), labelled by allocation and task.
 */
export function registerTaskMetrics(registry: Registry, client: () => Client | undefined, drivers: ReadonlyMap<string, TaskDriver>): void {
  const labelNames = ['alloc_id', 'task'] as const;
  // One sample of every task per scrape: prom-client collects the gauges concurrently, and each awaits the same one.
  let sampling: Promise<Map<string, { allocId: string; task: string; usage: TaskResourceUsage }>> | undefined;
  const sample = (): Promise<Map<string, { allocId: string; task: string; usage: TaskResourceUsage }>> => {
    if (!sampling) {
      const c = client();
      sampling = (c ? runningTaskUsage(c, drivers) : Promise.resolve(new Map())).finally(() => {
        setTimeout(() => (sampling = undefined), 100).unref();
      });
    }
    return sampling;
  };
  const gauge = (name: string, help: string, value: (u: TaskResourceUsage) => number): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        const tasks = await sample();
        this.reset();
        for (const { allocId, task, usage } of tasks.values()) this.set({ alloc_id: allocId, task }, value(usage));
      },
    });
  };
  gauge('berth_client_task_memory_rss_bytes', 'Resident anonymous memory of the task (cgroup memory.stat rss/anon)', (u) => u.memory.rssBytes);
  gauge('berth_client_task_memory_cache_bytes', 'Page cache charged to the task (cgroup memory.stat cache/file)', (u) => u.memory.cacheBytes);
  gauge('berth_client_task_memory_usage_bytes', 'Memory charged to the task cgroup', (u) => u.memory.usageBytes);
  gauge('berth_client_task_memory_max_usage_bytes', 'Peak memory charged to the task cgroup', (u) => u.memory.maxUsageBytes);
  gauge('berth_client_task_cpu_user_seconds', 'CPU time the task spent in user mode', (u) => u.cpu.userMs / 1000);
  gauge('berth_client_task_cpu_system_seconds', 'CPU time the task spent in the kernel', (u) => u.cpu.systemMs / 1000);
  gauge('berth_client_task_cpu_throttled_periods', 'CFS periods in which the task hit its cores quota', (u) => u.cpu.throttledPeriods);
  gauge('berth_client_task_pids', 'Processes in the task', (u) => u.pids.length);
  new Gauge({
    name: 'berth_client_task_oom_kills',
    help: 'Times the kernel OOM-killed the task (its OOM Killed task events)',
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      const c = client();
      if (!c) return;
      for (const allocId of c.allocIds()) {
        for (const [task, state] of Object.entries(c.runner(allocId)?.status().taskStates ?? {})) {
          const n = state.events.filter((e) => e.type === 'OOM Killed').length;
          if (n) this.set({ alloc_id: allocId, task }, n);
        }
      }
    },
  });
}
