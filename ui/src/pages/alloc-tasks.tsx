// One task of an allocation: its lifecycle (prestart, poststart, sidecar,
// main; the leader), state and restarts, its events in plain words with
// their times, links to its logs, files and a terminal, and the end of its
// logs; a writer's restart and signal.

import type { Task } from '../../../src/api/index.js';
import { api, ApiError, fromGoTime, fromNs, type Allocation } from '../api';
import { Badge, Facts, Section, Table, short, time } from '../components';
import { useLive } from '../live';
import { TaskActions } from './alloc-actions';

/** A task's lifecycle in Nomad's UI's words: "prestart sidecar", "poststart", "main"..., with ", leader". Pure. */
export function lifecycleOf(task: Task | undefined): string {
  const hook = task?.Lifecycle?.Hook;
  const kind = hook ? `${hook}${task?.Lifecycle?.Sidecar ? ' sidecar' : ''}` : 'main';
  return task?.Leader ? `${kind}, leader` : kind;
}

/** The order Nomad's UI lists tasks in: prestart, main, poststart, poststop; by name within. */
const PHASE: Record<string, number> = { prestart: 0, main: 1, poststart: 2, poststop: 3 };
export function taskOrder(tasks: Record<string, Task | undefined>): (a: string, b: string) => number {
  const phase = (n: string): number => PHASE[tasks[n]?.Lifecycle?.Hook || 'main'] ?? 1;
  return (a, b) => phase(a) - phase(b) || a.localeCompare(b);
}

function LogTail({ allocId, task }: { allocId: string; task: string }) {
  const { data, error } = useLive(`logs/${allocId}/${task}`, ['allocation'], async () => {
    const [stdout, stderr] = await Promise.all([api.logTail(allocId, task, 'stdout'), api.logTail(allocId, task, 'stderr').catch(() => '')]);
    return { stdout, stderr };
  });
  if (error && !data) {
    const why =
      error instanceof ApiError && error.status === 404
        ? `this agent does not run the allocation; read its logs with: berth alloc logs ${short(allocId)} ${task}`
        : error.message;
    return <p class="muted">Logs unavailable: {why}</p>;
  }
  if (!data) return <p class="loading">Loading logs…</p>;
  return (
    <>
      <p class="log-label">stdout</p>
      <pre class="logs" tabIndex={0} aria-label={`stdout of ${task}`} data-logs={`${task}/stdout`}>
        {data.stdout || '(no output)'}
      </pre>
      {data.stderr ? (
        <>
          <p class="log-label">stderr</p>
          <pre class="logs err" tabIndex={0} aria-label={`stderr of ${task}`} data-logs={`${task}/stderr`}>
            {data.stderr}
          </pre>
        </>
      ) : null}
    </>
  );
}

export function TaskSection({ alloc, name, spec, canWrite }: { alloc: Allocation; name: string; spec: Task | undefined; canWrite: boolean }) {
  const t = alloc.TaskStates?.[name];
  if (!t) return null;
  const base = `/ui/allocations/${encodeURIComponent(alloc.ID)}`;
  const q = `?task=${encodeURIComponent(name)}`;
  return (
    <Section title={`Task ${name}`} id={`task-${name}`}>
      <Facts
        items={[
          ['State', <Badge value={t.Failed ? 'failed' : t.State} label={`${t.State}${t.Failed ? ' (failed)' : ''}`} />],
          ['Lifecycle', <span data-lifecycle={name}>{lifecycleOf(spec)}</span>],
          ['Driver', spec?.Driver ?? '-'],
          ['Restarts', <span data-restarts={name}>{String(t.Restarts)}</span>],
          ['Last restart', time(fromGoTime(t.LastRestart))],
          ['Started', time(fromGoTime(t.StartedAt))],
          ['Finished', time(fromGoTime(t.FinishedAt))],
        ]}
      />
      <nav class="task-links" aria-label={`tools for task ${name}`}>
        <a href={`${base}/logs${q}`}>Logs</a>
        <a href={`${base}/fs/`}>Files</a>
        {canWrite ? <a href={`${base}/exec${q}`}>Exec</a> : null}
      </nav>
      {canWrite ? <TaskActions alloc={alloc} task={name} /> : null}
      <h3>Events</h3>
      <Table
        label={`events of task ${name}`}
        head={['Time', 'Type', 'Message']}
        empty="No events."
        rows={[...(t.Events ?? [])].reverse().map((e) => [time(fromNs(e.Time)), e.Type, e.DisplayMessage || e.Message])}
      />
      <h3>Logs (the end of each)</h3>
      {canWrite ? <LogTail allocId={alloc.ID} task={name} /> : <p class="muted">Logs need a management token.</p>}
    </Section>
  );
}
