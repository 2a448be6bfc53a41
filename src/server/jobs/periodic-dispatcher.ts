// The leader's periodic dispatcher (Nomad's nomad/periodic.go): for every
// periodic job that is enabled and not stopped, sleeps on the injectable
// clock until its next cron time and launches a child job for that time.
// A leader that starts finds the latest launch from the children it can
// see (or the job's submission) and launches once at once if a scheduled
// time passed while no leader ran, as Nomad does; a job registered or
// changed later is picked up from the store's changes.

import { AbortedError, describeError, Lifecycle, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import { nextLaunch, type Job } from '../../structs/index.js';
import { rowKey, StateStoreError, untilChangeOr, type StateStore } from '../state/index.js';
import { periodicLaunchOf } from './child-jobs.js';
import type { JobService } from './job-service.js';

export interface PeriodicDispatcherOptions {
  store: StateStore;
  jobs: JobService;
  clock?: Clock;
  logger: Logger;
}

/**
 * Launches periodic jobs on time. Lifecycle (lib Lifecycle): start()
 * returns once the loop runs; stop() is safe twice and waits for the loop
 * (a launch in flight completes or is refused by the store's fence).
 */
export class PeriodicDispatcher {
  readonly #store: StateStore;
  readonly #jobs: JobService;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #life: Lifecycle;
  /** namespace/id -> the scheduled time (ms) of its latest launch. */
  readonly #last = new Map<string, number>();

  constructor(opts: PeriodicDispatcherOptions) {
    this.#store = opts.store;
    this.#jobs = opts.jobs;
    this.#clock = opts.clock ?? systemClock;
    this.#log = opts.logger.child({ component: 'periodic' });
    this.#life = new Lifecycle({ logger: this.#log });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  start(): Promise<void> {
    return this.#life.start((signal) => this.#start(signal));
  }

  stop(): Promise<void> {
    return this.#life.stop();
  }

  #start(signal: AbortSignal): void {
    void this.#life.track((async () => {
      while (!signal.aborted && !this.#store.closed) {
        try {
          const snap = this.#store.snapshot();
          const seen = snap.index;
          const jobs = snap.list('jobs', { filter: (j) => j.periodic !== undefined && j.periodic.enabled && !j.stop && j.parentId === undefined });
          const now = this.#clock.now();
          let wake = Number.POSITIVE_INFINITY;
          for (const job of jobs) {
            const key = rowKey(job.namespace, job.id);
            const last = this.#last.get(key) ?? this.#latestLaunch(job, snap.list('jobs', { filter: (j) => j.parentId === job.id && j.namespace === job.namespace }));
            this.#last.set(key, last);
            const periodic = job.periodic as NonNullable<Job['periodic']>;
            const crons = [...(periodic.cron ? [periodic.cron] : []), ...(periodic.crons ?? [])];
            const next = nextLaunch(crons, periodic.timeZone, last);
            if (next === undefined) continue;
            if (next <= now) {
              this.#last.set(key, next);
              await this.#jobs.launchPeriodic(job.namespace, job.id, { launchMs: next });
              // Only one launch for times missed while no leader ran: the next one counts from now.
              const following = nextLaunch(crons, periodic.timeZone, Math.max(next, now));
              if (following !== undefined) {
                this.#last.set(key, Math.max(next, now));
                wake = Math.min(wake, following);
              }
            } else wake = Math.min(wake, next);
          }
          for (const key of this.#last.keys()) if (!jobs.some((j) => rowKey(j.namespace, j.id) === key)) this.#last.delete(key);
          // A change of the jobs wakes the loop, or the next launch's time (none due: the change alone).
          await untilChangeOr(this.#store, ['jobs'], seen, Number.isFinite(wake) ? wake : undefined, this.#clock, signal);
        } catch (err) {
          if (err instanceof AbortedError || signal.aborted) return;
          if (err instanceof StateStoreError && err.code === 'STORE_CLOSED') return;
          this.#log.error({ err: describeError(err) }, 'periodic launch failed; retrying');
          await this.#clock.sleep(1000, signal).catch(() => undefined);
        }
      }
    })());
  }

  /** The scheduled time of the job's latest launch: its newest periodic child, else when it was submitted. */
  #latestLaunch(job: Job, children: readonly Job[]): number {
    let latest = job.submitTime;
    for (const c of children) latest = Math.max(latest, periodicLaunchOf(c.id, job.id) ?? 0);
    return latest;
  }
}
