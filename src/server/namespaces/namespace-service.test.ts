// Namespaces on both stores (SQLite and a real etcd): what `namespace apply`,
// `list`, `status` and `delete` see, Nomad's refusals in Nomad's words, and
// the job service refusing a job in a namespace that does not exist.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ManualClock, silentLogger } from '../../lib/index.js';
import { testVolume } from '../../../test/support/server-rows.js';
import { startEtcd, type EtcdCluster } from '../../../test/support/etcd.js';
import { HostVolumeService } from '../hostvolumes/index.js';
import { JobService } from '../jobs/index.js';
import { openEtcdStateStore, rowKey, SqliteStateStore, type StateStore } from '../state/index.js';
import { NamespaceError, NamespaceService, namespaceIn, namespacesIn } from './index.js';

/** The error `fn` rejects with, which must be a NamespaceError with `code`. */
async function refusal(fn: () => Promise<unknown>, code: string): Promise<string> {
  const err = await fn().then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof NamespaceError, `a NamespaceError: ${String(err)}`);
  assert.equal(err.code, code);
  return err.message;
}

const names = (store: StateStore, prefix?: string): string[] => namespacesIn(store.snapshot(), prefix).map((n) => n.name);

/** The contract, on whichever store `open` makes (the tests run in order, each on what the ones before left). */
function contract(open: () => Promise<{ store: StateStore; close: () => Promise<void> | void }>): void {
  let store: StateStore;
  let close: () => Promise<void> | void;
  let namespaces: NamespaceService;
  before(async () => {
    ({ store, close } = await open());
    namespaces = new NamespaceService({ store, logger: silentLogger() });
  });
  after(() => close());

  it('makes objects of the namespaces a state from before namespaces holds jobs, volumes and services in, once', async () => {
    await store.write((txn) => {
      txn.put('volumes', testVolume('single-node-writer', 'file-system', { id: 'old-v', namespace: 'legacy' }));
      txn.put('volumes', testVolume('single-node-writer', 'file-system', { id: 'old-d', namespace: 'default' }));
    });
    assert.deepEqual(names(store), ['default'], 'not listed before');
    assert.deepEqual(await namespaces.adoptInUse(), ['legacy']);
    assert.deepEqual(names(store), ['default', 'legacy']);
    assert.equal(await refusal(() => namespaces.delete('legacy'), 'IN_USE'), 'namespace "legacy" has volumes associated with it in regions: [global]');
    await store.write((txn) => {
      txn.delete('volumes', rowKey('legacy', 'old-v'));
      txn.delete('volumes', rowKey('default', 'old-d'));
    });
    await namespaces.delete('legacy');
    await store.write((txn) => void txn.put('volumes', testVolume('single-node-writer', 'file-system', { id: 'stray', namespace: 'legacy' })));
    assert.deepEqual(await namespaces.adoptInUse(), [], 'once namespaces are objects, never again');
    assert.deepEqual(names(store), ['default']);
    await store.write((txn) => void txn.delete('volumes', rowKey('legacy', 'stray')));
  });

  it('has default from the start, at index 1, with Nomad\'s description; it can be described but never deleted', async () => {
    const def = namespaceIn(store.snapshot(), 'default');
    assert.deepEqual(def && { ...def, meta: { ...def.meta } }, { name: 'default', description: 'Default shared namespace', meta: {}, createIndex: 1, modifyIndex: 1 });
    assert.equal(await refusal(() => namespaces.delete('default'), 'INVALID'), 'can not delete default namespace');
    const { index } = await namespaces.apply({ name: 'default', description: 'ours', meta: { owner: 'ops' } });
    const changed = namespaceIn(store.snapshot(), 'default');
    assert.equal(changed?.description, 'ours');
    assert.deepEqual(changed?.meta, { owner: 'ops' });
    assert.equal(changed?.createIndex, 1, 'created at 1, as Nomad creates it');
    assert.equal(changed?.modifyIndex, index);
    assert.deepEqual(names(store), ['default']);
  });

  it('creates and updates a namespace (create index kept), lists by prefix in name order, and refuses what Nomad refuses', async () => {
    await namespaces.apply({ name: 'prod', description: 'Prod stuff', meta: { team: 'a' } });
    const created = namespaceIn(store.snapshot(), 'prod');
    assert.equal(created?.description, 'Prod stuff');
    await namespaces.apply({ name: 'prod', description: 'Production' });
    const updated = namespaceIn(store.snapshot(), 'prod');
    assert.equal(updated?.description, 'Production');
    assert.deepEqual(updated?.meta, {}, 'an apply replaces the meta');
    assert.equal(updated?.createIndex, created?.createIndex);
    assert.ok((updated?.modifyIndex ?? 0) > (created?.modifyIndex ?? 0));
    await namespaces.apply({ name: 'Pre-9' });
    assert.deepEqual(names(store), ['Pre-9', 'default', 'prod'], "byte order, as Nomad's index");
    assert.deepEqual(names(store, 'pr'), ['prod']);

    const before = store.latestIndex();
    assert.equal(await refusal(() => namespaces.apply({ name: 'bad_name' }), 'INVALID'), 'Invalid namespace "bad_name": invalid name "bad_name". Must match regex ^[a-zA-Z0-9-]{1,128}$');
    assert.match(await refusal(() => namespaces.apply({ name: '' }), 'INVALID'), /^Invalid namespace "": invalid name ""/);
    assert.match(await refusal(() => namespaces.apply({ name: 'x'.repeat(129) }), 'INVALID'), /invalid name/);
    assert.equal(await refusal(() => namespaces.apply({ name: 'long', description: 'd'.repeat(257) }), 'INVALID'), 'Invalid namespace "long": description longer than 256');
    assert.equal(await refusal(() => namespaces.apply({ name: 'q', quota: 'small' }), 'INVALID'), 'namespace "q" using non-existent quota "small"');
    assert.equal(store.latestIndex(), before, 'a refused apply writes nothing');
    assert.equal(await refusal(() => namespaces.delete('nope'), 'NOT_FOUND'), 'namespace not found');
  });

  it('refuses to delete a namespace while it holds a job that is not dead, a running allocation or a volume, naming each', async () => {
    await namespaces.apply({ name: 'busy' });
    await store.write((txn) => void txn.put('volumes', testVolume('single-node-writer', 'file-system', { id: 'v1', namespace: 'busy' })));
    assert.equal(await refusal(() => namespaces.delete('busy'), 'IN_USE'), 'namespace "busy" has volumes associated with it in regions: [global]');
    await store.write((txn) => void txn.delete('volumes', rowKey('busy', 'v1')));
    // A job row as the job service stores it, running; then dead.
    const jobs = new JobService({ store, clock: new ManualClock(1_000), logger: silentLogger() });
    await jobs.register({ id: 'web', namespace: 'busy', groups: [{ name: 'g', count: 0, tasks: [{ name: 't', driver: 'exec' }] }] });
    await store.write((txn) => {
      const row = txn.get('jobs', rowKey('busy', 'web'));
      assert.ok(row);
      txn.put('jobs', { ...row, status: 'running' });
    });
    assert.equal(await refusal(() => namespaces.delete('busy'), 'IN_USE'), 'namespace "busy" has non-terminal jobs in regions: [global]');
    await store.write((txn) => {
      const row = txn.get('jobs', rowKey('busy', 'web'));
      assert.ok(row);
      txn.put('jobs', { ...row, status: 'dead' });
    });
    await namespaces.delete('busy');
    assert.equal(namespaceIn(store.snapshot(), 'busy'), undefined);
    assert.ok(store.snapshot().get('jobs', rowKey('busy', 'web')), 'the dead job stays readable, as in Nomad');
  });

  it('refuses a host volume in a namespace that does not exist, before any node is asked', async () => {
    const asked: string[] = [];
    const hostVolumes = new HostVolumeService({
      store,
      callNode: async (nodeId) => {
        asked.push(nodeId);
        throw new Error('no node should be asked');
      },
      connected: () => true,
      logger: silentLogger(),
    });
    assert.match(await refusal(() => hostVolumes.create({ namespace: 'nowhere', name: 'scratch' }), 'INVALID'), /^host volume [0-9a-f-]{36} is in nonexistent namespace nowhere$/);
    assert.deepEqual(asked, []);
    assert.deepEqual(store.snapshot().list('hostVolumes'), []);
  });

  it('refuses a job (and its plan) in a namespace that does not exist, in Nomad\'s words, and takes it once the namespace is made', async () => {
    const jobs = new JobService({ store, clock: new ManualClock(1_000), logger: silentLogger() });
    const spec = { id: 'api', namespace: 'team-a', groups: [{ name: 'g', count: 0, tasks: [{ name: 't', driver: 'exec' }] }] };
    const before = store.latestIndex();
    assert.equal(await refusal(() => jobs.register(spec), 'INVALID'), 'job "api" is in nonexistent namespace "team-a"');
    assert.equal(await refusal(async () => jobs.plan(spec), 'INVALID'), 'job "api" is in nonexistent namespace "team-a"');
    assert.equal(store.latestIndex(), before, 'nothing written');
    await namespaces.apply({ name: 'team-a' });
    const { job } = await jobs.register(spec);
    assert.equal(job.namespace, 'team-a');
  });
}

describe('namespaces on the SQLite store', () => {
  contract(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'berth-ns-'));
    const store = SqliteStateStore.open(join(dir, 'state.db'));
    return {
      store,
      close: () => {
        store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  });
});

describe('namespaces on the etcd store', () => {
  let etcd: EtcdCluster;
  before(async () => {
    etcd = await startEtcd();
  });
  after(() => etcd.close());
  contract(async () => {
    const store = await openEtcdStateStore({ endpoints: etcd.endpoints, prefix: '/ns' });
    return { store, close: () => store.close() };
  });
});
