import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { ClientStateError, SqliteClientStateStore } from './index.js';

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
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
    assert.equal(r.signal, 'SIGKILL', r.stderr.toString());
    const s = SqliteClientStateStore.open(path);
    assert.deepEqual(s.bucket('volumes').get('v1'), { state: 'pending' });
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
