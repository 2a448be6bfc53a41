// The event stream, as Nomad's `api` package reads it (api/event_stream.go):
// `GET /v1/event/stream` answers newline-delimited JSON, one Events frame
// per store index (every change of one write), and `{}` heartbeats while
// idle. Topics and event types are Nomad's (nomad/structs/event.go) where
// Nomad has the object; Berth's own objects keep Berth's topic names.

import { z } from 'zod';
import { Allocation } from './allocations.js';
import { CSIPlugin, CSIVolume } from './csi.js';
import { DriftReport, VolumeClaimListStub, VolumeConditionEvent } from './csi-berth.js';
import { Deployment } from './deployments.js';
import { Evaluation } from './evaluations.js';
import { Job } from './jobs.js';
import { Node } from './nodes.js';
import { ServiceRegistration } from './services.js';
import { lazySchema } from './lazy-schema.js';

/** Nomad's topics Berth emits events on. */
export const NOMAD_EVENT_TOPICS = ['Job', 'Allocation', 'Evaluation', 'Deployment', 'Node', 'Service', 'CSIVolume', 'CSIPlugin'] as const;
/** Nomad's topics a request may name that never carry an event in Berth (Berth has no such objects; its tokens are config). */
export const SILENT_EVENT_TOPICS = ['NodePool', 'ACLToken', 'ACLPolicy', 'ACLRole', 'ACLAuthMethod', 'ACLBindingRule', 'HostVolume', 'Operator', 'Variable'] as const;
/**
 * Berth's own topics: `claim` (a volume claim taken, released or changed:
 * the claim history), `volume-condition` (a volume's condition as its
 * plugin reports it), `drift` (the drift loop's latest report).
 */
export const BERTH_EVENT_TOPICS = ['claim', 'volume-condition', 'drift'] as const;

export const EventTopic = lazySchema(() => z.enum([...NOMAD_EVENT_TOPICS, ...SILENT_EVENT_TOPICS, ...BERTH_EVENT_TOPICS]));
export type EventTopic = z.infer<typeof EventTopic>;

/**
 * The event types of each topic Berth emits. Nomad names an event after
 * the write that made it; Berth's store records puts and deletes, so the
 * type is read from the change: a job put is JobRegistered (JobDeregistered
 * once stopped), a job delete JobDeregistered with `Deleted`; an
 * allocation created by a write is PlanResult, later changes
 * AllocationUpdated; a node's first write or re-registration is
 * NodeRegistration, a draining node's change NodeDrain, other changes
 * NodeStreamEvent. The `...Deleted` types of Allocation, Evaluation,
 * Deployment and CSIPlugin are Berth's (garbage collection; Nomad emits
 * nothing then), as are the types of Berth's topics.
 */
export const EVENT_TYPES = {
  Job: ['JobRegistered', 'JobDeregistered'],
  Allocation: ['PlanResult', 'AllocationUpdated', 'AllocationDeleted'],
  Evaluation: ['EvaluationUpdated', 'EvaluationDeleted'],
  Deployment: ['DeploymentStatusUpdate', 'DeploymentDeleted'],
  Node: ['NodeRegistration', 'NodeDrain', 'NodeStreamEvent', 'NodeDeregistration'],
  Service: ['ServiceRegistration', 'ServiceDeregistration'],
  CSIVolume: ['CSIVolumeRegistered', 'CSIVolumeDeregistered'],
  CSIPlugin: ['CSIPluginUpdated', 'CSIPluginDeleted'],
  claim: ['ClaimUpserted', 'ClaimDeleted'],
  'volume-condition': ['VolumeConditionUpserted', 'VolumeConditionDeleted'],
  drift: ['DriftUpserted', 'DriftDeleted'],
} as const satisfies Record<string, readonly string[]>;

/**
 * One change (api.Event, as the server encodes it). `Key` is the object's
 * ID (a job's, a volume's, a claim's `volumeId/allocId`); `FilterKeys` are
 * the other IDs a `topic=Topic:key` filter matches (a job's allocations,
 * evaluations and deployments by the job ID, a service's instances by the
 * service name; null where Nomad has none). `Namespace` is "" for objects
 * outside namespaces (nodes, plugins). `Payload` holds the object under the
 * topic's key (EVENT_PAYLOADS).
 */
export const Event = lazySchema(() => z.object({
  Topic: EventTopic,
  Type: z.string(),
  Key: z.string(),
  Namespace: z.string(),
  FilterKeys: z.array(z.string()).nullable(),
  Index: z.number().int(),
  Payload: z.record(z.string(), z.unknown()),
}));
export type Event = z.infer<typeof Event>;

/** One frame of the stream (api.Events): the events of one store index. */
export const Events = lazySchema(() => z.object({ Index: z.number().int(), Events: z.array(Event) }));
export type Events = z.infer<typeof Events>;

/** The frame a stream sends when it opens and every heartbeat interval while idle. */
export const EventHeartbeat = lazySchema(() => z.object({}));
export type EventHeartbeat = z.infer<typeof EventHeartbeat>;

/**
 * Each topic's payload: the object under Nomad's key (api.Event's
 * `Job()`, `Allocation()`, `Node()`... read these keys), in the shape the
 * topic's routes answer. A Job deleted from the store has `Deleted`.
 * Berth's topics: `Claim` is a row of `GET /v1/volumes/csi/claims`
 * (the claim, its volume, and its allocation's job and status when the
 * event was sent), `VolumeCondition` a volume's condition with the volume
 * it is of, `Drift` the drift loop's report (`GET /v1/volumes/drift`).
 */
export const EVENT_PAYLOADS = {
  Job: lazySchema(() => z.object({ Job: Job, Deleted: z.boolean().optional() })),
  Allocation: lazySchema(() => z.object({ Allocation: Allocation })),
  Evaluation: lazySchema(() => z.object({ Evaluation: Evaluation })),
  Deployment: lazySchema(() => z.object({ Deployment: Deployment })),
  Node: lazySchema(() => z.object({ Node: Node })),
  Service: lazySchema(() => z.object({ Service: ServiceRegistration })),
  CSIVolume: lazySchema(() => z.object({ Volume: CSIVolume })),
  CSIPlugin: lazySchema(() => z.object({ Plugin: CSIPlugin })),
  claim: lazySchema(() => z.object({ Claim: VolumeClaimListStub })),
  'volume-condition': lazySchema(() => z.object({ VolumeCondition: VolumeConditionEvent })),
  drift: lazySchema(() => z.object({ Drift: DriftReport })),
} as const;
