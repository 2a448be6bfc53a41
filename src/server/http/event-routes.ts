// The event stream: `GET /v1/event/stream?topic=node&topic=volume:v1&index=N`
// as NDJSON, one change per line ({ index, topic, key, op, payload }), from
// the store's change events (already stripped of secrets by the store, and
// again here for jobs). `{}` lines keep an idle stream alive. The stream
// follows the store with blocking reads: no polling. With `until=now` it ends
// instead, once it has delivered every change up to the moment it was asked.

import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { AbortedError, describeError } from '../../lib/index.js';
import { publicJob, type Job } from '../../structs/index.js';
import type { DataTable, StoreEvent } from '../state/index.js';
import { ApiError } from './api-error.js';
import type { RouteContext } from './route-context.js';

/** Topic names users write -> tables. */
export const EVENT_TOPICS: Record<string, DataTable> = {
  node: 'nodes',
  plugin: 'plugins',
  volume: 'volumes',
  claim: 'claims',
  allocation: 'allocations',
  job: 'jobs',
  evaluation: 'evaluations',
  'volume-condition': 'volumeConditions',
  drift: 'drift',
  service: 'services',
};
const TOPIC_OF: Record<string, string> = Object.fromEntries(Object.entries(EVENT_TOPICS).map(([k, v]) => [v, k]));

interface TopicFilter {
  table: DataTable;
  /** Only events whose key has this as one of its parts (an object ID). */
  id?: string;
}

/** Parses `topic` query values (`node`, `volume:v1`, `*`). Throws ApiError INVALID for unknown topics. */
export function parseTopics(raw: unknown): TopicFilter[] {
  const values = (Array.isArray(raw) ? raw : raw === undefined ? ['*'] : [raw]).map(String);
  const out: TopicFilter[] = [];
  for (const v of values) {
    const [name, ...rest] = v.split(':');
    const id = rest.join(':');
    if (name === '*') {
      for (const table of Object.values(EVENT_TOPICS)) out.push(id ? { table, id } : { table });
      continue;
    }
    const table = EVENT_TOPICS[name ?? ''];
    if (!table) throw new ApiError('INVALID', `unknown topic "${name}"; expected one of ${Object.keys(EVENT_TOPICS).join(', ')}`, { field: 'topic' });
    out.push(id && id !== '*' ? { table, id } : { table });
  }
  return out;
}

function matches(filters: readonly TopicFilter[], ev: StoreEvent): boolean {
  return filters.some((f) => f.table === ev.topic && (!f.id || ev.key.split('/').map(decodeURIComponent).includes(f.id)));
}

function line(ev: StoreEvent): string {
  const payload = ev.topic === 'jobs' && ev.row ? publicJob(ev.row as Job) : ev.row;
  // Services carry Nomad's event types too, so that a consumer written for Nomad's stream finds them.
  const type = ev.topic === 'services' ? { type: ev.op === 'put' ? 'ServiceRegistration' : 'ServiceDeregistration' } : {};
  return JSON.stringify({ index: ev.index, topic: TOPIC_OF[ev.topic], key: ev.key, op: ev.op, ...type, payload }) + '\n';
}

export function registerEventRoutes(app: FastifyInstance, { deps, signalOf }: RouteContext): void {
  const { store } = deps;
  const heartbeatMs = deps.eventHeartbeatMs ?? 10_000;
  const log = deps.logger.child({ component: 'event-stream' });

  app.get<{ Querystring: Record<string, unknown> }>('/v1/event/stream', { config: { access: 'read' } }, async (req, reply) => {
    const filters = parseTopics(req.query['topic']);
    const tables = [...new Set(filters.map((f) => f.table))];
    const rawIndex = req.query['index'];
    let after = rawIndex === undefined || rawIndex === '' ? store.latestIndex() : Number(rawIndex);
    if (!Number.isSafeInteger(after) || after < 0) throw new ApiError('INVALID', 'index must be a non-negative integer', { field: 'index' });
    const until = req.query['until'];
    if (until !== undefined && until !== 'now') throw new ApiError('INVALID', 'until must be "now"', { field: 'until' });
    const signal = signalOf(req, reply);
    const out = new PassThrough();
    const pump = async (): Promise<void> => {
      let first = true;
      try {
        for (;;) {
          const snap = store.snapshot();
          const events = snap.events(after, { topics: tables, limit: 1000 });
          let chunk = '';
          for (const ev of events) if (matches(filters, ev)) chunk += line(ev);
          // A followed stream with nothing to send yet starts with a heartbeat, so the
          // response (its headers) reaches the client now rather than at the first change.
          if (first && !chunk && until !== 'now') chunk = '{}\n';
          first = false;
          if (events.length) after = events[events.length - 1]!.index;
          else after = Math.max(after, ...tables.map((t) => snap.tableIndex(t)));
          if (chunk && !out.write(chunk)) await new Promise((r) => out.once('drain', r));
          if (events.length >= 1000) continue;
          // Every change up to this snapshot (taken after the request came) is out.
          if (until === 'now') break;
          const next = await store.blockUntil(tables, after, { signal, timeoutMs: heartbeatMs });
          if (next <= after) out.write('{}\n');
        }
      } catch (err) {
        if (!(err instanceof AbortedError) && !signal.aborted) log.warn({ err: describeError(err) }, 'event stream ended');
      } finally {
        out.end();
      }
    };
    void pump();
    reply.header('Content-Type', 'application/x-ndjson').header('Cache-Control', 'no-cache').header('X-Berth-Index', String(after));
    return reply.send(out);
  });
}
