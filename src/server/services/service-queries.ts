// Reads of the services table as the API serves them. A registration is
// returned only while its allocation's checks of that service are neither
// critical nor pending, unless the caller asks for unhealthy ones too (Nomad
// returns every registration; Berth's default serves callers that want
// instances they can reach).

import { createHash } from 'node:crypto';
import { registrationHealthy, type ServiceRegistration } from '../../structs/index.js';
import { keyPrefix, rowKey, type StateReader } from '../state/index.js';

export interface InstanceQuery {
  /** Only instances carrying every one of these tags. */
  tags?: readonly string[];
  includeUnhealthy?: boolean;
  /** Nomad's `choose=<n>|<key>`: n instances picked by rendezvous hashing on key (stable for one key). */
  choose?: { count: number; key: string };
}

/** One service name in a namespace, with the union of its instances' tags. */
export interface ServiceSummary {
  namespace: string;
  serviceName: string;
  tags: string[];
  /** Healthy instances (all instances with includeUnhealthy). */
  instances: number;
}

function healthy(snap: StateReader, reg: ServiceRegistration): boolean {
  return registrationHealthy(reg, snap.get('allocations', rowKey(reg.allocId))?.checks);
}

/** The instances of `name` in `namespace` ('*': every namespace), sorted by key, filtered as asked. Pure read. */
export function serviceInstances(snap: StateReader, namespace: string, name: string, q: InstanceQuery = {}): ServiceRegistration[] {
  const tags = q.tags ?? [];
  const rows =
    namespace === '*'
      ? snap.list('services', { filter: (r) => r.serviceName === name })
      : snap.list('services', { prefix: keyPrefix(namespace, name) });
  const found = rows.filter((r) => tags.every((t) => r.tags.includes(t)) && (q.includeUnhealthy || healthy(snap, r)));
  if (!q.choose) return found;
  const score = (r: ServiceRegistration): string => createHash('sha256').update(`${q.choose?.key}\0${r.id}`).digest('hex');
  return found
    .map((r) => ({ r, s: score(r) }))
    .sort((a, b) => (a.s < b.s ? -1 : a.s > b.s ? 1 : 0))
    .slice(0, q.choose.count)
    .map((x) => x.r);
}

/** Every service name with at least one instance that counts (see serviceInstances), by namespace then name. Pure read. */
export function listServices(snap: StateReader, namespace: string, q: Pick<InstanceQuery, 'includeUnhealthy'> = {}): ServiceSummary[] {
  const byName = new Map<string, ServiceSummary>();
  const rows = snap.list('services', namespace === '*' ? {} : { prefix: keyPrefix(namespace) });
  for (const r of rows) {
    if (!q.includeUnhealthy && !healthy(snap, r)) continue;
    const key = `${r.namespace}\0${r.serviceName}`;
    let s = byName.get(key);
    if (!s) byName.set(key, (s = { namespace: r.namespace, serviceName: r.serviceName, tags: [], instances: 0 }));
    s.instances++;
    for (const t of r.tags) if (!s.tags.includes(t)) s.tags.push(t);
  }
  return [...byName.values()].map((s) => ({ ...s, tags: s.tags.sort() }));
}
