import { publicClaim, publicJob, publicRootKey, publicVolume } from '../../structs/index.js';
import type { DataTable, TableRow } from './state-store.js';

/**
 * A row key from its parts: each part URI-encoded, joined with `/`. Parts may
 * hold any characters (volume IDs may contain `/`), yet `rowKey(a, b) + '/'`
 * is a prefix of exactly the keys that start with parts a and b. Pure.
 */
export function rowKey(...parts: string[]): string {
  return parts.map((p) => encodeURIComponent(p)).join('/');
}

/** The prefix of every key whose leading parts are `parts`. */
export function keyPrefix(...parts: string[]): string {
  return rowKey(...parts) + '/';
}

/** Keys of each table: nodes/plugins/allocations/evaluations by ID; jobs and volumes by namespace + ID; volume conditions by namespace + volume ID; services by namespace + service name + registration ID; claims by namespace + volume + allocation; namespaces by name. */
export function keyOf<T extends DataTable>(table: T, row: Omit<TableRow<T>, 'createIndex' | 'modifyIndex'>): string {
  const r = row as Record<string, unknown>;
  switch (table) {
    case 'jobs':
    case 'volumes':
    case 'hostVolumes':
      return rowKey(String(r['namespace']), String(r['id']));
    case 'volumeConditions':
      return rowKey(String(r['namespace']), String(r['volumeId']));
    case 'services':
      return rowKey(String(r['namespace']), String(r['serviceName']), String(r['id']));
    case 'jobVersions':
      return rowKey(String(r['namespace']), String(r['jobId']), String(r['version']).padStart(10, '0'));
    case 'hostVolumeClaims':
      return rowKey(String(r['namespace']), String(r['jobId']), String(r['taskGroup']), String(r['volumeId']));
    case 'claims':
      return rowKey(String(r['namespace']), String(r['volumeId']), String(r['allocId']));
    case 'namespaces':
      return rowKey(String(r['name']));
    default:
      return rowKey(String(r['id']));
  }
}

/** What events carry of a row: root keys without their private half, volumes without secrets, claims with credential-looking context redacted, jobs (and past job versions) without mount flags. */
export function publicRow(table: DataTable, row: unknown): unknown {
  if (table === 'rootKeys' && row) return publicRootKey(row as TableRow<'rootKeys'>);
  if (table === 'volumes') return publicVolume(row as TableRow<'volumes'>);
  if (table === 'claims') return publicClaim(row as TableRow<'claims'>);
  if (table === 'jobs') return publicJob(row as TableRow<'jobs'>);
  if (table === 'jobVersions' && row) {
    const v = row as TableRow<'jobVersions'>;
    const job = publicJob(v.job);
    // The row itself when nothing is redacted: its event is then written with the row's own JSON (sqlite-state-store's commit).
    return job === v.job ? v : { ...v, job };
  }
  return row;
}
