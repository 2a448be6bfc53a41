// The store's changes as Nomad's events (src/api/events.ts): which topic each
// table's changes go to, their key, filter keys, namespace and event type,
// and each topic's payload (read with a store snapshot the caller gives).

import type { Event, EventTopic, VolumeConditionEvent } from '../../api/index.js';
import { jobToNomad, pluginSchedulable, publicClaim, publicVolume, type Job, type Volume } from '../../structs/index.js';
import { keyPrefix, rowKey, type DataTable, type StateReader, type StoreEvent, type TableRow } from '../state/index.js';
import type { VolumeView } from '../volumes/index.js';
import type { VolumeHealthService } from '../volumehealth/index.js';
import { AllocShaper } from './alloc-shapes.js';
import { driftReport, volumeCondition } from './csi-berth-shapes.js';
import { csiPlugin, csiVolume, volumeClaimListStub } from './csi-shapes.js';
import { deployedVersion, deploymentOut } from './deployment-shapes.js';
import { EvalLinks, evaluationOut } from './evaluation-shapes.js';
import { nodeOf } from './node-shapes.js';
import { registrationShape } from './service-shapes.js';

/** The tables whose changes the stream carries, by topic. The others (past job versions, the scheduler's configuration, namespaces: Nomad has no topic for them) are not streamed. */
export const TOPIC_TABLES = {
  Job: 'jobs',
  Allocation: 'allocations',
  Evaluation: 'evaluations',
  Deployment: 'deployments',
  Node: 'nodes',
  Service: 'services',
  CSIVolume: 'volumes',
  CSIPlugin: 'plugins',
  claim: 'claims',
  'volume-condition': 'volumeConditions',
  drift: 'drift',
} as const satisfies Partial<Record<EventTopic, DataTable>>;

export type StreamedTopic = keyof typeof TOPIC_TABLES;
export type StreamedTable = (typeof TOPIC_TABLES)[StreamedTopic];

const TOPIC_OF = Object.fromEntries(Object.entries(TOPIC_TABLES).map(([topic, table]) => [table, topic])) as Record<StreamedTable, StreamedTopic>;

/** The topic a table's changes go to; undefined for tables the stream does not carry. */
export function topicOf(table: DataTable): StreamedTopic | undefined {
  return (TOPIC_OF as Partial<Record<DataTable, StreamedTopic>>)[table];
}

/**
 * What the payload converters read beyond the row: a snapshot of the store
 * (a row's neighbours: an allocation's job and node, a volume's claims and
 * plugin, a claim's allocation...), and the volume health service when the
 * server keeps it (a volume's usage and condition). The converters built on
 * the snapshot are made once per context (their lookups are memoised).
 */
export class PayloadContext {
  readonly snap: StateReader;
  readonly health: VolumeHealthService | undefined;
  #shaper: AllocShaper | undefined;
  #links: EvalLinks | undefined;

  constructor(snap: StateReader, health?: VolumeHealthService) {
    this.snap = snap;
    this.health = health;
  }

  get shaper(): AllocShaper {
    return (this.#shaper ??= new AllocShaper(this.snap));
  }

  get links(): EvalLinks {
    return (this.#links ??= new EvalLinks(this.snap));
  }
}

/** A volume row (its public view, as events carry it) as the volume routes read it: with its claims and whether it is schedulable, as of the snapshot. */
function volumeView(v: Volume, snap: StateReader): VolumeView {
  return {
    ...publicVolume(v),
    schedulable: pluginSchedulable(snap.get('plugins', rowKey(v.pluginId))),
    claims: snap.list('claims', { prefix: keyPrefix(v.namespace, v.id) }).map(publicClaim),
  };
}

/**
 * Each topic's payload object, from a row as the store's events carry it
 * (its public view; for a delete, the row as it was), in the shape the
 * topic's routes answer: Nomad's Job, Allocation, Evaluation, Deployment,
 * Node, ServiceRegistration, CSIVolume and CSIPlugin, and Berth's shapes of
 * claims (as `GET /v1/volumes/csi/claims` lists them), volume conditions
 * (with the volume they are of) and drift reports. Their schemas are
 * src/api's EVENT_PAYLOADS. What a converter reads beyond the row comes
 * from the context's snapshot, which may be later than the change.
 */
export const EVENT_PAYLOAD_OBJECTS: { [T in StreamedTable]: (row: TableRow<T>, ctx: PayloadContext) => unknown } = {
  // A job's stability lives with its versions; an event carries the job alone (Stable false).
  jobs: (job) => jobToNomad(job as Job),
  allocations: (alloc, ctx) => ctx.shaper.full(alloc),
  evaluations: (evaluation, ctx) => evaluationOut(evaluation, ctx.links),
  deployments: (deployment, ctx) => deploymentOut(deployment, deployedVersion(ctx.snap, deployment)),
  nodes: (node) => nodeOf(node),
  services: (service) => registrationShape(service),
  volumes: (volume, ctx) => csiVolume(volumeView(volume, ctx.snap), ctx.snap, ctx.health?.view(volume.namespace, volume.id, ctx.snap)),
  plugins: (plugin, ctx) => csiPlugin(plugin, ctx.snap),
  claims: (claim, ctx) => volumeClaimListStub(claim, ctx.snap),
  volumeConditions: (c): VolumeConditionEvent => ({
    Namespace: c.namespace,
    VolumeID: c.volumeId,
    PluginID: c.pluginId,
    ...volumeCondition({ abnormal: c.abnormal, message: c.message, sources: Object.values(c.sources) }),
    CreateIndex: c.createIndex,
    ModifyIndex: c.modifyIndex,
  }),
  drift: (report) => driftReport(report),
};

/** The key each topic's payload object goes under (what api.Event's `Job()`, `Allocation()`... read). */
const PAYLOAD_KEY: Record<StreamedTopic, string> = {
  Job: 'Job',
  Allocation: 'Allocation',
  Evaluation: 'Evaluation',
  Deployment: 'Deployment',
  Node: 'Node',
  Service: 'Service',
  CSIVolume: 'Volume',
  CSIPlugin: 'Plugin',
  claim: 'Claim',
  'volume-condition': 'VolumeCondition',
  drift: 'Drift',
};

type Described = Pick<Event, 'Type' | 'Key' | 'Namespace' | 'FilterKeys'>;

/** Key, filter keys, namespace and type of a change of each table; `put` says whether it is a put (else a delete). */
const DESCRIBE: { [T in StreamedTable]: (row: TableRow<T>, put: boolean, index: number) => Described } = {
  jobs: (j, put) => ({ Type: put && !j.stop ? 'JobRegistered' : 'JobDeregistered', Key: j.id, Namespace: j.namespace, FilterKeys: null }),
  allocations: (a, put, index) => ({
    Type: !put ? 'AllocationDeleted' : a.createIndex === index ? 'PlanResult' : 'AllocationUpdated',
    Key: a.id,
    Namespace: a.namespace,
    FilterKeys: [a.jobId, a.deploymentId ?? ''],
  }),
  evaluations: (e, put) => ({ Type: put ? 'EvaluationUpdated' : 'EvaluationDeleted', Key: e.id, Namespace: e.namespace, FilterKeys: [e.jobId, ''] }),
  deployments: (d, put) => ({ Type: put ? 'DeploymentStatusUpdate' : 'DeploymentDeleted', Key: d.id, Namespace: d.namespace, FilterKeys: [d.jobId] }),
  nodes: (n, put, index) => ({
    Type: !put ? 'NodeDeregistration' : n.createIndex === index || n.registerIndex === index ? 'NodeRegistration' : n.drainStrategy ? 'NodeDrain' : 'NodeStreamEvent',
    Key: n.id,
    Namespace: '',
    FilterKeys: null,
  }),
  services: (s, put) => ({ Type: put ? 'ServiceRegistration' : 'ServiceDeregistration', Key: s.id, Namespace: s.namespace, FilterKeys: [s.jobId, s.serviceName] }),
  volumes: (v, put) => ({ Type: put ? 'CSIVolumeRegistered' : 'CSIVolumeDeregistered', Key: v.id, Namespace: v.namespace, FilterKeys: [v.id, v.name, v.pluginId] }),
  plugins: (p, put) => ({ Type: put ? 'CSIPluginUpdated' : 'CSIPluginDeleted', Key: p.id, Namespace: '', FilterKeys: [p.id] }),
  claims: (c, put) => ({ Type: put ? 'ClaimUpserted' : 'ClaimDeleted', Key: `${c.volumeId}/${c.allocId}`, Namespace: c.namespace, FilterKeys: [c.volumeId, c.allocId, c.nodeId] }),
  volumeConditions: (c, put) => ({ Type: put ? 'VolumeConditionUpserted' : 'VolumeConditionDeleted', Key: c.volumeId, Namespace: c.namespace, FilterKeys: [c.volumeId, c.pluginId] }),
  drift: (d, put) => ({ Type: put ? 'DriftUpserted' : 'DriftDeleted', Key: d.id, Namespace: '', FilterKeys: null }),
};

/**
 * One store change as a Nomad event; undefined for a table the stream does
 * not carry, or a change `keep` (given the event without its payload)
 * leaves out, whose payload is then never converted. The payload converters
 * read the row's neighbours from `ctx`'s snapshot (the caller's: the stream
 * takes one when it sends the change, so neighbours are as of then, not as
 * of the change).
 */
export function eventOf(change: StoreEvent, ctx: PayloadContext, keep: (ev: Omit<Event, 'Payload'>) => boolean = () => true): Event | undefined {
  const topic = topicOf(change.topic);
  if (!topic || !change.row) return undefined;
  const table = change.topic as StreamedTable;
  const put = change.op === 'put';
  const described = (DESCRIBE[table] as (row: unknown, put: boolean, index: number) => Described)(change.row, put, change.index);
  const head = { Topic: topic, ...described, Index: change.index };
  if (!keep(head)) return undefined;
  const object = (EVENT_PAYLOAD_OBJECTS[table] as (row: unknown, ctx: PayloadContext) => unknown)(change.row, ctx);
  const payload: Record<string, unknown> = { [PAYLOAD_KEY[topic]]: object };
  if (topic === 'Job' && !put) payload['Deleted'] = true;
  return { ...head, Payload: payload };
}
