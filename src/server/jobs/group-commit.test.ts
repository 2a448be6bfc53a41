import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ManualClock, silentLogger } from '../../lib/index.js';
import { JobValidationError } from '../../structs/index.js';
import { rowKey, SqliteStateStore } from '../state/index.js';
import { DEFAULT_MAX_BATCH } from './group-commit.js';
import { JobService } from './job-service.js';

let dir: string;
let store: SqliteStateStore;
let jobs: JobService;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'berth-group-commit-'));
  store = SqliteStateStore.open(join(dir, 'state.db'));
  jobs = new JobService({ store, clock: new ManualClock(1_000_000), logger: silentLogger() });
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const job = (id: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  id,
  groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['60'] } }] }],
  ...extra,
});

/** A job whose group asks for a CSI volume nobody registered: refused against the state, inside the write. */
const withUnknownVolume = (id: string): Record<string, unknown> => ({
  id,
  groups: [
    {
      name: 'g',
      volumes: { data: { type: 'csi', source: 'nowhere', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
      tasks: [{ name: 't', driver: 'exec', volumeMounts: [{ volume: 'data', destination: '/data' }] }],
    },
  ],
});

describe('registrations made together (group commit)', () => {
  it('with a linger (a burst read one request per turn): registrations of several turns share the write the linger held', async () => {
    let release: (() => void) | undefined;
    let lingers = 0;
    const lingering = new JobService({
      store,
      clock: new ManualClock(1_000_000),
      logger: silentLogger(),
      registrationLinger: () => {
        lingers++;
        return new Promise<void>((resolve) => (release = resolve));
      },
    });
    const before = store.latestIndex();
    const answers: Array<Promise<{ index: number }>> = [];
    for (let i = 0; i < 3; i++) {
      answers.push(lingering.register(job(`turn-${i}`)));
      await nextTurn();
      await nextTurn();
    }
    assert.equal(store.latestIndex(), before, 'nothing written while the linger holds the batch');
    release!();
    const out = await Promise.all(answers);
    assert.deepEqual(out.map((o) => o.index), [before + 1, before + 1, before + 1], 'one write for the three turns');
    assert.equal(lingers, 1, 'asked once for the batch');
    // Without a linger each turn writes on its own.
    const alone = [];
    for (let i = 0; i < 2; i++) {
      alone.push(await jobs.register(job(`alone-${i}`)));
    }
    assert.deepEqual(alone.map((o) => o.index), [before + 2, before + 3]);
  });

  it('a burst of registrations takes a store write per DEFAULT_MAX_BATCH; each caller gets its job, its pending evaluation and its write', async () => {
    const before = store.latestIndex();
    const burst = 2 * DEFAULT_MAX_BATCH + 3;
    const out = await Promise.all(Array.from({ length: burst }, (_, i) => jobs.register(job(`burst-${i}`))));
    assert.equal(store.latestIndex(), before + 3);
    assert.deepEqual(
      out.map((o) => o.index),
      out.map((_, i) => before + 1 + Math.floor(i / DEFAULT_MAX_BATCH)),
      'in order of arrival, a full batch at a time',
    );
    const snap = store.snapshot();
    out.forEach((o, i) => {
      assert.equal(o.job.id, `burst-${i}`);
      assert.equal(snap.get('jobs', rowKey('default', `burst-${i}`))?.version, 0);
      assert.equal(snap.get('evaluations', rowKey(o.evaluation.id))?.status, 'pending');
    });
  });

  it('a registration refused inside the write fails alone; the others of its turn are written', async () => {
    const settled = await Promise.allSettled([jobs.register(job('a')), jobs.register(withUnknownVolume('bad')), jobs.register(job('b'))]);
    assert.equal(settled[0].status, 'fulfilled');
    assert.equal(settled[2].status, 'fulfilled');
    const refused = settled[1];
    assert.ok(refused.status === 'rejected' && refused.reason instanceof JobValidationError, String(refused.status === 'rejected' ? refused.reason : 'fulfilled'));
    assert.match(refused.reason.message, /groups\[0\]\.volumes\.data\.source: volume "nowhere" is not registered/);
    const snap = store.snapshot();
    assert.ok(snap.get('jobs', rowKey('default', 'a')));
    assert.ok(snap.get('jobs', rowKey('default', 'b')));
    assert.equal(snap.get('jobs', rowKey('default', 'bad')), undefined);
  });

  it('a check-index conflict fails alone, with CONFLICT', async () => {
    await jobs.register(job('web'));
    const settled = await Promise.allSettled([jobs.register(job('web', { meta: { v: '2' } }), { checkIndex: 999 }), jobs.register(job('api'))]);
    assert.equal(settled[0].status, 'rejected');
    assert.equal((settled[0] as PromiseRejectedResult).reason.code, 'CONFLICT');
    assert.equal(settled[1].status, 'fulfilled');
  });

  it('the same job registered twice in one turn goes in two writes, in order: the second version is the stored one', async () => {
    const [first, second] = await Promise.all([jobs.register(job('twice')), jobs.register(job('twice', { meta: { v: '2' } }))]);
    assert.ok(second.index > first.index, `${second.index} > ${first.index}`);
    assert.equal(first.job.version, 0);
    assert.equal(second.job.version, 1);
    assert.deepEqual(store.snapshot().get('jobs', rowKey('default', 'twice'))?.meta, { v: '2' });
  });
});
