// The node agent's allocation operations in Nomad's paths and shapes:
// restart and signal a task (the allocation's volumes stay mounted: only the
// task process is replaced or signalled), and the resource usage of its
// running tasks (AllocResourceUsage, from their cgroups) and the latest
// results of its service checks (Nomad 1.4's AllocCheckStatuses).

import { cpus } from 'node:os';
import type { FastifyInstance } from 'fastify';
import type * as api from '../api/index.js';
import type { TaskResourceUsage } from '../client/index.js';
import { readyClient, runnerOf, type ClientRoutesDeps } from './client-route-deps.js';
import { asRouteError, ClientRouteError } from './client-route-error.js';
import { checkStatuses } from '../server/index.js';
import { runningTaskUsage } from './task-metrics.js';

/** A JSON body's string field, or undefined. */
function str(body: unknown, key: string): string | undefined {
  const v = body && typeof body === 'object' ? (body as Record<string, unknown>)[key] : undefined;
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** The MHz one core stands for (CpuStats.TotalTicks counts in it). */
const MHZ_PER_CORE = cpus()[0]?.speed || 1000;

/** A task's usage as Nomad's ResourceUsage: CPU modes as percent of one core since the previous sample. */
export function resourceUsage(u: TaskResourceUsage): api.ResourceUsage {
  const total = u.cpu.userMs + u.cpu.systemMs;
  const userShare = total > 0 ? u.cpu.userMs / total : 0;
  const cgroup = u.source === 'cgroup';
  return {
    MemoryStats: {
      RSS: u.memory.rssBytes,
      Cache: u.memory.cacheBytes,
      Swap: 0,
      Usage: u.memory.usageBytes,
      MaxUsage: u.memory.maxUsageBytes,
      KernelUsage: 0,
      KernelMaxUsage: 0,
      Measured: cgroup ? ['RSS', 'Cache', 'Usage', 'Max Usage'] : ['RSS'],
    },
    CpuStats: {
      SystemMode: u.cpu.percent * (1 - userShare),
      UserMode: u.cpu.percent * userShare,
      TotalTicks: (u.cpu.percent / 100) * MHZ_PER_CORE,
      ThrottledPeriods: u.cpu.throttledPeriods,
      ThrottledTime: Math.round(u.cpu.throttledMs * 1_000_000),
      Percent: u.cpu.percent,
      Measured: cgroup ? ['System Mode', 'User Mode', 'Throttled Periods', 'Throttled Time', 'Percent'] : ['System Mode', 'User Mode', 'Percent'],
    },
    DeviceStats: null,
  };
}

/** The tasks' usages summed, as Nomad's allocation total. */
function sumUsage(all: readonly api.ResourceUsage[]): api.ResourceUsage {
  const mem = (k: keyof Omit<api.MemoryStats, 'Measured'>): number => all.reduce((n, u) => n + (u.MemoryStats?.[k] ?? 0), 0);
  const cpu = (k: keyof Omit<api.CpuStats, 'Measured'>): number => all.reduce((n, u) => n + (u.CpuStats?.[k] ?? 0), 0);
  return {
    MemoryStats: { RSS: mem('RSS'), Cache: mem('Cache'), Swap: mem('Swap'), Usage: mem('Usage'), MaxUsage: mem('MaxUsage'), KernelUsage: 0, KernelMaxUsage: 0, Measured: all[0]?.MemoryStats?.Measured ?? null },
    CpuStats: {
      SystemMode: cpu('SystemMode'),
      UserMode: cpu('UserMode'),
      TotalTicks: cpu('TotalTicks'),
      ThrottledPeriods: cpu('ThrottledPeriods'),
      ThrottledTime: cpu('ThrottledTime'),
      Percent: cpu('Percent'),
      Measured: all[0]?.CpuStats?.Measured ?? null,
    },
    DeviceStats: null,
  };
}

/** Registers restart and signal (management role), stats and checks (read). */
export function registerAllocOpsRoutes(app: FastifyInstance, deps: ClientRoutesDeps): void {
  const log = deps.logger.child({ component: 'client-http' });

  // Nomad's restart: { TaskName } restarts that task, { AllTasks: true } every task (finished
  // lifecycle tasks included in Nomad; Berth runs those again only when they run), neither every running task.
  const restart = async (req: { params: { id: string }; body: unknown }): Promise<api.GenericResponse> => {
    try {
      const runner = runnerOf(deps, req.params.id);
      const names = Object.keys(runner.taskIds());
      const task = str(req.body, 'TaskName');
      if (task && !names.includes(task)) throw new ClientRouteError(404, 'NOT_FOUND', `Task not found: allocation ${req.params.id} has no task "${task}" (tasks: ${names.join(', ')})`);
      const restarted: string[] = [];
      for (const name of task ? [task] : names) {
        const t = runner.task(name);
        if (!t || t.view().state !== 'running') continue;
        await t.restart('restart requested by the operator');
        restarted.push(name);
      }
      if (task && restarted.length === 0) throw new ClientRouteError(409, 'TASK_NOT_RUNNING', `task "${task}" is not running`);
      log.info({ allocId: req.params.id, restarted }, 'allocation tasks restarted');
      return { Index: 0 };
    } catch (err) {
      throw asRouteError(err);
    }
  };
  app.post<{ Params: { id: string } }>('/v1/client/allocation/:id/restart', { config: { access: 'write' } }, restart);
  app.put<{ Params: { id: string } }>('/v1/client/allocation/:id/restart', { config: { access: 'write' } }, restart);

  // Nomad's signal: { Task, Signal } (default SIGKILL); without a task, every running task.
  const signal = async (req: { params: { id: string }; body: unknown }): Promise<api.GenericResponse> => {
    try {
      const runner = runnerOf(deps, req.params.id);
      const upper = (str(req.body, 'Signal') ?? 'SIGKILL').toUpperCase();
      const sig = upper.startsWith('SIG') ? upper : `SIG${upper}`;
      const names = Object.keys(runner.taskIds());
      const task = str(req.body, 'Task');
      if (task && !names.includes(task)) throw new ClientRouteError(404, 'NOT_FOUND', `Task not found: allocation ${req.params.id} has no task "${task}" (tasks: ${names.join(', ')})`);
      const signaled: string[] = [];
      for (const name of task ? [task] : names) {
        const t = runner.task(name);
        if (!t || t.view().state !== 'running') continue;
        await t.signal(sig, 'signal sent by the operator');
        signaled.push(name);
      }
      if (signaled.length === 0) throw new ClientRouteError(409, 'TASK_NOT_RUNNING', task ? `task "${task}" is not running` : 'no task of the allocation is running');
      log.info({ allocId: req.params.id, signal: sig, signaled }, 'allocation tasks signalled');
      return { Index: 0 };
    } catch (err) {
      throw asRouteError(err);
    }
  };
  app.post<{ Params: { id: string } }>('/v1/client/allocation/:id/signal', { config: { access: 'write' } }, signal);
  app.put<{ Params: { id: string } }>('/v1/client/allocation/:id/signal', { config: { access: 'write' } }, signal);

  // Resource usage of the allocation's running tasks (`task` names one), from their cgroups (/proc without one).
  app.get<{ Params: { id: string }; Querystring: { task?: string } }>(
    '/v1/client/allocation/:id/stats',
    { config: { access: 'read' } },
    async (req): Promise<api.AllocResourceUsage> => {
      const client = readyClient(deps);
      runnerOf(deps, req.params.id);
      const tasks: Record<string, api.TaskResourceUsage> = {};
      let at = 0;
      for (const { allocId, task, usage } of (await runningTaskUsage(client, deps.drivers)).values()) {
        if (allocId !== req.params.id || (req.query.task && task !== req.query.task)) continue;
        tasks[task] = { ResourceUsage: resourceUsage(usage), Timestamp: usage.timestamp * 1_000_000, Pids: null };
        at = Math.max(at, usage.timestamp);
      }
      const usages = Object.values(tasks).map((t) => t.ResourceUsage as api.ResourceUsage);
      return { ResourceUsage: sumUsage(usages), Tasks: tasks, Timestamp: (at || Date.now()) * 1_000_000 };
    },
  );

  // The latest result of each of the allocation's service checks, from this node's check runner
  // (Nomad's client checks route; the server's /v1/allocation/:id/checks answers what the node reported).
  app.get<{ Params: { id: string } }>(
    '/v1/client/allocation/:id/checks',
    { config: { access: 'read' } },
    async (req): Promise<api.AllocCheckStatuses> => {
      const runner = runnerOf(deps, req.params.id);
      return checkStatuses(readyClient(deps).checkResults(req.params.id), runner.alloc.taskGroup);
    },
  );
}
