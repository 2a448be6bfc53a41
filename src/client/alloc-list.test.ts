// The client's admission window for new allocations (_admission.ts): of a
// burst placed at once, at most `allocations` run their set-up at a time, and
// the next one is let in as soon as one hands its first task to its driver
// (not when its run ends); a queued allocation the server stops never runs,
// and neither its stop nor its destroy waits behind the window; one that
// holds its slot past holdMs (set-up waiting on something outside) lets the
// others in; a restored allocation is never queued behind new ones. And a
// known allocation sent again with only what the client reported changed
// (its status, a new modify index) is not handed to its runner again.
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ManualClock } from '../lib/index.js';
import type { Allocation, Job } from '../structs/index.js';
import { makeAlloc, makeJob } from '../../test/support/client-allocrunner.js';
import type { AllocRunnerOptions } from './allocrunner/index.js';
import { SqliteClientStateStore } from './state/index.js';
import type { AllocUpdate } from './serverconn/index.js';
import type { AllocSync } from './_alloc-sync.js';
import { RecordingRunner, testAllocSync } from './_alloc-sync-kit.js';
import type { AllocRunnerHandle, RunnerEntry } from './_client-types.js';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** A runner whose first task is handed to its driver when the test says (handOff) and whose run ends when it says (finish). */
class GatedRunner extends RecordingRunner {
  readonly #launched = deferred();
  readonly #ran = deferred();
  override run(): Promise<void> {
    this.calls.push('run');
    return this.#ran.promise;
  }
  launched(): Promise<void> {
    return this.#launched.promise;
  }
  handOff(): void {
    this.#launched.resolve();
  }
  finish(): void {
    this.#ran.resolve();
  }
  get ran(): boolean {
    return this.calls.includes('run');
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await nextTurn();
}

describe('AllocSync: the admission window, and what the runners are told', () => {
  let dir: string;
  let store: SqliteClientStateStore;
  let job: Job;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'berth-admit-'));
    store = SqliteClientStateStore.open(path.join(dir, 'state.db'), { headroomBytes: 0 });
    job = makeJob({ id: 'web', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }] }] });
  });
  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function sync(window: number, clock = new ManualClock(), holdMs = 60_000): { sync: AllocSync; runners: Map<string, RunnerEntry>; made: Map<string, GatedRunner> } {
    const made = new Map<string, GatedRunner>();
    const { sync: s, runners } = testAllocSync({
      dir,
      store,
      clock,
      opts: { startWindow: { allocations: window, holdMs } },
      createAllocRunner: (o: AllocRunnerOptions) => {
        const r = new GatedRunner(o.alloc.id);
        made.set(o.alloc.id, r);
        return r as unknown as AllocRunnerHandle;
      },
    });
    return { sync: s, runners, made };
  }

  const change = (changed: Allocation[], current: Allocation[] = changed): AllocUpdate => ({
    changed: changed.map((a) => ({ ...a, job })),
    removed: [],
    current: new Map(current.map((a) => [a.id, { ...a, job }])),
  });

  /** Runners that run and have not handed a task over yet (the window's occupants). */
  const inWindow = (made: Map<string, GatedRunner>, handedOff: Set<string>): number => [...made.values()].filter((r) => r.ran && !handedOff.has(r.allocId)).length;

  it('runs a burst of 10 through a window of 3, letting the next in as each hands its first task over', async () => {
    const { sync: s, made } = sync(3);
    const allocs = Array.from({ length: 10 }, () => makeAlloc(job));
    await s.onAllocations(change(allocs), 10);
    await settle();
    assert.equal(made.size, 10, 'every allocation has its runner');
    const handedOff = new Set<string>();
    let most = 0;
    for (let round = 0; round < 10; round++) {
      await settle();
      most = Math.max(most, inWindow(made, handedOff));
      const next = allocs.map((a) => made.get(a.id) as GatedRunner).find((r) => r.ran && !handedOff.has(r.allocId));
      if (!next) break;
      // Handed over, not finished: its run() is still pending, and the slot is free all the same.
      next.handOff();
      handedOff.add(next.allocId);
    }
    await settle();
    assert.equal(most, 3, 'at most 3 allocations set up at once');
    assert.deepEqual(
      allocs.map((a) => made.get(a.id)?.ran),
      allocs.map(() => true),
      'all 10 ran',
    );
  });

  it('admits them in the order the server listed them', async () => {
    const { sync: s, made } = sync(2);
    const allocs = Array.from({ length: 5 }, () => makeAlloc(job));
    await s.onAllocations(change(allocs), 10);
    await settle();
    assert.deepEqual(allocs.map((a) => made.get(a.id)?.ran), [true, true, false, false, false]);
    made.get(allocs[1]!.id)!.finish();
    await settle();
    assert.deepEqual(allocs.map((a) => made.get(a.id)?.ran), [true, true, true, false, false], 'a run that ended frees its slot too');
  });

  it('never runs a queued allocation the server stopped, and its stop does not wait for a slot', async () => {
    const { sync: s, made } = sync(1);
    const [a, b, c] = [makeAlloc(job), makeAlloc(job), makeAlloc(job)];
    await s.onAllocations(change([a, b, c]), 10);
    await settle();
    assert.deepEqual([a, b, c].map((x) => made.get(x.id)?.ran), [true, false, false]);
    const stoppedB = { ...b, desiredStatus: 'stop' as const, modifyIndex: 11 };
    await s.onAllocations(change([stoppedB], [a, stoppedB, c]), 11);
    await settle();
    assert.deepEqual(made.get(b.id)?.calls, ['update:stop'], 'told of its stop at once, while the window is still full');
    made.get(a.id)!.handOff();
    await settle();
    assert.deepEqual(made.get(b.id)?.calls, ['update:stop'], 'never run');
    assert.equal(made.get(c.id)?.ran, true, 'the slot went to the next one');
  });

  it('destroys a queued allocation the server dropped without waiting for a slot, and never runs it', async () => {
    const { sync: s, made, runners } = sync(1);
    const [a, b] = [makeAlloc(job), makeAlloc(job)];
    await s.onAllocations(change([a, b]), 10);
    await settle();
    const entry = runners.get(b.id) as RunnerEntry;
    await s.onAllocations(change([], [a]), 11);
    await entry.destroying;
    assert.deepEqual(made.get(b.id)?.calls, ['destroy']);
    made.get(a.id)!.handOff();
    await settle();
    assert.deepEqual(made.get(b.id)?.calls, ['destroy'], 'never run');
  });

  it('frees the slot of an allocation whose set-up waits past holdMs', async () => {
    const clock = new ManualClock();
    const { sync: s, made } = sync(1, clock, 5_000);
    const [a, b] = [makeAlloc(job), makeAlloc(job)];
    await s.onAllocations(change([a, b]), 10);
    await settle();
    assert.deepEqual([a, b].map((x) => made.get(x.id)?.ran), [true, false]);
    await clock.advance(4_999);
    await settle();
    assert.equal(made.get(b.id)?.ran, false, 'still held');
    await clock.advance(1);
    await settle();
    assert.equal(made.get(b.id)?.ran, true, 'let in once the hold passed');
  });

  it('does not hand the runner an allocation sent again with only its client status changed; a server-side change it does', async () => {
    const { sync: s, made } = sync(4);
    const a = makeAlloc(job);
    await s.onAllocations(change([a]), 10);
    await settle();
    const reported = { ...a, modifyIndex: a.modifyIndex + 1, clientStatus: 'running' as const, clientDescription: 'Tasks are running', taskStates: { t: { state: 'running', failed: false, restarts: 0, events: [] } } } as unknown as Allocation;
    await s.onAllocations(change([reported]), 11);
    assert.deepEqual(made.get(a.id)?.calls, ['run'], 'no update for its own status coming back');
    const moved = { ...reported, modifyIndex: reported.modifyIndex + 1, desiredDescription: 'migrating' };
    await s.onAllocations(change([moved]), 12);
    const stopped = { ...moved, modifyIndex: moved.modifyIndex + 1, desiredStatus: 'stop' as const };
    await s.onAllocations(change([stopped]), 13);
    assert.deepEqual(made.get(a.id)?.calls, ['run', 'update:run', 'update:stop']);
  });

  it('gives a restored allocation the server view at once with the window full', async () => {
    const { sync: s, made, runners } = sync(1);
    const [a, b] = [makeAlloc(job), makeAlloc(job)];
    await s.onAllocations(change([a, b]), 10);
    await settle();
    const restored = new GatedRunner('restored');
    const old = makeAlloc(job);
    runners.set(old.id, { alloc: old, job, runner: restored as unknown as AllocRunnerHandle, started: Promise.resolve(), awaitingServer: true });
    await s.onAllocations(change([old], [a, b, old]), 11);
    await settle();
    assert.deepEqual(restored.calls, ['update:run'], 'acted on at once, not queued');
    assert.equal(made.get(b.id)?.ran, false, 'the window is still full');
  });
});
