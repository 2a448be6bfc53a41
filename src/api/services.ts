// Nomad's native service discovery, as Nomad's `api` package reads it
// (api/services.go): `GET /v1/services`, `GET /v1/service/:name`,
// `DELETE /v1/service/:name/:id`.

import { z } from 'zod';
import { lazySchema } from './lazy-schema.js';

/** api.ServiceRegistrationStub: a service name and the union of its instances' tags, sorted. */
export const ServiceRegistrationStub = lazySchema(() => z.object({ ServiceName: z.string(), Tags: z.array(z.string()) }));
export type ServiceRegistrationStub = z.infer<typeof ServiceRegistrationStub>;

/** api.ServiceRegistrationListStub: one namespace's services (`GET /v1/services` answers a list of them). */
export const ServiceRegistrationListStub = lazySchema(() => z.object({ Namespace: z.string(), Services: z.array(ServiceRegistrationStub) }));
export type ServiceRegistrationListStub = z.infer<typeof ServiceRegistrationListStub>;

/** api.ServiceRegistration: one instance of a service (`GET /v1/service/:name` answers a list of them). */
export const ServiceRegistration = lazySchema(() => z.object({
  ID: z.string(),
  ServiceName: z.string(),
  Namespace: z.string(),
  NodeID: z.string(),
  Datacenter: z.string(),
  JobID: z.string(),
  AllocID: z.string(),
  Tags: z.array(z.string()),
  /** Berth's: the service block's `meta` (Nomad keeps it in Consul only). */
  Meta: z.record(z.string(), z.string()),
  Address: z.string(),
  Port: z.number().int(),
  CreateIndex: z.number().int(),
  ModifyIndex: z.number().int(),
}));
export type ServiceRegistration = z.infer<typeof ServiceRegistration>;
