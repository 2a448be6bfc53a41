// The kit of the tests beside it (alloc-list, alloc-sync-hold): an AllocSync
// wired to a real SQLite client state, no server, no drivers, and the runners
// the test makes (createAllocRunner), so that a test sees which allocations
// get a runner, when they run, and what is reported. No production code
// imports it.

import { silentLogger, type Clock } from '../lib/index.js';
import type { Allocation } from '../structs/index.js';
import type { AllocRunnerOptions } from './allocrunner/index.js';
import type { SqliteClientStateStore } from './state/index.js';
import { AllocSync, type AllocSyncDeps } from './_alloc-sync.js';
import type { AllocRunnerHandle, RunnerEntry } from './_client-types.js';

export interface AllocSyncHarness {
  /** The client's data dir and its opened state. */
  dir: string;
  store: SqliteClientStateStore;
  clock: Clock;
  /** Makes the runner of each new allocation (the test's own kind). */
  createAllocRunner: (o: AllocRunnerOptions) => AllocRunnerHandle;
  /** Client options beside the basic ones (holdStarts, startWindow). */
  opts?: Record<string, unknown>;
  reporter?: unknown;
  signal?: AbortSignal;
}

/** An AllocSync over the harness's parts, and the runners map it fills. */
export function testAllocSync(h: AllocSyncHarness): { sync: AllocSync; runners: Map<string, RunnerEntry> } {
  const runners = new Map<string, RunnerEntry>();
  const deps = {
    opts: { dataDir: h.dir, servers: 'http://127.0.0.1:1', token: 't', nodeName: 'n', createAllocRunner: h.createAllocRunner, ...h.opts },
    runners,
    leaving: new Map(),
    collected: new Set(),
    statusListeners: new Set(),
    store: h.store,
    node: { id: 'node-1', allocIndex: 0 },
    drivers: new Map(),
    hostVolumes: undefined,
    catalog: undefined,
    signIdentities: undefined,
    chroot: undefined,
    fingerprinter: { last: undefined },
    meta: { merged: () => ({}) },
    checks: undefined,
    reporter: h.reporter,
    clock: h.clock,
    root: silentLogger(),
    log: silentLogger(),
    signal: h.signal ?? new AbortController().signal,
    track: () => undefined,
  } as unknown as AllocSyncDeps;
  return { sync: new AllocSync(deps), runners };
}

/** A runner that records what the sync asked of it (the parts of AllocRunnerHandle the sync calls). */
export class RecordingRunner {
  readonly calls: string[] = [];
  constructor(readonly allocId: string) {}
  async run(): Promise<void> {
    this.calls.push('run');
  }
  async restore(): Promise<void> {
    this.calls.push('restore');
  }
  update(alloc: Allocation): void {
    this.calls.push(`update:${alloc.desiredStatus}`);
  }
  async destroy(): Promise<void> {
    this.calls.push('destroy');
  }
  async shutdown(): Promise<void> {
    this.calls.push('shutdown');
  }
  status(): ReturnType<AllocRunnerHandle['status']> {
    return { clientStatus: 'pending', clientDescription: '', taskStates: {} };
  }
}
