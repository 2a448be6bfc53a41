// Ports through the job service (a real SQLite store): allocations keep their
// ports across in-place updates, a replacement may take its predecessor's
// static port, and a job asking for a port another job holds is blocked
// with the port named.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import { testNode } from '../../../test/support/scheduler-nodes.js';
import { SqliteStateStore } from '../state/index.js';
import { JobService } from './job-service.js';
import { registerScheduled } from '../../../test/support/scheduled-jobs.js';

let dir: string;
let store: SqliteStateStore;
let jobs: JobService;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-job-ports-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
  store.writeNow((txn) => txn.put('nodes', testNode('n1', { networkAddress: '127.0.0.1', minDynamicPort: 21000, maxDynamicPort: 21999 })));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Registers a job and runs its pending evaluation, as the evaluation worker would. */
const register = (spec: unknown, opts?: { checkIndex?: number }): ReturnType<typeof registerScheduled> => registerScheduled(jobs, store, spec, opts);

const web = (id: string, memoryMb: number, env: Record<string, string> = {}, ports: unknown[] = [{ label: 'http', static: 8080 }, { label: 'admin' }]) => ({
  id,
  groups: [{ name: 'g', network: { ports }, tasks: [{ name: 't', driver: 'exec', env, resources: { cpuMhz: 100, memoryMb } }] }],
});
const live = (jobId: string) => store.snapshot().list('allocations', { filter: (a) => a.jobId === jobId && a.desiredStatus === 'run' });

describe('job service: ports', () => {
  it('keeps an allocation\'s ports when it is updated in place, and lets its replacement take its static port', async () => {
    await register(web('web', 64));
    const [first] = live('web');
    assert.deepEqual(first!.ports?.map((p) => [p.label, p.hostIp]), [['http', '127.0.0.1'], ['admin', '127.0.0.1']]);
    assert.equal(first!.ports?.[0]?.value, 8080);
    const admin = first!.ports?.[1]?.value as number;
    assert.ok(admin >= 21000 && admin <= 21999, String(admin));

    const grown = await register(web('web', 96));
    assert.equal(grown.evaluation.updatedInPlace, 1);
    assert.deepEqual(live('web')[0]!.ports, first!.ports, 'same allocation, same ports');

    const changed = await register(web('web', 96, { MODE: 'fast' }));
    assert.deepEqual([changed.evaluation.stopped, changed.evaluation.placed], [1, 1]);
    const [second] = live('web');
    assert.notEqual(second!.id, first!.id);
    assert.equal(second!.ports?.[0]?.value, 8080, 'the stopped allocation gave its static port back');
  });

  it('blocks a second job asking for a static port another job holds, naming the port', async () => {
    await register(web('web', 64));
    const other = await register(web('other', 64, {}, [{ label: 'web', static: 8080 }]));
    assert.equal(other.evaluation.status, 'blocked');
    assert.match(other.evaluation.blockedReason, /1 node exhausted network: reserved port collision web=8080/);
    assert.equal(live('other').length, 0);
  });
});
