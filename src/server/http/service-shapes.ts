// Service registrations in Nomad's shapes (src/api/services.ts). Pure.

import type { ServiceRegistration, ServiceRegistrationListStub } from '../../api/index.js';
import type { ServiceRegistration as StoredRegistration } from '../../structs/index.js';
import type { ServiceSummary } from '../services/index.js';

/** One stored registration as Nomad's ServiceRegistration. */
export function registrationShape(r: StoredRegistration): ServiceRegistration {
  return {
    ID: r.id,
    ServiceName: r.serviceName,
    Namespace: r.namespace,
    NodeID: r.nodeId,
    Datacenter: r.datacenter,
    JobID: r.jobId,
    AllocID: r.allocId,
    Tags: [...r.tags],
    Meta: { ...r.meta },
    Address: r.address,
    Port: r.port,
    CreateIndex: r.createIndex,
    ModifyIndex: r.modifyIndex,
  };
}

/** Service summaries (sorted by namespace, then name) grouped per namespace as Nomad's list answers them. */
export function serviceListShape(summaries: readonly ServiceSummary[]): ServiceRegistrationListStub[] {
  const byNamespace = new Map<string, ServiceRegistrationListStub>();
  for (const s of summaries) {
    let stub = byNamespace.get(s.namespace);
    if (!stub) byNamespace.set(s.namespace, (stub = { Namespace: s.namespace, Services: [] }));
    stub.Services.push({ ServiceName: s.serviceName, Tags: [...s.tags] });
  }
  return [...byNamespace.values()];
}
