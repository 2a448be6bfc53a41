// A node's drain and eligibility: the controls (writers only; the API
// refuses others anyway) and the drain's progress: the allocations it has
// left to move, its deadline counting down, the drainer's last word, then
// its end. Nomad's DrainSpec: Deadline in nanoseconds (0 none, negative
// force), IgnoreSystemJobs; the operator's message goes in Meta.message as
// Nomad's `node drain -m` puts it.

import { useEffect, useState } from 'preact/hooks';
import { ApiError, fromGoTime, type Allocation, type Node } from '../api';
import { duration, nodeActions, parseDuration } from '../api-nodes';
import { Section, Table, short, time } from '../components';
import { useCanWrite } from '../session';

const TERMINAL = new Set(['complete', 'failed', 'lost']);

/**
 * The allocations the node's drain still has to move off: those not
 * finished on the node (stopping ones too: they still run there), but system
 * jobs' when the drain leaves them.
 */
export function leftToMigrate(node: Node, allocs: Allocation[]): Allocation[] {
  const ignoreSystem = node.DrainStrategy?.IgnoreSystemJobs ?? false;
  return allocs.filter((a) => !TERMINAL.has(a.ClientStatus) && !(ignoreSystem && a.Job?.Type === 'system'));
}

/** Where an allocation left to move is: stopping, marked for migration, or waiting its turn. */
function migration(a: Allocation): string {
  if (a.DesiredStatus !== 'run') return 'stopping';
  return a.DesiredTransition?.Migrate ? 'marked to migrate' : 'waiting its turn';
}

function errorText(err: unknown): string {
  return err instanceof ApiError ? `${err.message} (${err.code})` : (err as Error).message;
}

/** Runs a node write, keeping its outcome (or the API's refusal) for the page to show. */
function useWrite(): [{ busy: boolean; message?: string; error?: string }, (label: string, run: () => Promise<unknown>, done: string) => Promise<void>] {
  const [state, setState] = useState<{ busy: boolean; message?: string; error?: string }>({ busy: false });
  const go = async (label: string, run: () => Promise<unknown>, done: string): Promise<void> => {
    setState({ busy: true, message: `${label}…` });
    try {
      await run();
      setState({ busy: false, message: done });
    } catch (err) {
      setState({ busy: false, error: errorText(err) });
    }
  };
  return [state, go];
}

export function DrainControls({ node }: { node: Node }) {
  const canWrite = useCanWrite();
  const [deadline, setDeadline] = useState('1h');
  const [force, setForce] = useState(false);
  const [ignoreSystem, setIgnoreSystem] = useState(false);
  const [message, setMessage] = useState('');
  const [invalid, setInvalid] = useState<string | undefined>();
  const [state, write] = useWrite();
  if (!canWrite) return null;

  const submit = (e: Event): void => {
    e.preventDefault();
    let deadlineNs = -1;
    if (!force) {
      const parsed = deadline.trim() === '' ? 0 : parseDuration(deadline);
      if (parsed === undefined) {
        setInvalid(`deadline "${deadline}" is not a duration such as 30s, 10m or 1h30m (leave it empty for none)`);
        return;
      }
      deadlineNs = parsed;
    }
    setInvalid(undefined);
    const meta = message.trim() ? { message: message.trim() } : undefined;
    void write('Starting the drain', () => nodeActions.drain(node.ID, { deadlineNs, ignoreSystemJobs: ignoreSystem }, meta), 'Drain started.');
  };
  const eligible = node.SchedulingEligibility === 'eligible';
  return (
    <Section title="Drain and eligibility" id="controls">
      <div class="node-controls">
        <span class="action">
          <button
            type="button"
            data-action="eligibility"
            disabled={state.busy || (node.Drain && !eligible)}
            title={node.Drain ? 'A draining node stays ineligible; stop the drain first.' : undefined}
            onClick={() => void write(eligible ? 'Marking ineligible' : 'Marking eligible', () => nodeActions.eligibility(node.ID, !eligible), eligible ? 'The node is ineligible: nothing new is placed on it.' : 'The node is eligible again.')}
          >
            {eligible ? 'Make ineligible' : 'Make eligible'}
          </button>
        </span>
        {node.Drain ? (
          <span class="action">
            <button type="button" data-action="cancel-drain" disabled={state.busy}
              onClick={() => void write('Stopping the drain', () => nodeActions.cancelDrain(node.ID, false), 'Drain stopped; the node stays ineligible.')}>
              Stop drain
            </button>
          </span>
        ) : null}
      </div>
      {node.Drain ? null : (
        <form class="drain-form" onSubmit={submit} aria-label="drain the node">
          <label>
            Deadline
            <input name="deadline" value={deadline} disabled={force} onInput={(e) => setDeadline((e.target as HTMLInputElement).value)}
              aria-describedby="deadline-help" inputMode="text" autoComplete="off" />
          </label>
          <span id="deadline-help" class="muted">After it, what is left is stopped. Empty: no deadline.</span>
          <label class="check">
            <input type="checkbox" name="force" checked={force} onChange={(e) => setForce((e.target as HTMLInputElement).checked)} />
            Force: stop every allocation now
          </label>
          <label class="check">
            <input type="checkbox" name="ignore-system" checked={ignoreSystem} onChange={(e) => setIgnoreSystem((e.target as HTMLInputElement).checked)} />
            Ignore system jobs (leave them running)
          </label>
          <label>
            Message
            <input name="message" value={message} onInput={(e) => setMessage((e.target as HTMLInputElement).value)} placeholder="why (kept in the drain's meta)" autoComplete="off" />
          </label>
          <button type="submit" class="danger" disabled={state.busy}>Drain node</button>
        </form>
      )}
      {invalid ? <p class="error" role="alert">{invalid}</p> : null}
      {state.error ? <p class="error" role="alert">{state.error}</p> : null}
      {state.message && !state.error ? <p class="progress" role="status" aria-live="polite">{state.message}</p> : null}
    </Section>
  );
}

/** Re-renders every second while `on`, for a countdown. */
function useSecondTick(on: boolean): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!on) return;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [on]);
  return now;
}

export function DrainProgress({ node, allocs }: { node: Node; allocs: Allocation[] }) {
  const draining = node.Drain && !!node.DrainStrategy;
  const now = useSecondTick(draining);
  const last = node.LastDrain;
  if (!draining && !last) return null;
  if (!draining && last) {
    const at = fromGoTime(last.UpdatedAt);
    return (
      <Section title="Drain" id="drain">
        <p data-drain-status={last.Status} role="status">
          Last drain {last.Status}{at ? ` at ${time(at)}` : ''}.
          {last.BerthMessage && last.BerthMessage !== `drain ${last.Status}` ? ` ${last.BerthMessage}.` : ''}
        </p>
        {last.Meta?.['message'] ? <p>Message: {last.Meta['message']}</p> : null}
      </Section>
    );
  }
  const spec = node.DrainStrategy!;
  const left = leftToMigrate(node, allocs);
  const force = fromGoTime(spec.ForceDeadline);
  const deadline = spec.Deadline < 0 ? 'forced: everything stops now' : force ? `${time(force)} (${force > now ? `in ${duration(force - now)}` : 'passed'})` : 'none';
  return (
    <Section title="Drain in progress" id="drain">
      <p data-drain-status="draining" role="status" aria-live="polite">
        <strong data-drain-left={left.length}>{left.length === 1 ? '1 allocation' : `${left.length} allocations`}</strong> left to migrate.
        {' '}Deadline: <span data-drain-deadline={force ?? ''}>{deadline}</span>.
        {spec.IgnoreSystemJobs ? ' System jobs are left running.' : ''}
      </p>
      <p class="muted">
        Started {time(fromGoTime(spec.StartedAt))}.{last?.BerthMessage ? ` Drainer: ${last.BerthMessage}.` : ''}
      </p>
      {last?.Meta?.['message'] ? <p>Message: {last.Meta['message']}</p> : null}
      <Table
        label="allocations left to migrate"
        head={['Allocation', 'Job', 'Status', 'Migration']}
        empty="Nothing left to move."
        rows={left.map((a) => [
          <a href={`/ui/allocations/${a.ID}`}>{short(a.ID)}</a>,
          a.JobID,
          a.ClientStatus,
          <span data-migration={a.ID}>{migration(a)}</span>,
        ])}
      />
    </Section>
  );
}
