// Dynamic host volumes as Nomad's API encodes them (Nomad 1.10,
// api/host_volumes.go): `PUT /v1/volume/host/create`, `PUT
// /v1/volume/host/register`, `GET /v1/volume/host/:id`, `DELETE
// /v1/volume/host/:id` (`force`), `GET /v1/volumes?type=host` (`node_id`,
// `node_pool`, `prefix`, namespace `*`). Answers are strict objects with
// every field Nomad writes (`Constraints`, `Parameters` and `Allocations`
// are omitempty in Nomad's encoder: left out when empty). Requests are read
// as Go reads them: unknown fields ignored, missing ones zero.

import { z } from 'zod';
import { AllocationListStub } from './allocations.js';
import { Constraint } from './constraints.js';
import { lazySchema } from './lazy-schema.js';

const int = lazySchema(() => z.number().int());

/** api.HostVolumeState. */
export const HostVolumeState = lazySchema(() => z.enum(['pending', 'ready', 'unavailable']));
export type HostVolumeState = z.infer<typeof HostVolumeState>;

/** api.HostVolumeCapability. */
export const HostVolumeCapability = lazySchema(() => z.strictObject({ AttachmentMode: z.string(), AccessMode: z.string() }));
export type HostVolumeCapability = z.infer<typeof HostVolumeCapability>;

/** api.HostVolume: one volume (GET /v1/volume/host/:id, and the `Volume` of create and register answers). */
export const HostVolume = lazySchema(() => z.strictObject({
  Namespace: z.string(),
  ID: z.string(),
  Name: z.string(),
  PluginID: z.string(),
  NodePool: z.string(),
  NodeID: z.string(),
  Constraints: z.array(Constraint).optional(),
  RequestedCapacityMinBytes: int,
  RequestedCapacityMaxBytes: int,
  CapacityBytes: int,
  RequestedCapabilities: z.array(HostVolumeCapability).nullable(),
  Parameters: z.record(z.string(), z.string()).optional(),
  HostPath: z.string(),
  State: HostVolumeState,
  CreateIndex: int,
  CreateTime: int,
  ModifyIndex: int,
  ModifyTime: int,
  Allocations: z.array(AllocationListStub).optional(),
}));
export type HostVolume = z.infer<typeof HostVolume>;

/** api.HostVolumeStub: a volume in GET /v1/volumes?type=host. */
export const HostVolumeStub = lazySchema(() => z.strictObject({
  Namespace: z.string(),
  ID: z.string(),
  Name: z.string(),
  PluginID: z.string(),
  NodePool: z.string(),
  NodeID: z.string(),
  CapacityBytes: int,
  State: HostVolumeState,
  CreateIndex: int,
  CreateTime: int,
  ModifyIndex: int,
  ModifyTime: int,
}));
export type HostVolumeStub = z.infer<typeof HostVolumeStub>;

/** A volume as a create or register request carries it (Go's decoder: every field optional). */
export const HostVolumeSubmission = lazySchema(() => z.looseObject({
  Namespace: z.string().optional(),
  ID: z.string().optional(),
  Name: z.string().optional(),
  PluginID: z.string().optional(),
  NodePool: z.string().optional(),
  NodeID: z.string().optional(),
  Constraints: z.array(z.looseObject({ LTarget: z.string().optional(), RTarget: z.string().optional(), Operand: z.string().optional() })).nullable().optional(),
  RequestedCapacityMinBytes: int.optional(),
  RequestedCapacityMaxBytes: int.optional(),
  CapacityBytes: int.optional(),
  RequestedCapabilities: z.array(z.looseObject({ AttachmentMode: z.string().optional(), AccessMode: z.string().optional() })).nullable().optional(),
  Parameters: z.record(z.string(), z.string()).nullable().optional(),
  HostPath: z.string().optional(),
}));
export type HostVolumeSubmission = z.infer<typeof HostVolumeSubmission>;

/** api.HostVolumeCreateRequest and api.HostVolumeRegisterRequest. */
export const HostVolumeCreateRequest = lazySchema(() => z.looseObject({ Volume: HostVolumeSubmission.nullable().optional(), PolicyOverride: z.boolean().optional() }));
export type HostVolumeCreateRequest = z.infer<typeof HostVolumeCreateRequest>;
export type HostVolumeRegisterRequest = HostVolumeCreateRequest;

/** api.HostVolumeCreateResponse and api.HostVolumeRegisterResponse (Nomad's server also writes its WriteMeta `Index`). */
export const HostVolumeCreateResponse = lazySchema(() => z.strictObject({ Volume: HostVolume, Warnings: z.string(), Index: int }));
export type HostVolumeCreateResponse = z.infer<typeof HostVolumeCreateResponse>;
export type HostVolumeRegisterResponse = HostVolumeCreateResponse;
