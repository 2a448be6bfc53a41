// The client's holdStarts (a dev agent's: while its API answers a burst of
// submissions): new allocations get their runners only once the hold lets
// go; a change that only stops a known allocation is not held; a client that
// stops while held starts nothing. And the other hold of the sync: a batch
// allocation's `running` goes to the status reporter marked `hold` (its
// end, if it comes at once, goes in the same POST); a service allocation's
// does not.
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { systemClock } from '../lib/index.js';
import type { Allocation, Job } from '../structs/index.js';
import { makeAlloc, makeJob } from '../../test/support/client-allocrunner.js';
import type { AllocRunnerOptions } from './allocrunner/index.js';
import { SqliteClientStateStore } from './state/index.js';
import type { AllocStatusReport, AllocUpdate } from './serverconn/index.js';
import type { AllocSync } from './_alloc-sync.js';
import { RecordingRunner, testAllocSync } from './_alloc-sync-kit.js';
import type { AllocRunnerHandle, RunnerEntry } from './_client-types.js';

/** A hold the test lets go of by hand, counting how often it was asked. */
function manualHold(): { hold: (signal: AbortSignal) => Promise<void>; release: () => void; asked: () => number } {
  let asked = 0;
  let release = (): void => undefined;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return {
    hold: (signal) => {
      asked++;
      return Promise.race([gate, new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }))]);
    },
    release: () => release(),
    asked: () => asked,
  };
}

describe('AllocSync holdStarts', () => {
  let dir: string;
  let store: SqliteClientStateStore;
  let job: Job;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'berth-hold-'));
    store = SqliteClientStateStore.open(path.join(dir, 'state.db'), { headroomBytes: 0 });
    job = makeJob({ id: 'web', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }] });
  });
  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function sync(
    hold: (signal: AbortSignal) => Promise<void>,
    stopping = new AbortController(),
    reporter?: { report: (u: AllocStatusReport, opts?: { hold?: boolean }) => void },
  ): { sync: AllocSync; runners: Map<string, RunnerEntry>; made: RecordingRunner[]; onStatus: Map<string, AllocRunnerOptions['onStatus']> } {
    const made: RecordingRunner[] = [];
    const onStatus = new Map<string, AllocRunnerOptions['onStatus']>();
    const { sync: s, runners } = testAllocSync({
      dir,
      store,
      clock: systemClock,
      opts: { holdStarts: hold },
      reporter,
      signal: stopping.signal,
      createAllocRunner: (o: AllocRunnerOptions) => {
        const r = new RecordingRunner(o.alloc.id);
        made.push(r);
        onStatus.set(o.alloc.id, o.onStatus);
        return r as unknown as AllocRunnerHandle;
      },
    });
    return { sync: s, runners, made, onStatus };
  }

  const change = (changed: Allocation[], current: Allocation[] = changed): AllocUpdate => ({
    changed: changed.map((a) => ({ ...a, job })),
    removed: [],
    current: new Map(current.map((a) => [a.id, { ...a, job }])),
  });

  it('a new allocation gets its runner, and runs, only once the hold lets go', async () => {
    const h = manualHold();
    const { sync: s, made } = sync(h.hold);
    const alloc = makeAlloc(job);
    const applied = s.onAllocations(change([alloc]), 10);
    for (let i = 0; i < 5; i++) await nextTurn();
    assert.equal(h.asked(), 1);
    assert.equal(made.length, 0, 'no runner while held');
    h.release();
    await applied;
    await nextTurn();
    assert.deepEqual(made.map((r) => [r.allocId, r.calls]), [[alloc.id, ['run']]]);
  });

  it('a change that only stops a known allocation is not held', async () => {
    const first = manualHold();
    first.release();
    const stopping = new AbortController();
    const { sync: s, made } = sync(first.hold, stopping);
    const alloc = makeAlloc(job);
    await s.onAllocations(change([alloc]), 10);
    assert.equal(first.asked(), 1);
    const stopped = { ...alloc, desiredStatus: 'stop' as const, modifyIndex: 11 };
    await s.onAllocations(change([stopped]), 11);
    assert.equal(first.asked(), 1, 'not asked again for a known allocation');
    assert.deepEqual(made[0]?.calls, ['run', 'update:stop']);
  });

  it("reports a batch allocation's running marked hold, and a service allocation's, or a batch one's end, not", async () => {
    const released = manualHold();
    released.release();
    const sent: Array<[string, string, boolean]> = [];
    const reporter = { report: (u: AllocStatusReport, opts: { hold?: boolean } = {}) => void sent.push([u.id, u.clientStatus, opts.hold ?? false]) };
    const { sync: s, onStatus } = sync(released.hold, new AbortController(), reporter);
    const service = makeAlloc(job);
    const batchJob = makeJob({ id: 'once', type: 'batch', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }] });
    const batch = makeAlloc(batchJob);
    await s.onAllocations(change([service]), 10);
    await s.onAllocations({ changed: [{ ...batch, job: batchJob }], removed: [], current: new Map([[service.id, { ...service, job }], [batch.id, { ...batch, job: batchJob }]]) }, 11);
    const status = (id: string, clientStatus: 'running' | 'complete'): void =>
      onStatus.get(id)!({ allocId: id, clientStatus, clientDescription: '', taskStates: {} } as Parameters<AllocRunnerOptions['onStatus']>[0]);
    status(service.id, 'running');
    status(batch.id, 'running');
    status(batch.id, 'complete');
    assert.deepEqual(sent, [
      [service.id, 'running', false],
      [batch.id, 'running', true],
      [batch.id, 'complete', false],
    ]);
  });

  it('a client that stops while held starts nothing', async () => {
    const h = manualHold();
    const stopping = new AbortController();
    const { sync: s, made } = sync(h.hold, stopping);
    const applied = s.onAllocations(change([makeAlloc(job)]), 10);
    await nextTurn();
    stopping.abort();
    await applied;
    assert.equal(made.length, 0);
  });
});
