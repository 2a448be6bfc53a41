// Periodic jobs on the injectable clock: the leader's dispatcher launches a
// child job `<id>/periodic-<unix>` at each cron time, skips a launch while a
// previous child runs under prohibit_overlap, launches once for a time that
// passed while no leader ran, and `force` launches at once.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import type { Job } from '../../structs/index.js';
import { eventually } from '../../../test/support/eventually.js';
import { rowKey, SqliteStateStore } from '../state/index.js';
import { JobService } from './job-service.js';
import { PeriodicDispatcher } from './periodic-dispatcher.js';
import { registerScheduled } from '../../../test/support/scheduled-jobs.js';

// 2030-01-01T00:00:00Z
const START = Date.UTC(2030, 0, 1);
const MINUTE = 60_000;

let dir: string;
let store: SqliteStateStore;
let clock: ManualClock;
let jobs: JobService;
let dispatcher: PeriodicDispatcher | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-periodic-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  clock = new ManualClock(START);
  jobs = new JobService({ store, clock, logger: silentLogger() });
});
afterEach(async () => {
  await dispatcher?.stop();
  dispatcher = undefined;
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Registers a job and runs its pending evaluation, as the evaluation worker would. */
const register = (spec: unknown, opts?: { checkIndex?: number }): ReturnType<typeof registerScheduled> => registerScheduled(jobs, store, spec, opts);

const periodicJob = (periodic: Record<string, unknown>) => ({
  id: 'report',
  type: 'batch',
  periodic,
  groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }],
});

const children = (): Job[] => store.snapshot().list('jobs', { filter: (j) => j.parentId === 'report' }).sort((a, b) => a.id.localeCompare(b.id));
const unix = (ms: number): number => Math.floor(ms / 1000);

async function startDispatcher(): Promise<void> {
  dispatcher = new PeriodicDispatcher({ store, jobs, clock, logger: silentLogger() });
  await dispatcher.start();
}

describe('periodic jobs', () => {
  it('launch a child job at each cron time, none before, and run nothing themselves', async () => {
    const { job, evaluation } = await register(periodicJob({ cron: '*/5 * * * *' }));
    assert.equal(job.status, 'running');
    assert.equal(evaluation.status, 'complete');
    assert.equal(store.snapshot().list('allocations').length, 0);
    await startDispatcher();
    await clock.waitForSleepers(1);
    await clock.advance(4 * MINUTE);
    assert.deepEqual(children(), []);
    await clock.advance(1 * MINUTE);
    await eventually('the first launch', () => children().length === 1);
    const first = children()[0] as Job;
    assert.equal(first.id, `report/periodic-${unix(START + 5 * MINUTE)}`);
    assert.equal(first.periodic, undefined);
    assert.equal(first.type, 'batch');
    await clock.waitForSleepers(1);
    await clock.advance(5 * MINUTE);
    await eventually('the second launch', () => children().length === 2);
    assert.equal(children()[1]?.id, `report/periodic-${unix(START + 10 * MINUTE)}`);
  });

  it('read six fields as Nomad does (a year last) and honour the time zone', async () => {
    // 03:00 in Berlin (UTC+1 in January) is 02:00 UTC; the year field keeps it to 2030.
    await register(periodicJob({ crons: ['0 3 * * * 2030'], timeZone: 'Europe/Berlin' }));
    await startDispatcher();
    await clock.waitForSleepers(1);
    await clock.advance(2 * 60 * MINUTE);
    await eventually('the 03:00 Berlin launch', () => children().length === 1);
    assert.equal(children()[0]?.id, `report/periodic-${unix(START + 2 * 60 * MINUTE)}`);
  });

  it('skip a launch while the previous child runs under prohibit_overlap', async () => {
    await register(periodicJob({ cron: '* * * * *', prohibitOverlap: true }));
    await startDispatcher();
    await clock.waitForSleepers(1);
    await clock.advance(MINUTE);
    await eventually('the first launch', () => children().length === 1);
    // No node: the child's evaluation blocks and it stays pending (not dead).
    assert.equal(children()[0]?.status, 'pending');
    await clock.waitForSleepers(1);
    await clock.advance(MINUTE);
    await clock.waitForSleepers(1);
    assert.equal(children().length, 1);
    // Once the child is stopped the next launch goes ahead.
    await jobs.stop('default', children()[0]!.id);
    await clock.waitForSleepers(1);
    await clock.advance(MINUTE);
    await eventually('the launch after the overlap', () => children().length === 2);
  });

  it('launch once for the times missed while no leader ran', async () => {
    await register(periodicJob({ cron: '*/10 * * * *' }));
    // No dispatcher for an hour: six launch times pass.
    await clock.advance(60 * MINUTE);
    await startDispatcher();
    await eventually('the catch-up launch', () => children().length === 1);
    assert.equal(children()[0]?.id, `report/periodic-${unix(START + 10 * MINUTE)}`);
    await clock.waitForSleepers(1);
    await clock.advance(10 * MINUTE);
    await eventually('the next launch on schedule', () => children().length === 2);
    assert.equal(children()[1]?.id, `report/periodic-${unix(START + 70 * MINUTE)}`);
  });

  it('are launched at once by force, whatever the schedule, and not while disabled', async () => {
    await register(periodicJob({ cron: '0 0 1 1 *', enabled: false }));
    await startDispatcher();
    await clock.advance(365 * 24 * 60 * MINUTE);
    assert.deepEqual(children(), []);
    const out = await jobs.launchPeriodic('default', 'report', { force: true });
    assert.ok('job' in out);
    assert.equal(out.job.id, `report/periodic-${unix(clock.now())}`);
    assert.equal(out.job.parentId, 'report');
    assert.ok(store.snapshot().get('jobs', rowKey('default', out.job.id)));
  });

  it('refuse a cron expression or time zone that is not one, by field', async () => {
    await assert.rejects(register(periodicJob({ cron: 'every day' })), (err: Error) => {
      assert.match(err.message, /periodic\.cron: "every day" is not a cron expression/);
      return true;
    });
    await assert.rejects(register(periodicJob({ cron: '* * * * *', timeZone: 'Mars/Olympus' })), /periodic\.timeZone: time zone "Mars\/Olympus" is not an IANA time zone/);
    await assert.rejects(register({ ...periodicJob({ cron: '* * * * *' }), type: 'service' }), /periodic: periodic jobs must be of type "batch"/);
  });
});
