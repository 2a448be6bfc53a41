// The node's service checks: every check of every running allocation on one
// schedule (a min-heap of due times, one timer armed for the earliest), each
// run at a fixed cadence from its first due time so that nothing drifts, at
// most one run of a check in flight. Results go through the check's
// thresholds (check-state.ts); a change of what a check reports is handed to
// `onChange` (the client reports it with the allocation's status), and
// check_restart's verdicts to `onRestart`.

import { createHash } from 'node:crypto';
import { AbortedError, Lifecycle, silentLogger, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import type { CheckResult, CheckSpec } from '../../structs/index.js';
import { runProbe, type Probe } from './_probe.js';
import { initialCheckState, nextCheckState, type CheckState } from './check-state.js';

/** One check of one allocation, with the address it probes. */
export interface CheckTarget {
  /** Unique within the allocation. */
  id: string;
  service: string;
  name: string;
  /** The task whose service it is (a task service), or the group's service's task. */
  task?: string;
  /** The task check_restart restarts; absent: none. */
  restartTask?: string;
  check: CheckSpec;
  address: string;
  port: number;
}

export interface CheckRunnerOptions {
  clock?: Clock;
  logger?: Logger;
  /** Runs one check; default real HTTP/TCP probes. */
  probe?: Probe;
  /** The allocation's results changed (status or output of a check). Called synchronously; must not throw. */
  onChange(allocId: string, results: Record<string, CheckResult>): void;
  /** check_restart decided that the task must restart. Must not throw. */
  onRestart(allocId: string, task: string, reason: string): void;
}

interface Entry {
  allocId: string;
  target: CheckTarget;
  state: CheckState;
  due: number;
  running: boolean;
  removed: boolean;
}

/**
 * Lifecycle: start() arms the schedule; stop() stops it (runs in flight end
 * on their own timeouts) and is safe twice. set()/remove() may be called at
 * any time, also before start().
 */
export class CheckRunner {
  readonly #o: CheckRunnerOptions;
  readonly #clock: Clock;
  readonly #probe: Probe;
  readonly #log: Logger;
  readonly #life: Lifecycle;
  readonly #allocs = new Map<string, Map<string, Entry>>();
  readonly #heap: Entry[] = [];
  #wake = new AbortController();
  #runs = 0;

  constructor(opts: CheckRunnerOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#probe = opts.probe ?? runProbe;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'check-runner' });
    this.#life = new Lifecycle({ logger: this.#log });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /** How many checks are scheduled and how many runs were made. */
  get counts(): { checks: number; runs: number } {
    let checks = 0;
    for (const m of this.#allocs.values()) checks += m.size;
    return { checks, runs: this.#runs };
  }

  start(): Promise<void> {
    return this.#life.start((signal) => {
      void this.#life.track(this.#loop(signal));
    });
  }

  stop(): Promise<void> {
    return this.#life.stop(() => this.#wake.abort());
  }

  /**
   * Makes the allocation's checks `targets`: a check kept (same ID, same
   * spec, same address) keeps its state and cadence; new ones start pending
   * (or at their initial_status); missing ones stop. Does not block.
   */
  set(allocId: string, targets: readonly CheckTarget[]): void {
    const now = this.#clock.now();
    const before = this.#allocs.get(allocId) ?? new Map<string, Entry>();
    const after = new Map<string, Entry>();
    let changed = false;
    for (const target of targets) {
      const old = before.get(target.id);
      if (old && sameTarget(old.target, target)) {
        after.set(target.id, old);
        continue;
      }
      if (old) old.removed = true;
      const entry: Entry = { allocId, target, state: initialCheckState(target.check, now), due: now + stagger(allocId, target), running: false, removed: false };
      after.set(target.id, entry);
      this.#push(entry);
      changed = true;
    }
    for (const [id, e] of before) {
      if (after.has(id)) continue;
      e.removed = true;
      changed = true;
    }
    if (after.size) this.#allocs.set(allocId, after);
    else this.#allocs.delete(allocId);
    if (changed) this.#o.onChange(allocId, this.results(allocId));
  }

  /** Stops every check of the allocation. Does not block; safe to repeat. */
  remove(allocId: string): void {
    for (const e of this.#allocs.get(allocId)?.values() ?? []) e.removed = true;
    this.#allocs.delete(allocId);
  }

  /** The allocation's latest results by check ID (empty when it has none). */
  results(allocId: string): Record<string, CheckResult> {
    const out: Record<string, CheckResult> = {};
    for (const [id, e] of this.#allocs.get(allocId) ?? []) {
      out[id] = { service: e.target.service, name: e.target.name, ...(e.target.task ? { task: e.target.task } : {}), status: e.state.status, output: e.state.output, at: e.state.at };
    }
    return out;
  }

  #push(e: Entry): void {
    const h = this.#heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if ((h[p] as Entry).due <= e.due) break;
      h[i] = h[p] as Entry;
      i = p;
    }
    h[i] = e;
    if (i === 0) this.#wake.abort();
  }

  #pop(): Entry | undefined {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop();
    if (!top || !last || h.length === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= h.length) break;
      const r = l + 1;
      const c = r < h.length && (h[r] as Entry).due < (h[l] as Entry).due ? r : l;
      if ((h[c] as Entry).due >= last.due) break;
      h[i] = h[c] as Entry;
      i = c;
    }
    h[i] = last;
    return top;
  }

  async #loop(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const next = this.#heap[0];
      const wake = (this.#wake = new AbortController());
      const now = this.#clock.now();
      if (!next || next.due > now) {
        try {
          await this.#clock.sleep(next ? next.due - now : 3_600_000, AbortSignal.any([signal, wake.signal]));
        } catch (err) {
          if (!(err instanceof AbortedError)) throw err;
        }
        continue;
      }
      while (this.#heap[0] && (this.#heap[0] as Entry).due <= now) {
        const e = this.#pop() as Entry;
        if (e.removed) continue;
        if (!e.running) void this.#run(e);
        const interval = e.target.check.intervalMs;
        // Fixed cadence: the next slot after now, counted from the first due time (a late run skips slots, never shifts them).
        e.due += interval * Math.max(1, Math.ceil((now - e.due + 1) / interval));
        this.#push(e);
      }
    }
  }

  async #run(e: Entry): Promise<void> {
    e.running = true;
    this.#runs++;
    const result = await this.#probe({ address: e.target.address, port: e.target.port, check: e.target.check });
    e.running = false;
    if (e.removed) return;
    const { state, restart } = nextCheckState(e.state, e.target.check, result, this.#clock.now());
    const changed = state.status !== e.state.status || state.output !== e.state.output;
    e.state = state;
    if (changed) this.#o.onChange(e.allocId, this.results(e.allocId));
    if (restart && e.target.restartTask) {
      const limit = e.target.check.checkRestart?.limit ?? 0;
      this.#log.info({ allocId: e.allocId, task: e.target.restartTask, check: e.target.name }, 'check_restart restarts the task');
      this.#o.onRestart(e.allocId, e.target.restartTask, `check "${e.target.name}" was unhealthy ${limit} time${limit === 1 ? '' : 's'} in a row: ${result.output}`);
    }
  }
}

function sameTarget(a: CheckTarget, b: CheckTarget): boolean {
  return a.address === b.address && a.port === b.port && a.restartTask === b.restartTask && JSON.stringify(a.check) === JSON.stringify(b.check);
}

/** Where in its first interval a new check first runs: spread by its ID so that many checks do not fire in one burst. */
function stagger(allocId: string, t: CheckTarget): number {
  const h = createHash('sha1').update(`${allocId}/${t.id}`).digest().readUInt32BE(0);
  return h % Math.min(t.check.intervalMs, 1000);
}
