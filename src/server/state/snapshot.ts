// Backup and restore of a whole state store, in a file format of Berth's own
// that does not depend on the store: a snapshot saved from SQLite restores
// into etcd and back (how a single server moves its state into etcd).
//
// The file is JSON lines: a header, one line per row, and a trailer with the
// row count and the SHA-256 of every line before it:
//   {"berthSnapshot":1,"index":42,"savedAt":"2026-...","rows":3}
//   {"table":"nodes","key":"n1","row":{...}}
//   {"end":true,"rows":3,"sha256":"..."}
// Rows are kept whole, secrets included (the server needs them), so the file
// is written with mode 0600. Rows carry no indexes: the store a snapshot is
// restored into stamps its own. The event history is not saved.

import { createHash } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { StateStoreError } from './errors.js';
import { keyOf } from './keys.js';
import { DATA_TABLES, type DataTable, type RowInput, type StateReader, type StateStore } from './state-store.js';

/** The snapshot format this code writes and reads. */
export const SNAPSHOT_VERSION = 1;
/** Rows per write while restoring (etcd caps the operations of one transaction, 128 by default). */
const RESTORE_BATCH = 100;

export interface SnapshotSummary {
  /** The store index the snapshot was read at. */
  index: number;
  rows: number;
  /** Rows per table. */
  tables: Partial<Record<DataTable, number>>;
}

/** The snapshot of `reader` as the file's text. Pure. */
export function encodeSnapshot(reader: StateReader, savedAt = new Date()): { text: string; summary: SnapshotSummary } {
  const lines: string[] = [];
  const tables: Partial<Record<DataTable, number>> = {};
  let rows = 0;
  for (const table of DATA_TABLES) {
    for (const r of reader.list(table)) {
      const { createIndex: _c, modifyIndex: _m, ...row } = r as unknown as Record<string, unknown>;
      lines.push(JSON.stringify({ table, key: keyOf(table, r), row }));
      tables[table] = (tables[table] ?? 0) + 1;
      rows++;
    }
  }
  const header = JSON.stringify({ berthSnapshot: SNAPSHOT_VERSION, index: reader.index, savedAt: savedAt.toISOString(), rows });
  const body = [header, ...lines].map((l) => `${l}\n`).join('');
  const sha256 = createHash('sha256').update(body).digest('hex');
  return { text: `${body}${JSON.stringify({ end: true, rows, sha256 })}\n`, summary: { index: reader.index, rows, tables } };
}

interface ParsedSnapshot {
  index: number;
  rows: Array<{ table: DataTable; key: string; row: Record<string, unknown> }>;
}

/** Parses and checks a snapshot file's text. Throws StateStoreError STORE_SNAPSHOT naming what is wrong. */
export function decodeSnapshot(text: string, what = 'snapshot'): ParsedSnapshot {
  const bad = (why: string): StateStoreError => new StateStoreError('STORE_SNAPSHOT', `${what} is not a valid Berth snapshot: ${why}`);
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  if (lines.length < 2) throw bad('it is empty or truncated');
  const parse = (line: string, n: number): Record<string, unknown> => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw bad(`line ${n} is not JSON`);
    }
  };
  const header = parse(lines[0]!, 1);
  if (typeof header['berthSnapshot'] !== 'number') throw bad('no snapshot header on line 1');
  if (header['berthSnapshot'] > SNAPSHOT_VERSION) {
    throw new StateStoreError('STORE_VERSION', `${what} has snapshot version ${String(header['berthSnapshot'])}, newer than this Berth understands (${SNAPSHOT_VERSION}); upgrade Berth`);
  }
  const trailer = parse(lines.at(-1)!, lines.length);
  if (trailer['end'] !== true) throw bad('it is truncated (no end line)');
  const body = lines.slice(0, -1).map((l) => `${l}\n`).join('');
  if (createHash('sha256').update(body).digest('hex') !== trailer['sha256']) throw bad('its checksum does not match (the file was changed or damaged)');
  const known = new Set<string>(DATA_TABLES);
  const rows = lines.slice(1, -1).map((l, i) => {
    const r = parse(l, i + 2);
    if (!known.has(String(r['table'])) || typeof r['key'] !== 'string' || !r['row'] || typeof r['row'] !== 'object') throw bad(`line ${i + 2} is not a row`);
    return r as unknown as ParsedSnapshot['rows'][number];
  });
  if (rows.length !== trailer['rows'] || rows.length !== header['rows']) throw bad(`it names ${String(trailer['rows'])} rows but holds ${rows.length}`);
  return { index: Number(header['index']) || 0, rows };
}

/**
 * Saves a consistent snapshot of `store` (one read view, at one index) to
 * `file`, written whole and then renamed into place, mode 0600. Does not
 * block writers. Rejects with the file system's error when it cannot write.
 */
export async function saveSnapshot(store: StateStore, file: string): Promise<SnapshotSummary> {
  const { text, summary } = encodeSnapshot(store.snapshot());
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, text, { mode: 0o600 });
  await rename(tmp, file);
  return summary;
}

/**
 * Restores the snapshot in `file` into `store`, which must be empty (a fresh
 * state file or etcd prefix no server has written): rejects with
 * StateStoreError STORE_SNAPSHOT when it is not, or when the file is not a
 * valid snapshot (nothing is written then). Rows are written in batches of
 * 100, each one write: a restore that fails part-way (etcd lost its quorum)
 * leaves some rows; restore again into a fresh store. Resolves with what was
 * restored; `index` is the store's index afterwards.
 */
export async function restoreSnapshot(store: StateStore, file: string): Promise<SnapshotSummary> {
  const parsed = decodeSnapshot(await readFile(file, 'utf8'), file);
  const snap = store.snapshot();
  const occupied = DATA_TABLES.filter((t) => snap.list(t).length > 0);
  if (store.latestIndex() > 0 && occupied.length > 0) {
    throw new StateStoreError('STORE_SNAPSHOT', `the target state store is not empty (it holds ${occupied.join(', ')}); restore into a fresh one with no server running on it`);
  }
  const tables: Partial<Record<DataTable, number>> = {};
  let index = store.latestIndex();
  for (let i = 0; i < parsed.rows.length; i += RESTORE_BATCH) {
    const batch = parsed.rows.slice(i, i + RESTORE_BATCH);
    const res = await store.write((txn) => {
      for (const r of batch) txn.put(r.table, r.row as unknown as RowInput<typeof r.table>);
    });
    index = res.index;
    for (const r of batch) tables[r.table] = (tables[r.table] ?? 0) + 1;
  }
  return { index, rows: parsed.rows.length, tables };
}
