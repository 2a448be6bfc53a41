// `berth service list|info|delete` and `berth alloc checks`: Nomad's native
// service discovery as its users read it, a table for people, JSON for scripts.

import type { Command } from 'commander';
import { Command as Cmd } from 'commander';
import type * as api from '../api/index.js';
import type { ServiceRegistration, ServiceRegistrationListStub } from '../api/index.js';
import { KINDS } from './api-client.js';
import { age, apiAction, apiCommand, shortId, type ApiSession } from './api-command.js';
import type { CommandContext } from './csi-command.js';

/** Builds `berth service`. */
export function serviceCommand(ctx: CommandContext): Command {
  const service = new Cmd('service').description("List, inspect and delete service registrations (Nomad's native service discovery)");
  apiCommand(
    service
      .command('list')
      .description('List the services that have healthy instances, with their tags, per namespace')
      .option('--include-unhealthy', 'also services whose instances all fail their checks'),
    ['service list', 'service list --include-unhealthy', 'service list -n "*" --json'],
  ).action(apiAction(ctx, serviceList));
  apiCommand(
    service
      .command('info')
      .description("Show a service's instances: address, port, allocation, node, tags")
      .argument('<name>', 'service name')
      .option('--tag <tag>', 'only instances with this tag (repeatable)', (v: string, prev: string[] | undefined) => [...(prev ?? []), v])
      .option('--include-unhealthy', 'also instances whose checks are critical or pending'),
    ['service info web', 'service info web --tag v2', 'service info web --include-unhealthy --json'],
  ).action(apiAction(ctx, serviceInfo));
  apiCommand(
    service
      .command('delete')
      .description("Delete one registration (its allocation's node registers it again at its next status report while it runs)")
      .argument('<name>', 'service name')
      .argument('<id>', 'registration ID (see service info)'),
    ['service delete web _nomad-task-3f2a...-web-web-http'],
  ).action(apiAction(ctx, serviceDelete));
  return service;
}

async function serviceList(s: ApiSession, _args: string[], opts: Record<string, unknown>): Promise<void> {
  const { body } = await s.api.get<ServiceRegistrationListStub[]>('/v1/services', { namespace: s.namespace, ...(opts['includeUnhealthy'] ? { include_unhealthy: 'true' } : {}) });
  if (s.out.json) return s.out.document(body);
  s.out.table(
    ['Service Name', 'Namespace', 'Tags'],
    body.flatMap((ns) => ns.Services.map((x) => [x.ServiceName, ns.Namespace, x.Tags.length ? `[${x.Tags.join(',')}]` : ''])),
  );
}

async function serviceInfo(s: ApiSession, [name]: string[], opts: Record<string, unknown>): Promise<void> {
  const tags = (opts['tag'] as string[] | undefined) ?? [];
  const { body } = await s.api.get<ServiceRegistration[]>(`/v1/service/${encodeURIComponent(name as string)}`, {
    namespace: s.namespace,
    ...(tags.length ? { tag: tags } : {}),
    ...(opts['includeUnhealthy'] ? { include_unhealthy: 'true' } : {}),
  });
  if (s.out.json) return s.out.document(body);
  s.out.table(
    ['Job ID', 'Address', 'Tags', 'Node ID', 'Alloc ID'],
    body.map((r) => [r.JobID, `${r.Address.includes(':') ? `[${r.Address}]` : r.Address}:${r.Port}`, r.Tags.length ? `[${r.Tags.join(',')}]` : '', shortId(r.NodeID), shortId(r.AllocID)]),
  );
  if (body.length) s.out.line(`Registration IDs: ${body.map((r) => r.ID).join(', ')}`);
}

async function serviceDelete(s: ApiSession, [name, id]: string[]): Promise<void> {
  const { index } = await s.api.request<undefined>('DELETE', `/v1/service/${encodeURIComponent(name as string)}/${encodeURIComponent(id as string)}`, {
    query: { namespace: s.namespace },
  });
  if (s.out.json) return s.out.document({ Index: index });
  s.out.line(`Deleted registration ${id} of service "${name}"`);
}

/** Adds `checks` to `berth alloc`. */
export function addAllocChecks(alloc: Command, ctx: CommandContext): void {
  apiCommand(
    alloc.command('checks').description("Show the latest result of each of an allocation's service checks").argument('<id>', 'allocation ID or a unique prefix'),
    ['alloc checks 3f2a9c1b', 'alloc checks 3f2a --json'],
  ).action(
    apiAction(ctx, async (s, [idArg]) => {
      const id = await s.api.resolve(KINDS.allocation, idArg as string, { namespace: '*' });
      const { body } = await s.api.get<api.AllocCheckStatuses>(`/v1/allocation/${encodeURIComponent(id)}/checks`);
      if (s.out.json) return s.out.document(body);
      printChecks(s, body);
    }),
  );
}

/** The checks table (`alloc checks`, and the section of `alloc status`): Nomad's statuses (success, failure, pending; Berth's warning). */
export function printChecks(s: ApiSession, checks: api.AllocCheckStatuses | undefined): void {
  const rows = Object.values(checks ?? {}).sort((a, b) => (a.Service + a.Check < b.Service + b.Check ? -1 : 1));
  s.out.table(
    ['Service', 'Check', 'Task', 'Status', 'Output', 'Updated'],
    rows.map((c) => [c.Service, c.Check, c.Task, s.style.status(c.Status), c.Output, c.Timestamp ? age(c.Timestamp * 1000) : '']),
  );
}
