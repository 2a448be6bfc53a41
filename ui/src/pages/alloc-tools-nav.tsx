// What the allocation's tool pages (logs, files, exec) share: the way back
// to the allocation, links between the tools, and the task chooser.

import { useLocation } from 'preact-iso/router';
import { api, ApiError, type Allocation } from '../api';
import { short } from '../components';
import { useLive } from '../live';
import { useCanWrite } from '../session';
import './alloc-tools.css';

export type Tool = 'logs' | 'fs' | 'exec';

const enc = encodeURIComponent;

/** The UI path of a tool for the allocation (and task). */
export function toolHref(allocId: string, tool: Tool, task?: string): string {
  const base = `/ui/allocations/${enc(allocId)}/${tool}`;
  return task && tool !== 'fs' ? `${base}?task=${enc(task)}` : base;
}

/** The allocation, live (its task states change). */
export function useAllocation(id: string) {
  return useLive(`alloc-tools/${id}`, ['Allocation'], () => api.allocation(id));
}

/** The tasks of the allocation: those of its group in the job, else those with a state. */
export function taskNames(alloc: Allocation): string[] {
  const group = alloc.Job?.TaskGroups?.find((g) => g.Name === alloc.TaskGroup);
  const names = group?.Tasks?.map((t) => t.Name) ?? [];
  return names.length ? names : Object.keys(alloc.TaskStates ?? {});
}

/** The task the URL names (?task=), else the allocation's first. */
export function useChosenTask(alloc: Allocation): string {
  const { query } = useLocation();
  const names = taskNames(alloc);
  const asked = query['task'];
  return asked && names.includes(asked) ? asked : (names[0] ?? '');
}

/** The allocation's breadcrumb and the links between its tools (exec for writers only). */
export function ToolsNav({ alloc, tool, task }: { alloc: Allocation; tool: Tool; task: string }) {
  const canWrite = useCanWrite();
  const tools: Array<[Tool, string]> = [
    ['logs', 'Logs'],
    ['fs', 'Files'],
    ...(canWrite ? [['exec', 'Exec'] as [Tool, string]] : []),
  ];
  return (
    <nav class="tools-nav" aria-label="Allocation tools">
      <a href={`/ui/allocations/${enc(alloc.ID)}`}>
        Allocation {short(alloc.ID)} ({alloc.JobID}.{alloc.TaskGroup})
      </a>
      <span class="tools-tabs">
        {tools.map(([t, label]) => (
          <a href={toolHref(alloc.ID, t, task)} aria-current={t === tool ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </span>
    </nav>
  );
}

/** A chooser of the allocation's task; choosing one changes the URL's ?task=. */
export function TaskChooser({ alloc, tool, task, disabled }: { alloc: Allocation; tool: Tool; task: string; disabled?: boolean }) {
  const { route } = useLocation();
  const names = taskNames(alloc);
  return (
    <label class="task-chooser">
      Task{' '}
      <select value={task} disabled={disabled} onChange={(e) => route(toolHref(alloc.ID, tool, (e.target as HTMLSelectElement).value))}>
        {names.map((n) => (
          <option value={n}>
            {n} ({alloc.TaskStates?.[n]?.State ?? 'pending'})
          </option>
        ))}
      </select>
    </label>
  );
}

/**
 * Why a tool failed, in the user's words: the API's message. The agent
 * serving the UI forwards the allocation's client routes to the node that
 * runs it; when that node's agent cannot be reached (502, the message names
 * the node and why), the command that reaches it from a shell is added.
 */
export function toolError(err: Error, cli: string): string {
  const unreachable = err instanceof ApiError && err.status === 502;
  return unreachable ? `${err.message}. From a shell that reaches the node: ${cli}` : err.message;
}
