// The event stream as Nomad serves it: `GET /v1/event/stream?topic=Job:web&
// topic=Allocation&index=N&namespace=ns` answers newline-delimited JSON, one
// `{"Index":N,"Events":[...]}` frame per store index (the changes of one
// write that pass the filters, in Nomad's shapes: event-shapes.ts), and a
// `{}` heartbeat when it opens and whenever it was idle for the heartbeat
// interval. The stream follows the store with blocking reads: no polling.
//
// `index`: as Nomad, the first frame is the one at `index` or the next kept
// (0: the oldest change the store keeps, its whole event history). Without
// `index` the stream starts at the present (Berth's; Nomad's clients always
// send one). `until=now` (Berth's) ends the stream instead of following,
// once every change up to the moment it was asked is out: `index=0&until=now`
// reads the history.

import { PassThrough } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { EventTopic, type Event, type Events } from '../../api/index.js';
import { AbortedError, describeError } from '../../lib/index.js';
import type { DataTable, StateReader, StoreEvent } from '../state/index.js';
import { ApiError } from './api-error.js';
import { eventOf, PayloadContext, TOPIC_TABLES, type StreamedTopic } from './event-shapes.js';
import { queryOptions, setIndexHeaders } from './nomad-read.js';
import type { RouteContext } from './route-context.js';

/** What a request asks for: topic -> keys (`*`: every key), Nomad's `map[Topic][]string`. */
export type TopicFilter = Map<string, string[]>;

/**
 * Parses `topic` query values as Nomad does (`Job`, `Job:web`, `*`, `*:*`;
 * none: every topic). Throws ApiError INVALID for a topic Nomad and Berth
 * do not know.
 */
export function parseTopics(raw: unknown): TopicFilter {
  const values = raw === undefined ? ['*:*'] : (Array.isArray(raw) ? raw : [raw]).map(String);
  const filter: TopicFilter = new Map();
  for (const v of values) {
    const at = v.indexOf(':');
    const topic = at < 0 ? v : v.slice(0, at);
    const key = at < 0 || v.slice(at + 1) === '' ? '*' : v.slice(at + 1);
    if (topic !== '*' && !EventTopic.safeParse(topic).success) {
      throw new ApiError('INVALID', `Invalid topic query: unknown topic "${topic}"; expected one of *, ${EventTopic.options.join(', ')}`, { field: 'topic' });
    }
    filter.set(topic, [...(filter.get(topic) ?? []), key]);
  }
  return filter;
}

/** The tables a filter's topics read (every streamed table for `*`). */
export function tablesOf(filter: TopicFilter): DataTable[] {
  const topics = filter.has('*') ? Object.keys(TOPIC_TABLES) : [...filter.keys()];
  return [...new Set(topics.map((t) => TOPIC_TABLES[t as StreamedTopic]).filter((t): t is (typeof TOPIC_TABLES)[StreamedTopic] => t !== undefined))];
}

/** Whether an event passes the filter and the namespace (`*`: all; events outside namespaces always pass), as Nomad's subscription filters. */
export function matches(filter: TopicFilter, namespace: string, ev: Omit<Event, 'Payload'>): boolean {
  if (ev.Namespace !== '' && namespace !== '*' && ev.Namespace !== namespace) return false;
  const keys = [...(filter.get('*') ?? []), ...(filter.get(ev.Topic) ?? [])];
  return keys.some((k) => k === '*' || k === ev.Key || (ev.FilterKeys ?? []).includes(k));
}

/** The store's changes after `after`, whole writes only (a frame is never split), at most about `limit` changes unless one write is larger. */
function changesAfter(snap: StateReader, after: number, tables: readonly DataTable[], limit: number): { changes: StoreEvent[]; more: boolean } {
  let changes = snap.events(after, { topics: tables, limit });
  // One write larger than the batch: read it whole.
  for (let l = limit; changes.length === l && changes[0]?.index === changes[changes.length - 1]?.index; ) {
    l *= 2;
    changes = snap.events(after, { topics: tables, limit: l });
  }
  const more = changes.length >= limit;
  if (more) {
    // The last write's changes may go on past the batch: it goes in the next one.
    const last = changes[changes.length - 1]?.index;
    const cut = changes.findIndex((c) => c.index === last);
    if (cut > 0) changes = changes.slice(0, cut);
  }
  return { changes, more };
}

/**
 * The frames of some changes: one per index, holding the events that pass
 * the filters. Payloads are converted with `ctx`'s snapshot, the one taken
 * when the changes are sent: what a payload shows of a row's neighbours (an
 * allocation's job, a volume's claims, a claim's allocation) is as of then.
 */
function framesOf(changes: readonly StoreEvent[], filter: TopicFilter, namespace: string, ctx: PayloadContext): Events[] {
  const frames: Events[] = [];
  for (const change of changes) {
    const ev = eventOf(change, ctx, (head) => matches(filter, namespace, head));
    if (!ev) continue;
    const last = frames[frames.length - 1];
    if (last && last.Index === ev.Index) last.Events.push(ev);
    else frames.push({ Index: ev.Index, Events: [ev] });
  }
  return frames;
}

const BATCH = 1000;

export function registerEventRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps, signalOf } = ctx;
  const { store } = deps;
  const heartbeatMs = deps.eventHeartbeatMs ?? 10_000;
  const log = deps.logger.child({ component: 'event-stream' });

  app.get<{ Querystring: Record<string, unknown> }>('/v1/event/stream', { config: { access: 'read' } }, async (req, reply) => {
    const filter = parseTopics(req.query['topic']);
    const tables = tablesOf(filter);
    const { namespace } = queryOptions({ namespace: req.query['namespace'] });
    const rawIndex = req.query['index'];
    const latest = store.latestIndex();
    let after = latest;
    if (rawIndex !== undefined && rawIndex !== '') {
      const index = Number(rawIndex);
      if (!Number.isSafeInteger(index) || index < 0) throw new ApiError('INVALID', `Unable to parse index: ${String(rawIndex)}`, { field: 'index' });
      after = Math.max(0, index - 1);
    }
    const until = req.query['until'];
    if (until !== undefined && until !== 'now') throw new ApiError('INVALID', 'until must be "now"', { field: 'until' });
    const signal = signalOf(req, reply);
    const out = new PassThrough();

    const pump = async (): Promise<void> => {
      try {
        // Nomad's stream opens with a heartbeat, so that the response reaches the client at once.
        if (until !== 'now') out.write('{}\n');
        for (;;) {
          const snap = store.snapshot();
          const { changes, more } = changesAfter(snap, after, tables, BATCH);
          let chunk = '';
          for (const frame of framesOf(changes, filter, namespace, new PayloadContext(snap, deps.health))) chunk += JSON.stringify(frame) + '\n';
          if (changes.length) after = changes[changes.length - 1]!.index;
          else after = Math.max(after, ...tables.map((t) => snap.tableIndex(t)));
          if (chunk && !out.write(chunk)) await new Promise((r) => out.once('drain', r));
          if (more) continue;
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
    setIndexHeaders(ctx, reply, latest);
    reply.header('Content-Type', 'application/json').header('Cache-Control', 'no-cache');
    return reply.send(out);
  });
}
