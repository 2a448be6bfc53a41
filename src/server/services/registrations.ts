// The services table as allocations change: a running allocation's client
// reports its services (resolved addresses and ports) and check results; the
// registrations follow, in the same write as the report. An allocation that
// stops, fails, is lost with its node or is collected loses its registrations.

import { isClientTerminal, type Allocation, type ServiceRegistration, type ServiceReport } from '../../structs/index.js';
import type { StateReader, WriteTxn } from '../state/index.js';
import { rowKey } from '../state/index.js';

/** Whether an allocation's services may be registered: the server wants it running and its client says it runs. */
export function allocMayRegister(alloc: Pick<Allocation, 'desiredStatus' | 'clientStatus'>): boolean {
  return alloc.desiredStatus === 'run' && alloc.clientStatus === 'running';
}

/** The registrations of one allocation (any namespace). Pure read; scans the table. */
export function allocRegistrations(snap: StateReader, allocId: string): ServiceRegistration[] {
  return snap.list('services', { filter: (r) => r.allocId === allocId });
}

const keyOfReg = (r: Pick<ServiceRegistration, 'namespace' | 'serviceName' | 'id'>): string => rowKey(r.namespace, r.serviceName, r.id);

/**
 * Makes the allocation's registrations what its client reported: puts new or
 * changed ones, deletes the rest. With `reports` undefined (the report said
 * nothing of services) only removes them when the allocation may no longer
 * register. Returns how many rows changed. Runs inside a store write.
 */
export function syncAllocServices(txn: WriteTxn, alloc: Allocation, reports: readonly ServiceReport[] | undefined): number {
  const current = allocRegistrations(txn, alloc.id);
  if (!allocMayRegister(alloc)) return dropAll(txn, current);
  if (reports === undefined) return 0;
  const datacenter = txn.get('nodes', rowKey(alloc.nodeId))?.datacenter ?? '';
  let changed = 0;
  const wanted = new Set<string>();
  for (const r of reports) {
    const row = {
      id: r.id,
      serviceName: r.serviceName,
      namespace: alloc.namespace,
      nodeId: alloc.nodeId,
      datacenter,
      jobId: alloc.jobId,
      allocId: alloc.id,
      tags: [...r.tags],
      meta: { ...r.meta },
      address: r.address,
      port: r.port,
    };
    const key = keyOfReg(row);
    wanted.add(key);
    const was = txn.get('services', key);
    if (was && sameRegistration(was, row)) continue;
    txn.put('services', row);
    changed++;
  }
  for (const reg of current) {
    if (wanted.has(keyOfReg(reg))) continue;
    txn.delete('services', keyOfReg(reg));
    changed++;
  }
  return changed;
}

/** Deletes every registration of an allocation that may not register (or is gone). Returns how many. */
export function dropStaleServices(txn: WriteTxn, allocId: string): number {
  const alloc = txn.get('allocations', rowKey(allocId));
  if (alloc && allocMayRegister(alloc)) return 0;
  return dropAll(txn, allocRegistrations(txn, allocId));
}

function dropAll(txn: WriteTxn, regs: readonly ServiceRegistration[]): number {
  for (const reg of regs) txn.delete('services', keyOfReg(reg));
  return regs.length;
}

function sameRegistration(a: ServiceRegistration, b: Omit<ServiceRegistration, 'createIndex' | 'modifyIndex'>): boolean {
  return (
    a.address === b.address &&
    a.port === b.port &&
    a.nodeId === b.nodeId &&
    a.datacenter === b.datacenter &&
    JSON.stringify(a.tags) === JSON.stringify(b.tags) &&
    JSON.stringify(a.meta) === JSON.stringify(b.meta)
  );
}

/** Whether a stored allocation row still may hold registrations (for the reaper's scan). */
export function registrationStale(snap: StateReader, reg: ServiceRegistration): boolean {
  const alloc = snap.get('allocations', rowKey(reg.allocId));
  return !alloc || !allocMayRegister(alloc) || isClientTerminal(alloc.clientStatus);
}
