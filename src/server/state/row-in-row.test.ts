// A row that holds another row put by the same write (a job version holds
// its job) is stored as it always was: its JSON, and its event's, are what
// JSON.stringify writes for the row as given, byte for byte, and read back
// the same after a reopen; in memory it holds the very row it was given
// (frozen, not serialized and parsed again). A version whose job has mount
// flags keeps them in the row and out of its event.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { parseJobSpec, type JobSpec } from '../../structs/index.js';
import { rowKey, SqliteStateStore, type RowInput } from './index.js';

/** Every row's and every event's JSON in the file at `path`, by table and key. */
function fileBodies(path: string): { rows: Map<string, string>; events: Map<string, string> } {
  const db = new Database(path, { readonly: true });
  try {
    const rows = new Map((db.prepare('SELECT tbl, key, body FROM rows').all() as Array<{ tbl: string; key: string; body: string }>).map((r) => [`${r.tbl}/${r.key}`, r.body]));
    const events = new Map((db.prepare('SELECT topic, key, body FROM events').all() as Array<{ topic: string; key: string; body: string }>).map((e) => [`${e.topic}/${e.key}`, e.body]));
    return { rows, events };
  } finally {
    db.close();
  }
}

const spec = (id: string, mountFlags: string[] = []): JobSpec =>
  parseJobSpec({
    id,
    meta: { odd: 'quote " and \u2028 and emoji \u{1F600}' },
    groups: [
      {
        name: 'g',
        volumes: { data: { type: 'csi', source: 'v1', accessMode: 'single-node-writer', attachmentMode: 'file-system', mountOptions: { fsType: 'ext4', mountFlags } } },
        tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['60'] }, env: { A: '1' } }],
      },
    ],
  });

describe('a row holding a row of the same write', () => {
  const dir = mkdtempSync(join(tmpdir(), 'berth-row-in-row-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('is stored and streamed as JSON.stringify writes it, and holds the row itself in memory', () => {
    const path = join(dir, 'state.db');
    const store = SqliteStateStore.open(path, { headroomBytes: 0 });
    const given: Array<{ table: string; key: string; shape: Record<string, unknown> }> = [];
    let index = 0;
    try {
      for (const [id, flags] of [['plain', []], ['flagged', ['password=s3cret']]] as const) {
        const written = store.writeNow((txn) => {
          const job = txn.put('jobs', { ...spec(id, [...flags]), stop: false, status: 'pending', version: 0, groupVersions: { g: 0 }, submitTime: 1 });
          const input: RowInput<'jobVersions'> = { namespace: 'default', jobId: id, version: 0, stable: true, job, submitTime: 1 };
          const version = txn.put('jobVersions', input);
          assert.equal(version.job, job, 'the version holds the job row itself');
          assert.ok(Object.isFrozen(version) && Object.isFrozen(version.job.groups[0]!.tasks[0]!.config));
          given.push({ table: 'jobs', key: rowKey('default', id), shape: { ...job } });
          given.push({ table: 'jobVersions', key: rowKey('default', id, '0000000000'), shape: { ...input, createIndex: txn.writeIndex, modifyIndex: txn.writeIndex } });
          return txn.writeIndex;
        });
        index = written.result;
      }
      assert.ok(index > 0);
    } finally {
      store.close();
    }

    const { rows, events } = fileBodies(path);
    for (const g of given) {
      const at = `${g.table}/${g.key}`;
      assert.equal(rows.get(at), JSON.stringify(g.shape), `${at}: the row's JSON`);
      if (g.key.includes('flagged')) {
        assert.match(rows.get(at)!, /s3cret/, `${at}: the row keeps the flags`);
        assert.doesNotMatch(events.get(at)!, /s3cret/, `${at}: its event does not`);
        assert.match(events.get(at)!, /\[REDACTED\]/);
      } else assert.equal(events.get(at), JSON.stringify(g.shape), `${at}: the event's JSON`);
    }

    const reopened = SqliteStateStore.open(path, { headroomBytes: 0 });
    try {
      const snap = reopened.snapshot();
      for (const g of given) assert.deepEqual(snap.get(g.table as 'jobs', g.key), JSON.parse(JSON.stringify(g.shape)), `${g.table}/${g.key} read back`);
      const streamed = snap.events(0, { topics: ['jobVersions'] }).map((e) => JSON.stringify(e.row));
      assert.deepEqual(streamed.map((s) => /s3cret/.test(s)), [false, false]);
    } finally {
      reopened.close();
    }
  });
});
