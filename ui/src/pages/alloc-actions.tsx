// What a writer may do to an allocation from its page: stop it, restart its
// tasks (one or all), send them a signal. Each asks to confirm, then waits on
// the event stream until the change shows in the allocation (the task's
// Restart Signaled or Signaling event, the allocation stopped) and says so.
// Only rendered for a token that may write; the API refuses others anyway.

import { useState } from 'preact/hooks';
import { api, type Allocation } from '../api';
import { allocActions, SIGNALS } from '../api-alloc';
import { ActionButton, short } from '../components';
import { watchUntil } from '../live';

/** How many events of `type` each task of `alloc` has had. */
function eventCounts(alloc: Allocation, type: string): Record<string, number> {
  return Object.fromEntries(Object.entries(alloc.TaskStates ?? {}).map(([name, t]) => [name, (t.Events ?? []).filter((e) => e.Type === type).length]));
}

/** The tasks of `alloc` running now (the ones restart and signal reach). */
function runningTasks(alloc: Allocation): string[] {
  return Object.entries(alloc.TaskStates ?? {}).filter(([, t]) => t.State === 'running').map(([name]) => name);
}

/**
 * Runs `act` on `tasks` and resolves once each has a new `eventType` event
 * in the API, with `done`; reports the wait through `progress`.
 */
async function actAndSee(alloc: Allocation, tasks: string[], eventType: string, act: () => Promise<unknown>, progress: (m: string) => void, done: string): Promise<string> {
  const before = eventCounts(await api.allocation(alloc.ID), eventType);
  await act();
  progress(`Sent; waiting for the ${eventType} event of ${tasks.join(', ')}…`);
  return watchUntil(['allocation'], async () => {
    const now = eventCounts(await api.allocation(alloc.ID), eventType);
    return tasks.every((t) => (now[t] ?? 0) > (before[t] ?? 0)) ? done : undefined;
  });
}

function SignalChooser({ id, value, onChange }: { id: string; value: string; onChange: (s: string) => void }) {
  return (
    <label class="signal-choice" for={id}>
      Signal{' '}
      <select id={id} value={value} onChange={(e) => onChange((e.target as HTMLSelectElement).value)}>
        {SIGNALS.map((s) => (
          <option value={s}>{s}</option>
        ))}
      </select>
    </label>
  );
}

/** The allocation's own actions: stop it, restart or signal every running task. */
export function AllocActions({ alloc }: { alloc: Allocation }) {
  const [sig, setSig] = useState<string>('SIGHUP');
  const stopped = alloc.DesiredStatus !== 'run';
  const tasks = runningTasks(alloc);
  const idle = tasks.length === 0 ? 'no task of the allocation is running' : undefined;
  return (
    <div class="actions alloc-actions" data-actions="allocation">
      <ActionButton
        label="Stop allocation"
        danger
        confirm={`Stop allocation ${short(alloc.ID)} of job ${alloc.JobID}? The scheduler places a replacement for a service or system job.`}
        {...(stopped ? { disabledReason: 'the allocation is already stopping or stopped' } : {})}
        run={async (progress) => {
          const res = await allocActions.stop(alloc.ID);
          progress('Stopping…');
          return watchUntil(['allocation'], async () => {
            const a = await api.allocation(alloc.ID);
            if (a.ClientStatus === 'running' || a.ClientStatus === 'pending') return undefined;
            return `Stopped: the allocation is ${a.ClientStatus}${res.EvalID ? `; evaluation ${short(res.EvalID)} places its replacement` : ''}.`;
          });
        }}
      />
      <ActionButton
        label="Restart all tasks"
        confirm={`Restart every running task of allocation ${short(alloc.ID)} (${tasks.join(', ')})? The volumes stay mounted.`}
        {...(idle ? { disabledReason: idle } : {})}
        run={(progress) => actAndSee(alloc, tasks, 'Restart Signaled', () => allocActions.restart(alloc.ID, undefined), progress, `Restarted ${tasks.join(', ')}.`)}
      />
      <span class="signal-action">
        <SignalChooser id={`signal-${alloc.ID}`} value={sig} onChange={setSig} />
        <ActionButton
          label="Signal all tasks"
          confirm={`Send ${sig} to every running task of allocation ${short(alloc.ID)} (${tasks.join(', ')})?`}
          {...(idle ? { disabledReason: idle } : {})}
          run={(progress) => actAndSee(alloc, tasks, 'Signaling', () => allocActions.signal(alloc.ID, sig, undefined), progress, `Sent ${sig} to ${tasks.join(', ')}.`)}
        />
      </span>
    </div>
  );
}

/** One task's actions: restart it, send it a signal. */
export function TaskActions({ alloc, task }: { alloc: Allocation; task: string }) {
  const [sig, setSig] = useState<string>('SIGHUP');
  const running = alloc.TaskStates?.[task]?.State === 'running';
  const idle = running ? undefined : `task ${task} is not running`;
  return (
    <div class="actions task-actions" data-actions={task}>
      <ActionButton
        label="Restart task"
        confirm={`Restart task ${task} of allocation ${short(alloc.ID)}?`}
        {...(idle ? { disabledReason: idle } : {})}
        run={(progress) => actAndSee(alloc, [task], 'Restart Signaled', () => allocActions.restart(alloc.ID, task), progress, `Restarted ${task}.`)}
      />
      <span class="signal-action">
        <SignalChooser id={`signal-${alloc.ID}-${task}`} value={sig} onChange={setSig} />
        <ActionButton
          label="Send signal"
          confirm={`Send ${sig} to task ${task} of allocation ${short(alloc.ID)}?`}
          {...(idle ? { disabledReason: idle } : {})}
          run={(progress) => actAndSee(alloc, [task], 'Signaling', () => allocActions.signal(alloc.ID, sig, task), progress, `Sent ${sig} to ${task}.`)}
        />
      </span>
    </div>
  );
}
