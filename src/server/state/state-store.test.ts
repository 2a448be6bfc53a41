// The StateStore contract, the same cases on both stores (SQLite and etcd),
// and the SQLite store's own file. One thing past 500 lines: one contract's
// tests, each case run on both stores so that they cannot drift apart.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { AbortedError } from '../../lib/index.js';
import { parseJobSpec, type Volume } from '../../structs/index.js';
import { openEtcdStateStore, keyPrefix, rowKey, SqliteStateStore, StateStoreError, type RowInput, type StateStore } from './index.js';
import { nextTurn } from '../../../test/support/eventually.js';
import { startEtcd, type EtcdCluster } from '../../../test/support/etcd.js';
import { testNodeRow } from '../../../test/support/server-rows.js';

const node = (id: string, name = id): RowInput<'nodes'> => testNodeRow(id, { name });

function volume(id: string, secrets: Record<string, string> = {}): RowInput<'volumes'> {
  return {
    id,
    namespace: 'default',
    name: id,
    externalId: `ext-${id}`,
    pluginId: 'fake',
    provider: 'fake.csi.berth.dev',
    capacityMinBytes: 0,
    capacityMaxBytes: 0,
    capacityBytes: 0,
    capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }],
    mountOptions: { fsType: 'ext4', mountFlags: ['password=hunter2'] },
    secrets,
    parameters: {},
    context: { authToken: 'ctx-secret-value', zone: 'z1' },
    accessibleTopology: [],
  } satisfies Omit<Volume, 'createIndex' | 'modifyIndex'>;
}


/**
 * One store implementation under test. `open(name)` opens the store called
 * `name` (a file for SQLite, a key prefix on one etcd member for etcd),
 * again with the same state when called twice.
 */
interface StoreKind {
  name: string;
  setup(): Promise<void>;
  teardown(): Promise<void>;
  open(name: string, opts?: { eventHistory?: number }): Promise<StateStore>;
  /** Whether the event history survives a reopen (SQLite keeps it in the file; etcd's starts at open). */
  persistsEvents: boolean;
}

let sqliteDir = '';
let etcd: EtcdCluster | undefined;
const KINDS: StoreKind[] = [
  {
    name: 'SQLite',
    setup: async () => {
      sqliteDir = mkdtempSync(join(tmpdir(), 'berth-state-'));
    },
    teardown: async () => rmSync(sqliteDir, { recursive: true, force: true }),
    open: async (name, opts) => SqliteStateStore.open(join(sqliteDir, `${name}.db`), opts),
    persistsEvents: true,
  },
  {
    name: 'etcd',
    setup: async () => {
      etcd = await startEtcd();
    },
    teardown: async () => etcd?.close(),
    open: (name, opts) => openEtcdStateStore({ endpoints: etcd!.endpoints, prefix: `/test/${name}`, ...opts }),
    persistsEvents: false,
  },
];

for (const kind of KINDS) {
  describe(`the state store on ${kind.name}`, () => {
    before(() => kind.setup());
    after(() => kind.teardown());

    it('stamps one new index on every row a write puts, keeps createIndex, and a write that changes nothing uses no index', async () => {
      const store = await kind.open('stamp');
      try {
        const first = await store.write((txn) => {
          txn.put('nodes', node('a'));
          txn.put('nodes', node('b'));
          return 'done';
        });
        assert.ok(first.index > 0);
        assert.equal(first.result, 'done');
        const snap = store.snapshot();
        assert.equal(snap.get('nodes', 'a')?.modifyIndex, first.index);
        assert.equal(snap.get('nodes', 'b')?.createIndex, first.index);
        assert.equal(snap.tableIndex('nodes'), first.index);
        assert.equal(snap.tableIndex('volumes'), 0);

        const drivers = { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', 'none'] } };
        const second = await store.write((txn) => txn.put('nodes', { ...node('a', 'renamed'), drivers }));
        assert.ok(second.index > first.index);
        const a = store.snapshot().get('nodes', 'a')!;
        assert.deepEqual([a.createIndex, a.modifyIndex, a.name], [first.index, second.index, 'renamed']);
        // Frozen all the way down: objects in objects, arrays in them.
        assert.ok(Object.isFrozen(a) && Object.isFrozen(a.resources) && Object.isFrozen(a.drivers['exec']) && Object.isFrozen(a.drivers['exec']?.networkModes));
        assert.throws(() => (a.drivers['exec']?.networkModes as string[]).push('bridge'), TypeError);
        assert.deepEqual(a.drivers['exec']?.networkModes, ['host', 'none']);

        const noop = await store.write((txn) => txn.get('nodes', 'a')?.name);
        assert.deepEqual(noop, { index: second.index, result: 'renamed' });
        assert.equal(store.latestIndex(), second.index);
      } finally {
        store.close();
      }
    });

    it('stores what its JSON says for a row that spreads the stored one, keeping the parts it did not change as they are', async () => {
      const store = await kind.open('spread');
      try {
        await store.write((txn) => txn.put('nodes', { ...node('s'), attributes: { 'kernel.name': 'linux' }, meta: { rack: 'r1' } }));
        const stored = store.snapshot().get('nodes', 's')!;
        // As a status report builds its row: the stored row spread, a few fields replaced, some of them
        // values JSON writes otherwise (undefined left out, -0 as 0, NaN as null, a Date as its string).
        const drivers = { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host', undefined] } };
        const input = { ...stored, name: 'renamed', drivers, meta: undefined, nodeClass: undefined, odd: [-0, NaN], when: new Date(0) };
        const { index, result } = await store.write((txn) => txn.put('nodes', input as unknown as RowInput<'nodes'>));
        const expected = JSON.parse(JSON.stringify({ ...input, createIndex: stored.createIndex, modifyIndex: index })) as unknown;
        for (const row of [result, store.snapshot().get('nodes', 's')!]) {
          assert.deepEqual(row, expected);
          assert.deepEqual(Object.keys(row), Object.keys(expected as object), 'the keys in JSON order');
          assert.equal(row.resources, stored.resources, 'an unchanged object is the stored one');
          assert.equal(row.attributes, stored.attributes);
          assert.notEqual(row.drivers, drivers, 'a new object is a copy');
          assert.ok(Object.isFrozen(row) && Object.isFrozen(row.drivers['exec']?.networkModes));
        }
      } finally {
        store.close();
      }
    });

    it('applies nothing when the write function throws, and refuses async and nested writes', async () => {
      const store = await kind.open('atomic');
      try {
        const { index } = await store.write((txn) => txn.put('nodes', node('keep')));
        await assert.rejects(
          store.write((txn) => {
            txn.put('nodes', node('lost'));
            txn.delete('nodes', 'keep');
            throw new Error('boom');
          }),
          /boom/,
        );
        const snap = store.snapshot();
        assert.equal(snap.get('nodes', 'lost'), undefined);
        assert.ok(snap.get('nodes', 'keep'));
        assert.equal(store.latestIndex(), index);
        await assert.rejects(store.write(async (txn) => txn.put('nodes', node('x'))), (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_ASYNC_WRITE');
        assert.equal(store.snapshot().get('nodes', 'x'), undefined);
        let nested: Promise<unknown> | undefined;
        await store.write(() => {
          nested = store.write((t) => t.put('nodes', node('y')));
        });
        await assert.rejects(nested!, (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_NESTED_WRITE');
        assert.equal(store.snapshot().get('nodes', 'y'), undefined);
      } finally {
        store.close();
      }
    });

    it('reads inside a write see its own puts and deletes; a snapshot stays as it was after later writes', async () => {
      const store = await kind.open('snap');
      try {
        const first = await store.write((txn) => {
          txn.put('nodes', node('a'));
          txn.put('nodes', node('b'));
        });
        const before = store.snapshot();
        await store.write((txn) => {
          txn.delete('nodes', 'a');
          txn.put('nodes', node('c'));
          assert.deepEqual(txn.list('nodes').map((n) => n.id), ['b', 'c']);
          // Unordered, filtered and by prefix: the same rows, the write's own changes counted once.
          txn.put('nodes', { ...node('b'), name: 'b2' });
          assert.deepEqual(txn.list('nodes', { unordered: true }).map((n) => `${n.id}:${n.name}`).sort(), ['b:b2', 'c:c']);
          assert.deepEqual(txn.list('nodes', { unordered: true, filter: (n) => n.name !== 'c' }).map((n) => n.id), ['b']);
          assert.deepEqual(txn.list('nodes', { prefix: 'c' }).map((n) => n.id), ['c']);
          assert.equal(txn.get('nodes', 'a'), undefined);
        });
        assert.deepEqual(before.list('nodes').map((n) => n.id), ['a', 'b']);
        assert.equal(before.index, first.index);
        assert.deepEqual(store.snapshot().list('nodes').map((n) => n.id), ['b', 'c']);
        assert.deepEqual(store.snapshot().list('nodes', { unordered: true }).map((n) => n.id).sort(), ['b', 'c']);
      } finally {
        store.close();
      }
    });

    it('lists by key prefix without confusing IDs that contain "/"', async () => {
      const store = await kind.open('prefix');
      try {
        await store.write((txn) => {
          for (const [vol, alloc] of [['data', 'a1'], ['data', 'a2'], ['data/x', 'a3']]) {
            txn.put('claims', {
              namespace: 'default',
              volumeId: vol!,
              allocId: alloc!,
              pluginId: 'fake',
              externalVolumeId: `ext-${vol}`,
              nodeId: 'n1',
              externalNodeId: 'n1',
              mode: 'read',
              accessMode: 'multi-node-reader-only',
              attachmentMode: 'file-system',
              state: 'taken',
              controllerPublish: 'none',
              publishContext: {},
              releaseReason: '',
              releaseAttempts: 0,
              lastError: '',
              claimTime: 0,
            });
          }
        });
        const claims = store.snapshot().list('claims', { prefix: keyPrefix('default', 'data') });
        assert.deepEqual(claims.map((c) => c.allocId), ['a1', 'a2']);
        assert.ok(store.snapshot().get('claims', rowKey('default', 'data/x', 'a3')));
      } finally {
        store.close();
      }
    });

    it('survives a restart: rows and table indexes come back and the index is never reused', async () => {
      let store = await kind.open('restart');
      const i1 = (await store.write((txn) => txn.put('nodes', node('a')))).index;
      const i2 = (await store.write((txn) => txn.put('nodes', node('b')))).index;
      const i3 = (await store.write((txn) => txn.delete('nodes', 'b'))).index;
      store.close();
      store = await kind.open('restart');
      try {
        const snap = store.snapshot();
        assert.equal(store.latestIndex(), i3);
        assert.deepEqual(snap.list('nodes').map((n) => n.id), ['a']);
        assert.equal(snap.tableIndex('nodes'), i3);
        if (kind.persistsEvents) {
          assert.deepEqual(
            snap.events(0).map((e) => [e.index, e.topic, e.key, e.op]),
            [
              [i1, 'nodes', 'a', 'put'],
              [i2, 'nodes', 'b', 'put'],
              [i3, 'nodes', 'b', 'delete'],
            ],
          );
        } else {
          assert.deepEqual(snap.events(0), []);
          assert.ok(snap.oldestEventIndex > i3, 'the history says it starts after the reopen');
        }
        const next = await store.write((txn) => txn.put('nodes', node('c')));
        assert.ok(next.index > i3);
        assert.deepEqual(store.snapshot().events(i3).map((e) => [e.index, e.key, e.op]), [[next.index, 'c', 'put']]);
      } finally {
        store.close();
      }
    });

    it('keeps secrets and mount flags out of events, and redacts credential-looking context values', async () => {
      const store = await kind.open('secrets');
      try {
        await store.write((txn) => txn.put('volumes', volume('v1', { password: 's3cr3t-value' })));
        await store.write((txn) => txn.delete('volumes', rowKey('default', 'v1')));
        const events = store.snapshot().events(0, { topics: ['volumes'] });
        assert.equal(events.length, 2);
        const text = JSON.stringify(events);
        assert.doesNotMatch(text, /s3cr3t-value|hunter2|ctx-secret-value/);
        assert.match(text, /secretNames/);
      } finally {
        store.close();
      }
    });

    it('keeps a bounded event history, filterable by topic', async () => {
      const store = await kind.open('history', { eventHistory: 10 });
      try {
        const indexes: number[] = [];
        for (let i = 0; i < 40; i++) indexes.push((await store.write((txn) => txn.put('nodes', node(`n${i}`)))).index);
        const last = (await store.write((txn) => txn.put('volumes', volume('v')))).index;
        const snap = store.snapshot();
        const all = snap.events(0);
        assert.ok(all.length <= 13, `kept ${all.length} events`);
        assert.equal(all.at(-1)?.index, last);
        assert.ok(snap.oldestEventIndex > indexes[0]!);
        assert.deepEqual(snap.events(0, { topics: ['volumes'] }).map((e) => e.index), [last]);
        assert.deepEqual(snap.events(indexes[38]!).map((e) => e.index), [indexes[39], last]);
      } finally {
        store.close();
      }
    });

    it('trims its history a whole write at a time: the oldest write kept has every one of its events', async () => {
      const store = await kind.open('history-writes', { eventHistory: 4 });
      try {
        const writes = new Map<number, number>();
        for (let i = 0; i < 12; i++) {
          const { index } = await store.write((txn) => {
            for (let j = 0; j < 3; j++) txn.put('nodes', node(`w${i}-${j}`));
          });
          writes.set(index, 3);
          const snap = store.snapshot();
          const oldest = snap.oldestEventIndex;
          // A reader at the index just before the oldest kept follows the history from there: nothing of that write is missing.
          const kept = snap.events(oldest - 1).filter((e) => e.index === oldest);
          assert.equal(kept.length, writes.get(oldest), `write ${oldest}: ${kept.length} of its ${writes.get(oldest)} events kept (after write ${i})`);
        }
      } finally {
        store.close();
      }
    });

    it('blockUntil wakes on a write to a watched table, ignores other tables, times out and aborts', async () => {
      const store = await kind.open('block');
      try {
        const first = await store.write((txn) => txn.put('nodes', node('a')));
        assert.equal(await store.blockUntil(['nodes'], 0), first.index, 'already past: resolves at once');

        let woke = 0;
        const waiting = store.blockUntil(['volumes', 'claims'], store.latestIndex()).then((i) => (woke = i));
        await store.write((txn) => txn.put('nodes', node('b')));
        // A write wakes its waiters before it resolves: by the next turn, a woken one has run.
        await nextTurn();
        assert.equal(woke, 0, 'a write to another table does not wake it');
        const { index } = await store.write((txn) => txn.put('volumes', volume('v')));
        assert.equal(await waiting, index);

        const far = index + 1_000_000;
        assert.equal(await store.blockUntil(['claims'], far, { timeoutMs: 5 }), 0, 'timeout gives the current index');

        const ac = new AbortController();
        const aborted = store.blockUntil(['claims'], far, { signal: ac.signal });
        ac.abort();
        await assert.rejects(aborted, AbortedError);

        const closing = store.blockUntil(['claims'], far);
        store.close();
        await assert.rejects(closing, (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_CLOSED');
        await assert.rejects(store.write((txn) => txn.put('nodes', node('z'))), (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_CLOSED');
      } finally {
        store.close();
      }
    });

    it('wakes 1,000 waiters with one write', async () => {
      const store = await kind.open('many');
      try {
        const waiters = Array.from({ length: 1000 }, (_, i) => store.blockUntil(i % 2 ? ['events'] : ['nodes', 'jobs'], 0));
        const { index } = await store.write((txn) => txn.put('nodes', node('a')));
        const woken = await Promise.all(waiters);
        assert.ok(woken.every((i) => i === index));
      } finally {
        store.close();
      }
    });

    it('commits a write of 300 rows, read one by one, as one change with one index', async () => {
      const store = await kind.open('big');
      try {
        const { index } = await store.write((txn) => {
          for (let i = 0; i < 300; i++) {
            assert.equal(txn.get('nodes', `big-${i}`), undefined);
            txn.put('nodes', node(`big-${i}`));
          }
        });
        const rows = store.snapshot().list('nodes');
        assert.equal(rows.length, 300);
        assert.ok(rows.every((r) => r.modifyIndex === index));
        assert.equal(store.snapshot().events(index - 1).length, 300);
      } finally {
        store.close();
      }
    });

    it('runs concurrent writes that read and change the same row one after the other: no update is lost', async () => {
      const store = await kind.open('counter');
      try {
        await store.write((txn) => txn.put('nodes', { ...node('c'), lastHeartbeat: 0 }));
        await Promise.all(
          Array.from({ length: 20 }, () =>
            store.write((txn) => {
              const n = txn.get('nodes', 'c')!;
              txn.put('nodes', { ...n, lastHeartbeat: n.lastHeartbeat + 1 });
            }),
          ),
        );
        assert.equal(store.snapshot().get('nodes', 'c')?.lastHeartbeat, 20);
      } finally {
        store.close();
      }
    });
  });
}

describe('SqliteStateStore only: the file and writeNow', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-state-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string): string => join(dir, name);

  it('writeNow stamps contiguous indexes: one new index on every row a write puts, keeps createIndex, and a write that changes nothing uses no index', () => {
    const store = SqliteStateStore.open(file('stamp.db'));
    try {
      const first = store.writeNow((txn) => {
        txn.put('nodes', node('a'));
        txn.put('nodes', node('b'));
        return 'done';
      });
      assert.equal(first.index, 1);
      assert.equal(first.result, 'done');
      const snap = store.snapshot();
      assert.equal(snap.get('nodes', 'a')?.modifyIndex, 1);
      assert.equal(snap.get('nodes', 'b')?.createIndex, 1);
      assert.equal(snap.tableIndex('nodes'), 1);
      assert.equal(snap.tableIndex('volumes'), 0);

      const second = store.writeNow((txn) => txn.put('nodes', { ...node('a', 'renamed') }));
      assert.equal(second.index, 2);
      const a = store.snapshot().get('nodes', 'a')!;
      assert.deepEqual([a.createIndex, a.modifyIndex, a.name], [1, 2, 'renamed']);
      assert.ok(Object.isFrozen(a));

      const noop = store.writeNow((txn) => txn.get('nodes', 'a')?.name);
      assert.deepEqual(noop, { index: 2, result: 'renamed' });
      assert.equal(store.latestIndex(), 2);
    } finally {
      store.close();
    }
  });

  it('writeNow applies nothing when the write function throws, and refuses async and nested writes', () => {
    const store = SqliteStateStore.open(file('atomic.db'));
    try {
      store.writeNow((txn) => txn.put('nodes', node('keep')));
      assert.throws(
        () =>
          store.writeNow((txn) => {
            txn.put('nodes', node('lost'));
            txn.delete('nodes', 'keep');
            throw new Error('boom');
          }),
        /boom/,
      );
      const snap = store.snapshot();
      assert.equal(snap.get('nodes', 'lost'), undefined);
      assert.ok(snap.get('nodes', 'keep'));
      assert.equal(store.latestIndex(), 1);
      assert.throws(() => store.writeNow(async (txn) => txn.put('nodes', node('x'))), (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_ASYNC_WRITE');
      assert.equal(store.snapshot().get('nodes', 'x'), undefined);
      assert.throws(
        () => store.writeNow(() => store.writeNow((t) => t.put('nodes', node('y')))),
        (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_NESTED_WRITE',
      );
    } finally {
      store.close();
    }
  });

  it('keeps secrets and mount flags out of events, and redacts credential-looking context values', () => {
    const path = file('secrets.db');
    const store = SqliteStateStore.open(path);
    try {
      store.writeNow((txn) => txn.put('volumes', volume('v1', { password: 's3cr3t-value' })));
      store.writeNow((txn) => txn.delete('volumes', rowKey('default', 'v1')));
      const events = store.snapshot().events(0, { topics: ['volumes'] });
      assert.equal(events.length, 2);
      const text = JSON.stringify(events);
      assert.doesNotMatch(text, /s3cr3t-value|hunter2|ctx-secret-value/);
      assert.match(text, /secretNames/);
    } finally {
      store.close();
    }
    const db = new Database(path, { readonly: true });
    try {
      const bodies = db.prepare('SELECT body FROM events').all() as Array<{ body: string }>;
      assert.equal(bodies.length, 2);
      for (const b of bodies) assert.doesNotMatch(b.body, /s3cr3t-value|hunter2/);
    } finally {
      db.close();
    }
  });

  it('keeps a job volume\'s mount flags out of job events, in memory and in the file', () => {
    const path = file('job-secrets.db');
    const spec = parseJobSpec({
      id: 'web',
      groups: [
        {
          name: 'g',
          volumes: { data: { type: 'csi', source: 'v1', accessMode: 'single-node-writer', attachmentMode: 'file-system', mountOptions: { fsType: 'ext4', mountFlags: ['password=flag-s3cret'] } } },
          tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/true' } }],
        },
      ],
    });
    const store = SqliteStateStore.open(path);
    try {
      store.writeNow((txn) => txn.put('jobs', { ...spec, stop: false, status: 'pending', version: 0, groupVersions: {}, submitTime: 0 }));
      const events = store.snapshot().events(0, { topics: ['jobs'] });
      assert.equal(events.length, 1);
      assert.doesNotMatch(JSON.stringify(events), /flag-s3cret/);
      // The row itself keeps the flags: the node needs them to mount.
      assert.match(JSON.stringify(store.snapshot().list('jobs')), /flag-s3cret/);
    } finally {
      store.close();
    }
    const db = new Database(path, { readonly: true });
    try {
      const bodies = db.prepare('SELECT body FROM events').all() as Array<{ body: string }>;
      assert.equal(bodies.length, 1);
      assert.doesNotMatch(bodies[0]!.body, /flag-s3cret/);
    } finally {
      db.close();
    }
  });

  it('refuses a corrupt file, a foreign SQLite database and a newer schema with clear errors, leaving the file alone', () => {
    const garbage = file('garbage.db');
    writeFileSync(garbage, Buffer.alloc(8192, 0x5a));
    assert.throws(() => SqliteStateStore.open(garbage), (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_CORRUPT' && e.message.includes(garbage));

    const foreign = file('foreign.db');
    const db = new Database(foreign);
    db.exec('CREATE TABLE t (x)');
    db.close();
    assert.throws(() => SqliteStateStore.open(foreign), (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_CORRUPT');

    const newer = file('newer.db');
    SqliteStateStore.open(newer).close();
    const db2 = new Database(newer);
    db2.pragma('user_version = 99');
    db2.close();
    assert.throws(() => SqliteStateStore.open(newer), (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_VERSION' && /newer/.test(e.message));

    const badRow = file('badrow.db');
    const s = SqliteStateStore.open(badRow);
    s.write((txn) => txn.put('nodes', node('a')));
    s.close();
    const db3 = new Database(badRow);
    db3.prepare("UPDATE rows SET body = '{not json' WHERE tbl = 'nodes'").run();
    db3.close();
    assert.throws(() => SqliteStateStore.open(badRow), (e: unknown) => e instanceof StateStoreError && e.code === 'STORE_CORRUPT');
  });
});
