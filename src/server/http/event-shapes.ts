// The store's changes as Nomad's events (src/api/events.ts): which topic each
// table's changes go to, their key, filter keys, namespace and event type,
// and each topic's payload. Pure.

import type { Event, EventTopic } from '../../api/index.js';
import { jobToNomad, type Job } from '../../structs/index.js';
import type { DataTable, StoreEvent, TableRow } from '../state/index.js';
import { registrationShape } from './service-shapes.js';

/** The tables whose changes the stream carries, by topic. The others (past job versions, the scheduler's configuration) are not streamed. */
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
 * Each topic's payload object, from a row as the store's events carry it
 * (its public view). Job's and Service's are Nomad's shapes; the others are
 * Berth's rows as stored until their route family's converter to Nomad's
 * shape is wired in here (Allocation: the allocations family's, Evaluation
 * and Deployment: the deployments family's, Node: the nodes family's,
 * CSIVolume and CSIPlugin: the CSI family's, claim, volume-condition and
 * drift: the CSI family's Berth shapes), with its schema in src/api's
 * EVENT_PAYLOADS. This map is the one place that wiring happens.
 */
export const EVENT_PAYLOAD_OBJECTS: { [T in StreamedTable]: (row: TableRow<T>) => unknown } = {
  // A job's stability lives with its versions; an event carries the job alone (Stable false).
  jobs: (job) => jobToNomad(job as Job),
  allocations: (alloc) => alloc,
  evaluations: (evaluation) => evaluation,
  deployments: (deployment) => deployment,
  nodes: (node) => node,
  services: (service) => registrationShape(service),
  volumes: (volume) => volume,
  plugins: (plugin) => plugin,
  claims: (claim) => claim,
  volumeConditions: (condition) => condition,
  drift: (report) => report,
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

/** One store change as a Nomad event; undefined for a table the stream does not carry. */
export function eventOf(change: StoreEvent): Event | undefined {
  const topic = topicOf(change.topic);
  if (!topic || !change.row) return undefined;
  const table = change.topic as StreamedTable;
  const put = change.op === 'put';
  const described = (DESCRIBE[table] as (row: unknown, put: boolean, index: number) => Described)(change.row, put, change.index);
  const object = (EVENT_PAYLOAD_OBJECTS[table] as (row: unknown) => unknown)(change.row);
  const payload: Record<string, unknown> = { [PAYLOAD_KEY[topic]]: object };
  if (topic === 'Job' && !put) payload['Deleted'] = true;
  return { Topic: topic, ...described, Index: change.index, Payload: payload };
}
