// Nomad's native service discovery over HTTP: `GET /v1/services`,
// `GET /v1/service/:name` (blocking queries, `tag`, `choose`,
// `include_unhealthy`), `DELETE /v1/service/:name/:id`. Nodes read them too
// (templates' nomadService).

import type { FastifyInstance } from 'fastify';
import type { ServiceRegistration } from '../../structs/index.js';
import { listServices, serviceInstances } from '../services/index.js';
import { rowKey, type TableName } from '../state/index.js';
import { ApiError } from './api-error.js';
import { blockingRead, parseBlockingQuery } from './blocking.js';
import { namespaceOf, type RouteContext } from './route-context.js';

type Query = Record<string, string | string[] | undefined>;

/** Health is read from the allocations' checks: both tables wake a blocking reader. */
const TABLES: readonly TableName[] = ['services', 'allocations'];

const flag = (v: unknown): boolean => v === '' || v === 'true' || v === '1';

function chooseOf(raw: unknown): { count: number; key: string } | undefined {
  if (raw === undefined || raw === '') return undefined;
  const m = /^(\d+)\|(.+)$/.exec(String(raw));
  if (!m || Number(m[1]) < 1) throw new ApiError('INVALID', 'choose must be "<count>|<key>", e.g. "2|my-alloc-id"', { field: 'choose' });
  return { count: Number(m[1]), key: m[2] as string };
}

export function registerServiceRoutes(app: FastifyInstance, { deps, signalOf }: RouteContext): void {
  const { store } = deps;

  app.get<{ Querystring: Query }>('/v1/services', { config: { access: 'node-read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const includeUnhealthy = flag(req.query['include_unhealthy']);
    const { index, result } = await blockingRead(store, TABLES, parseBlockingQuery(req.query), signalOf(req, reply), (snap) => listServices(snap, ns, { includeUnhealthy }));
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  app.get<{ Params: { name: string }; Querystring: Query }>('/v1/service/:name', { config: { access: 'node-read' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const rawTags = req.query['tag'];
    const tags = rawTags === undefined ? [] : Array.isArray(rawTags) ? rawTags : [rawTags];
    const choose = chooseOf(req.query['choose']);
    const includeUnhealthy = flag(req.query['include_unhealthy']);
    const query = { tags, includeUnhealthy, ...(choose ? { choose } : {}) };
    const block = parseBlockingQuery(req.query);
    const signal = signalOf(req, reply);
    // The index of this answer: the services table's (any registration or removal) or a later change of one
    // of the instances' allocations (their checks). Other allocations' changes do not wake the reader.
    const read = (): { index: number; result: ServiceRegistration[] } => {
      const snap = store.snapshot();
      const all = serviceInstances(snap, ns, req.params.name, { tags, includeUnhealthy: true });
      let index = Math.max(1, snap.tableIndex('services'));
      for (const r of all) index = Math.max(index, snap.get('allocations', rowKey(r.allocId))?.modifyIndex ?? 0);
      return { index, result: serviceInstances(snap, ns, req.params.name, query) };
    };
    let answer = read();
    if (block.index !== undefined) {
      const deadline = Date.now() + block.waitMs;
      let seen = Math.max(block.index, store.latestIndex());
      while (answer.index <= block.index && Date.now() < deadline) {
        seen = await store.blockUntil(TABLES, seen, { signal, timeoutMs: deadline - Date.now() });
        answer = read();
      }
    }
    const { index, result } = answer;
    reply.header('X-Berth-Index', String(index));
    return result;
  });

  app.delete<{ Params: { name: string; id: string }; Querystring: Query }>('/v1/service/:name/:id', { config: { access: 'write' } }, async (req, reply) => {
    const ns = namespaceOf(req.query);
    const { index, result } = await store.write((txn) => txn.delete('services', rowKey(ns, req.params.name, req.params.id)));
    if (!result) throw new ApiError('NOT_FOUND', `service "${req.params.name}" has no registration "${req.params.id}" in namespace "${ns}"`);
    reply.header('X-Berth-Index', String(index));
    return { index };
  });
}
