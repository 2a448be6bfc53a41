// Nomad's native service discovery over HTTP: `GET /v1/services` (the
// service names per namespace), `GET /v1/service/:name` (its instances;
// `tag`, `choose`, `include_unhealthy` and Nomad's `filter`), `DELETE
// /v1/service/:name/:id`, as Nomad answers them (src/api/services.ts), with
// blocking queries. Nodes read them too (templates' nomadService).
//
// Berth's reads leave out instances whose checks are critical or pending
// unless `include_unhealthy` is set (Nomad returns every registration).

import type { FastifyInstance } from 'fastify';
import type { ServiceRegistration } from '../../api/index.js';
import { listServices, serviceInstances } from '../services/index.js';
import { rowKey, type TableName } from '../state/index.js';
import { ApiError } from './api-error.js';
import { listPage, nomadRead, queryOptions, setIndexHeaders } from './nomad-read.js';
import type { RouteContext } from './route-context.js';
import { registrationShape, serviceListShape } from './service-shapes.js';

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

export function registerServiceRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps, signalOf } = ctx;
  const { store } = deps;

  app.get<{ Querystring: Query }>('/v1/services', { config: { access: 'node-read' } }, async (req, reply) => {
    const includeUnhealthy = flag(req.query['include_unhealthy']);
    const list = await nomadRead(ctx, req, reply, TABLES, (snap, opts) => serviceListShape(listServices(snap, opts.namespace, { includeUnhealthy })));
    return listPage(list, req, reply, (s) => s.Namespace);
  });

  app.get<{ Params: { name: string }; Querystring: Query }>('/v1/service/:name', { config: { access: 'node-read' } }, async (req, reply) => {
    const opts = queryOptions(req.query);
    const ns = opts.namespace;
    const rawTags = req.query['tag'];
    const tags = rawTags === undefined ? [] : Array.isArray(rawTags) ? rawTags : [rawTags];
    const choose = chooseOf(req.query['choose']);
    const includeUnhealthy = flag(req.query['include_unhealthy']);
    const query = { tags, includeUnhealthy, ...(choose ? { choose } : {}) };
    const signal = signalOf(req, reply);
    // The index of this answer: the services table's (any registration or removal) or a later change of one
    // of the instances' allocations (their checks). Other allocations' changes do not wake the reader.
    const read = (): { index: number; result: ServiceRegistration[] } => {
      const snap = store.snapshot();
      const all = serviceInstances(snap, ns, req.params.name, { tags, includeUnhealthy: true });
      let index = Math.max(1, snap.tableIndex('services'));
      for (const r of all) index = Math.max(index, snap.get('allocations', rowKey(r.allocId))?.modifyIndex ?? 0);
      return { index, result: serviceInstances(snap, ns, req.params.name, query).map(registrationShape) };
    };
    let answer = read();
    if (opts.index !== undefined) {
      const deadline = Date.now() + opts.waitMs;
      let seen = Math.max(opts.index, store.latestIndex());
      while (answer.index <= opts.index && Date.now() < deadline) {
        seen = await store.blockUntil(TABLES, seen, { signal, timeoutMs: deadline - Date.now() });
        answer = read();
      }
    }
    setIndexHeaders(ctx, reply, answer.index);
    return listPage(answer.result, req, reply);
  });

  // Nomad answers a deletion with no body; the index is in X-Nomad-Index.
  app.delete<{ Params: { name: string; id: string }; Querystring: Query }>('/v1/service/:name/:id', { config: { access: 'write' } }, async (req, reply) => {
    const ns = queryOptions(req.query).namespace;
    const { index, result } = await store.write((txn) => txn.delete('services', rowKey(ns, req.params.name, req.params.id)));
    if (!result) throw new ApiError('NOT_FOUND', `service "${req.params.name}" has no registration "${req.params.id}" in namespace "${ns}"`);
    setIndexHeaders(ctx, reply, index);
    return reply.send();
  });
}
