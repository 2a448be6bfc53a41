import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fillDisk } from '../../../test/support/fill-disk.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { TS_LOADER } from '../../../test/support/ts-loader.js';
import { ClientStateError, HEADROOM_FILE, SqliteClientStateStore } from './index.js';

const root = mkdtempSync(join(tmpdir(), 'berth-cstate-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = (): string => join(root, `s${n++}`, 'client.db');

describe('SqliteClientStateStore', () => {
  it('keeps records across a reopen of the same file', () => {
    const path = fresh();
    const a = SqliteClientStateStore.open(path);
    a.bucket<{ n: number }>('plugins').put('hostpath', { n: 1 });
    a.bucket<{ n: number }>('plugins').put('ebs', { n: 2 });
    a.bucket<string>('other').put('hostpath', 'x');
    a.bucket('plugins').delete('ebs');
    a.close();
    const b = SqliteClientStateStore.open(path);
    assert.deepEqual(b.bucket('plugins').list(), [{ key: 'hostpath', value: { n: 1 } }]);
    assert.equal(b.bucket('other').get('hostpath'), 'x');
    b.close();
  });

  it('a record written is on disk when put returns, even if the process dies right after', () => {
    const path = fresh();
    // A child process writes and is killed with SIGKILL before any close.
    const script = `
      import { SqliteClientStateStore } from ${JSON.stringify(new URL('./index.ts', import.meta.url).pathname)};
      const s = SqliteClientStateStore.open(${JSON.stringify(path)});
      s.bucket('volumes').put('v1', { state: 'pending' });
      process.kill(process.pid, 'SIGKILL');`;
    const r = spawnSync(process.execPath, ['--import', TS_LOADER, '--input-type=module', '-e', script]);
    assert.equal(r.signal, 'SIGKILL', r.stderr.toString());
    const s = SqliteClientStateStore.open(path);
    assert.deepEqual(s.bucket('volumes').get('v1'), { state: 'pending' });
    s.close();
  });

  it('putSoon: reads see the record at once; the file has it at the end of the turn, or with the next put, in one commit', async () => {
    const path = fresh();
    const s = SqliteClientStateStore.open(path);
    const b = s.bucket<{ n: number }>('tasks');
    // Another connection sees only what was committed to the file.
    const other = new Database(path, { readonly: true });
    const onDisk = (): string[] => tasksOnDisk(other);
    b.putSoon('a/1', { n: 1 });
    b.putSoon('a/1', { n: 2 });
    b.putSoon('b/1', { n: 3 });
    assert.deepEqual(b.get('a/1'), { n: 2 });
    assert.deepEqual(b.listPrefix('a/'), [{ key: 'a/1', value: { n: 2 } }]);
    assert.deepEqual(onDisk(), [], 'not written yet');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(onDisk(), ['a/1', 'b/1'], 'written at the end of the turn');
    b.putSoon('c/1', { n: 4 });
    b.put('d/1', { n: 5 });
    assert.deepEqual(onDisk(), ['a/1', 'b/1', 'c/1', 'd/1'], 'a put writes what was held before it');
    b.putSoon('e/1', { n: 6 });
    assert.equal(b.delete('e/1'), true);
    assert.equal(b.get('e/1'), undefined);
    other.close();
    s.close();
    const again = SqliteClientStateStore.open(path);
    assert.deepEqual(again.bucket('tasks').list().map((r) => r.key), ['a/1', 'b/1', 'c/1', 'd/1']);
    assert.deepEqual(again.bucket('tasks').get('a/1'), { n: 2 }, 'the last value of several putSoon calls');
    again.close();
  });

  it('putLanded: the records of one turn are in the file together when each promise resolves, not before', async () => {
    const path = fresh();
    const s = SqliteClientStateStore.open(path);
    const b = s.bucket<{ pid: number }>('tasks');
    const other = new Database(path, { readonly: true });
    const onDisk = (): string[] => tasksOnDisk(other);
    const seen: string[][] = [];
    const landed = ['t1', 't2', 't3'].map((k, i) => b.putLanded(k, { pid: i + 1 }).then(() => seen.push(onDisk())));
    assert.deepEqual(onDisk(), [], 'not written in the turn of the calls');
    assert.deepEqual(b.get('t2'), { pid: 2 }, 'reads see it at once');
    await Promise.all(landed);
    assert.deepEqual(seen, [['t1', 't2', 't3'], ['t1', 't2', 't3'], ['t1', 't2', 't3']], 'each resolved with all three durable');
    // Carried by an earlier put of the same turn: resolves with that commit.
    const viaPut = b.putLanded('t4', { pid: 4 });
    b.put('t5', { pid: 5 });
    assert.deepEqual(onDisk(), ['t1', 't2', 't3', 't4', 't5']);
    await viaPut;
    other.close();
    s.close();
  });

  it('putSoon: a process killed in the same turn loses the record, unless a put came after it', () => {
    const path = fresh();
    const script = (key: string, then: string): string => `
      import { SqliteClientStateStore } from ${JSON.stringify(new URL('./index.ts', import.meta.url).pathname)};
      const s = SqliteClientStateStore.open(${JSON.stringify(path)});
      s.bucket('tasks').putSoon(${JSON.stringify(key)}, { step: 'set up' });
      ${then}
      process.kill(process.pid, 'SIGKILL');`;
    for (const [key, then] of [['soon-1', ''], ['soon-2', "s.bucket('tasks').put('handle', { pid: 1 });"]] as const) {
      const r = spawnSync(process.execPath, ['--import', TS_LOADER, '--input-type=module', '-e', script(key, then)]);
      assert.equal(r.signal, 'SIGKILL', r.stderr.toString());
    }
    const s = SqliteClientStateStore.open(path);
    // The first child's record was lost; the second's landed with its put.
    assert.deepEqual(s.bucket('tasks').list(), [
      { key: 'handle', value: { pid: 1 } },
      { key: 'soon-2', value: { step: 'set up' } },
    ]);
    s.close();
  });

  it('lists by prefix without matching longer or neighbouring keys', () => {
    const s = SqliteClientStateStore.open(fresh());
    const b = s.bucket<number>('m');
    for (const k of ['a/1', 'a/2', 'a', 'ab/1', 'b/1']) b.put(k, 1);
    assert.deepEqual(b.listPrefix('a/').map((r) => r.key), ['a/1', 'a/2']);
    s.close();
  });

  it('a transaction that throws leaves nothing behind', () => {
    const s = SqliteClientStateStore.open(fresh());
    const b = s.bucket<number>('m');
    b.put('kept', 1);
    assert.throws(() =>
      s.transaction(() => {
        b.put('lost', 2);
        b.delete('kept');
        throw new Error('boom');
      }),
    /boom/);
    assert.deepEqual(b.list(), [{ key: 'kept', value: 1 }]);
    s.close();
  });

  it('refuses a file that is not a database, and leaves it as it was', () => {
    const path = fresh();
    SqliteClientStateStore.open(path).close();
    const garbage = 'this is not sqlite at all'.repeat(200);
    writeFileSync(path, garbage);
    assert.throws(() => SqliteClientStateStore.open(path), (err: unknown) => err instanceof ClientStateError && err.code === 'STATE_CORRUPT' && err.message.includes(path));
    assert.equal(readFileSync(path, 'utf8'), garbage);
  });

  it('refuses a file written by a newer Berth', () => {
    const path = fresh();
    SqliteClientStateStore.open(path).close();
    const db = new Database(path);
    db.pragma('user_version = 99');
    db.close();
    assert.throws(() => SqliteClientStateStore.open(path), (err: unknown) => err instanceof ClientStateError && err.code === 'STATE_NEWER_VERSION' && /99/.test(err.message));
  });

  it('calls after close fail clearly, and close is safe twice', () => {
    const s = SqliteClientStateStore.open(fresh());
    s.close();
    s.close();
    assert.throws(() => s.bucket('x').get('y'), (err: unknown) => err instanceof ClientStateError && err.code === 'STATE_CLOSED');
  });
});

describe('SqliteClientStateStore on a full disk', () => {
  // A small tmpfs of its own (tests run as root), unmounted after.
  const disk = mkdtempSync(join(tmpdir(), 'berth-cstate-full-'));
  let mounted = false;
  before(() => {
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'berth-test', disk]);
    assert.equal(r.status, 0, `mount tmpfs: ${r.stderr.toString()}`);
    mounted = true;
  });
  after(() => {
    if (mounted) spawnSync('umount', [disk]);
    rmSync(disk, { recursive: true, force: true });
  });


  it('a task filling the data dir still leaves room to record a stop: the reserve goes, the record lands; with no reserve left, STATE_DISK_FULL', async () => {
    const path = join(disk, 'client', 'client.db');
    const s = SqliteClientStateStore.open(path, { headroomBytes: 1024 * 1024 });
    assert.equal(await s.headroomAtOpen(), true, 'the reserve is begun at open and made');
    assert.ok(existsSync(join(disk, 'client', HEADROOM_FILE)));
    assert.ok(s.hasHeadroom);
    s.bucket('allocs').put('a0', { state: 'running' });
    fillDisk(join(disk, 'task-data'));
    const big = 'x'.repeat(200 * 1024);
    s.bucket('allocs').put('a1', { state: 'stopped', note: big });
    assert.equal(s.hasHeadroom, false, 'the reserve was given up for the write');
    assert.equal(s.bucket<{ state: string }>('allocs').get('a1')?.state, 'stopped');
    fillDisk(join(disk, 'task-data'));
    assert.throws(
      () => s.bucket('allocs').put('a2', { state: 'stopped', note: big }),
      (e: unknown) => e instanceof ClientStateError && e.code === 'STATE_DISK_FULL' && /disk is full/.test(e.message),
    );
    assert.equal(s.restoreHeadroom(), false, 'no room for the reserve while the disk is full');
    // The task's data is collected: the reserve comes back.
    rmSync(join(disk, 'task-data'));
    assert.equal(s.restoreHeadroom(), true);
    assert.ok(s.hasHeadroom);
    s.bucket('allocs').put('a2', { state: 'stopped' });
    s.close();
    const again = SqliteClientStateStore.open(path, { headroomBytes: 1024 * 1024 });
    assert.deepEqual(again.bucket('allocs').list().map((r) => r.key), ['a0', 'a1', 'a2']);
    again.close();
  });
});

/** The keys of bucket 'tasks' committed to the file, as another connection sees them. */
function tasksOnDisk(other: Database.Database): string[] {
  return (other.prepare("SELECT key FROM records WHERE bucket = 'tasks' ORDER BY key").all() as Array<{ key: string }>).map((r) => r.key);
}
