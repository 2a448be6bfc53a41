// Sticky host volumes through the real evaluation path: a placement of a
// group with `sticky = true` records a claim on the dynamic host volume of
// its node, and once that allocation is gone the group may go only where
// that volume is, not to another node with a volume of the same name.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import type { HostVolume, Node } from '../../structs/index.js';
import { testHostVolume, testNode } from '../../../test/support/scheduler-nodes.js';
import { JobService } from '../jobs/index.js';
import { NodeService } from '../nodes/index.js';
import { HOST_VOLUMES_REASON } from '../scheduler/index.js';
import { rowKey, SqliteStateStore } from '../state/index.js';
import { hostVolumeCheckerFor } from './scheduling.js';

let dir: string;
let store: SqliteStateStore;
let jobs: JobService;

const volume = (id: string, nodeId: string): HostVolume => testHostVolume(id, nodeId);
const withVolume = (id: string, volumeId: string | undefined): Node => testNode(id, { hostVolumes: volumeId ? { data: { path: `/v/${volumeId}`, readOnly: false, id: volumeId } } : {} });

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-sticky-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('sticky dynamic host volumes (Nomad TaskGroupHostVolumeClaim)', () => {
  it('binds the group to the volume its first allocation used', async () => {
    await store.write((txn) => {
      txn.put('nodes', withVolume('n1', undefined));
      txn.put('nodes', withVolume('n2', 'v2'));
      txn.put('hostVolumes', volume('v2', 'n2'));
    });
    await jobs.register({
      id: 'db',
      groups: [
        {
          name: 'g',
          volumes: { d: { type: 'host', source: 'data', sticky: true } },
          tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 5, memoryMb: 10 }, volumeMounts: [{ volume: 'd', destination: '/d' }] }],
        },
      ],
    });
    await jobs.evaluatePending();
    const [alloc] = store.snapshot().list('allocations');
    assert.equal(alloc?.nodeId, 'n2', 'only n2 has the volume');
    const claims = store.snapshot().list('hostVolumeClaims');
    assert.deepEqual(
      claims.map((c) => ({ jobId: c.jobId, taskGroup: c.taskGroup, allocId: c.allocId, volumeId: c.volumeId, volumeName: c.volumeName })),
      [{ jobId: 'db', taskGroup: 'g', allocId: alloc?.id, volumeId: 'v2', volumeName: 'data' }],
    );

    // n1 gets a volume of the same name; the allocation on n2 is gone.
    await store.write((txn) => {
      txn.put('nodes', withVolume('n1', 'v1'));
      txn.put('hostVolumes', volume('v1', 'n1'));
      txn.put('allocations', { ...alloc!, desiredStatus: 'stop', clientStatus: 'complete' });
    });
    const snap = store.snapshot();
    const job = snap.get('jobs', rowKey('default', 'db'))!;
    const nodes = new Map(snap.list('nodes').map((n) => [n.id, n]));
    const checker = hostVolumeCheckerFor(snap, job, job.groups[0]!, [], nodes)!;
    assert.equal(checker.reason(nodes.get('n1')!), HOST_VOLUMES_REASON, 'not the other volume of that name');
    assert.equal(checker.reason(nodes.get('n2')!), undefined, 'the claimed volume');

    // A group without sticky may use either.
    const loose = { ...job.groups[0]!, volumes: { d: { ...job.groups[0]!.volumes['d']!, sticky: false } } };
    const free = hostVolumeCheckerFor(snap, job, loose, [], nodes)!;
    assert.equal(free.reason(nodes.get('n1')!), undefined);
  });

  it('forgets a purged node\'s host volumes and their sticky claims', async () => {
    await store.write((txn) => {
      txn.put('nodes', withVolume('n2', 'v2'));
      txn.put('hostVolumes', volume('v2', 'n2'));
      txn.put('hostVolumes', volume('v3', 'n3'));
      txn.put('hostVolumeClaims', { id: 'c', namespace: 'default', jobId: 'db', taskGroup: 'g', allocId: 'a', volumeId: 'v2', volumeName: 'data' });
    });
    await new NodeService({ store, clock: new ManualClock(1_000_000) }).purge('n2');
    assert.deepEqual(store.snapshot().list('hostVolumes').map((v) => v.id), ['v3']);
    assert.equal(store.snapshot().list('hostVolumeClaims').length, 0);
  });
});
