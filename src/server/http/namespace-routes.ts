// Nomad's namespace endpoints (command/agent/namespace_endpoint.go):
//   GET      /v1/namespaces        (read)  every namespace, sorted by name: `prefix`, blocking queries on the namespaces table
//   GET      /v1/namespace/:name   (read)  one namespace, or 404 `Namespace not found`
//   PUT/POST /v1/namespace/:name   (write) create or update it from the body (api.Namespace, whose Name must be the path's); an empty answer with X-Nomad-Index
//   PUT/POST /v1/namespace         (write) create or update the namespace the body names (api.Namespace); an empty answer with X-Nomad-Index
//   DELETE   /v1/namespace/:name   (write) delete it; refused while it holds jobs that are not dead, running allocations or volumes, and for default
// Namespace changes are not on the event stream: Nomad has no topic for them.

import type { FastifyInstance, FastifyReply } from 'fastify';
import { NamespaceWriteRequest, type Namespace } from '../../api/index.js';
import type { Namespace as NamespaceRow } from '../../structs/index.js';
import { NamespaceService, namespaceIn, namespacesIn, type NamespaceInput } from '../namespaces/index.js';
import { ApiError } from './api-error.js';
import { listPage, nomadRead, setIndexHeaders } from './nomad-read.js';
import { objectBody, type RouteContext } from './route-context.js';

const TABLES = ['namespaces'] as const;

/** A stored namespace in Nomad's shape. */
export function namespaceOut(n: NamespaceRow): Namespace {
  return {
    Name: n.name,
    Description: n.description,
    Quota: '',
    Capabilities: null,
    NodePoolConfiguration: null,
    VaultConfiguration: null,
    ConsulConfiguration: null,
    Meta: Object.keys(n.meta).length ? { ...n.meta } : null,
    CreateIndex: n.createIndex,
    ModifyIndex: n.modifyIndex,
  };
}

/**
 * A create or update request in the service's words. The path's name, when
 * there is one, must be the body's (Nomad's check). Throws ApiError INVALID
 * for a malformed body or an Enterprise block Berth does not keep.
 */
export function namespaceInput(body: unknown, pathName: string | undefined): NamespaceInput {
  const parsed = NamespaceWriteRequest.safeParse(objectBody(body));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.join('.') ?? '';
    throw new ApiError('INVALID', `${field ? `${field}: ` : ''}${issue?.message ?? 'invalid'}`, { field });
  }
  const ns = parsed.data;
  if (pathName !== undefined && ns.Name !== pathName) throw new ApiError('INVALID', 'Namespace name does not match request path', { field: 'Name' });
  for (const block of ['Capabilities', 'NodePoolConfiguration', 'VaultConfiguration', 'ConsulConfiguration'] as const) {
    if (ns[block]) throw new ApiError('INVALID', `${block}: Berth does not keep a namespace's ${block} (a Nomad Enterprise setting); send null`, { field: block });
  }
  return { name: ns.Name ?? '', description: ns.Description ?? '', meta: ns.Meta ?? null, quota: ns.Quota ?? '' };
}

export function registerNamespaceRoutes(app: FastifyInstance, ctx: RouteContext): void {
  const { deps } = ctx;
  const service = deps.namespaces ?? new NamespaceService({ store: deps.store, logger: deps.logger });
  const written = (reply: FastifyReply, index: number): FastifyReply => {
    setIndexHeaders(ctx, reply, index);
    return reply.send();
  };

  app.get('/v1/namespaces', { config: { access: 'read' } }, async (req, reply): Promise<Namespace[]> => {
    const list = await nomadRead(ctx, req, reply, TABLES, (snap, opts) => namespacesIn(snap, opts.prefix).map(namespaceOut));
    return listPage(list, req, reply, (n) => n.Name);
  });

  app.get<{ Params: { name: string } }>('/v1/namespace/:name', { config: { access: 'read' } }, async (req, reply): Promise<Namespace> => {
    const found = await nomadRead(ctx, req, reply, TABLES, (snap) => namespaceIn(snap, req.params.name));
    if (!found) throw new ApiError('NOT_FOUND', 'Namespace not found');
    return namespaceOut(found);
  });

  for (const method of ['PUT', 'POST'] as const) {
    app.route({
      method,
      url: '/v1/namespace',
      config: { access: 'write' },
      handler: async (req, reply) => written(reply, (await service.apply(namespaceInput(req.body, undefined))).index),
    });
    app.route<{ Params: { name: string } }>({
      method,
      url: '/v1/namespace/:name',
      config: { access: 'write' },
      handler: async (req, reply) => written(reply, (await service.apply(namespaceInput(req.body, req.params.name))).index),
    });
  }

  app.delete<{ Params: { name: string } }>('/v1/namespace/:name', { config: { access: 'write' } }, async (req, reply) => {
    return written(reply, (await service.delete(req.params.name)).index);
  });
}
