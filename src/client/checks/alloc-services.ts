// An allocation's services as its node resolves them: names interpolated
// (`${NOMAD_JOB_NAME}`...), ports looked up among the allocation's ports by
// label (or taken as written when numeric), addresses by address_mode; and
// the checks to run against them. A group's services count while any of its
// main tasks runs, a task's while that task runs.

import { checkName, defaultServiceName, registrationId, type Allocation, type Job, type ServiceReport, type ServiceSpec } from '../../structs/index.js';
import type { CheckTarget } from './check-runner.js';

export interface AllocServicesInput {
  alloc: Allocation;
  job: Job;
  /** The node's address, for host-mode services on numeric ports. */
  nodeAddress: string;
  /** Tasks that run now. */
  runningTasks: ReadonlySet<string>;
  /** Expands `${...}` in a service name for a task (undefined: the group); taskenv does it. */
  interpolate(text: string, task: string | undefined): string;
}

export interface AllocServices {
  reports: ServiceReport[];
  checks: CheckTarget[];
  /** Services that could not be resolved, and why (a port label the allocation lacks). */
  problems: string[];
}

/** The allocation's ports as net-ports's scheduler sets them (absent before it places ports). */
type AllocPort = { label: string; value: number; to: number; hostIp: string };

function portsOf(alloc: Allocation): AllocPort[] {
  const ports = (alloc as { ports?: unknown }).ports;
  return Array.isArray(ports) ? (ports as AllocPort[]) : [];
}

function allocAddress(alloc: Allocation): string | undefined {
  return (alloc as { network?: { address?: string } }).network?.address;
}

/**
 * Resolves where a service (or a check's own port) is reachable. `alloc` and
 * `driver` modes use the port inside the allocation's network and its
 * address; `auto` and `host` the host port and the node's (or the port's) IP.
 */
export function resolveEndpoint(
  alloc: Allocation,
  port: string | undefined,
  mode: ServiceSpec['addressMode'],
  nodeAddress: string,
): { address: string; port: number } | { problem: string } {
  const inside = mode === 'alloc' || mode === 'driver';
  const base = inside ? (allocAddress(alloc) ?? nodeAddress) : nodeAddress;
  if (port === undefined) return { address: base, port: 0 };
  if (/^\d+$/.test(port)) return { address: base, port: Number(port) };
  const p = portsOf(alloc).find((x) => x.label === port);
  if (!p) return { problem: `port label "${port}" is not among the allocation's ports` };
  if (inside) return { address: base, port: p.to || p.value };
  return { address: p.hostIp && p.hostIp !== '0.0.0.0' ? p.hostIp : nodeAddress, port: p.value };
}

/** Resolves every service of the allocation that counts now. Pure. */
export function allocServices(input: AllocServicesInput): AllocServices {
  const { alloc, job } = input;
  const group = job.groups.find((g) => g.name === alloc.taskGroup);
  const out: AllocServices = { reports: [], checks: [], problems: [] };
  if (!group) return out;
  const mainTasks = group.tasks.filter((t) => !t.lifecycle).map((t) => t.name);
  const owners: Array<{ services: readonly ServiceSpec[]; task: string | undefined }> = [
    { services: group.services ?? [], task: undefined },
    ...group.tasks.map((t) => ({ services: t.services ?? [], task: t.name })),
  ];
  for (const { services, task } of owners) {
    for (const svc of services) {
      const follows = task ?? svc.taskName;
      const runs = follows ? input.runningTasks.has(follows) : mainTasks.some((t) => input.runningTasks.has(t));
      if (!runs) continue;
      const name = input.interpolate(svc.name ?? defaultServiceName(job.name ?? job.id, group.name, task), task);
      const at = resolveEndpoint(alloc, svc.port, svc.addressMode, input.nodeAddress);
      if ('problem' in at) {
        out.problems.push(`service "${name}": ${at.problem}`);
        continue;
      }
      const address = svc.address ? input.interpolate(svc.address, task) : at.address;
      const id = registrationId(alloc.id, task ?? group.name, name, svc.port);
      out.reports.push({ id, serviceName: name, tags: svc.tags.map((t) => input.interpolate(t, task)), meta: { ...svc.meta }, address, port: at.port });
      svc.checks.forEach((check, i) => {
        const target = check.port ? resolveEndpoint(alloc, check.port, check.addressMode ?? svc.addressMode, input.nodeAddress) : { address, port: at.port };
        const cname = checkName(name, check, i);
        if ('problem' in target) {
          out.problems.push(`check "${cname}": ${target.problem}`);
          return;
        }
        const restartTask = task ?? svc.taskName ?? check.task ?? (mainTasks.length === 1 ? mainTasks[0] : undefined);
        out.checks.push({
          id: `${id}/${cname}`,
          service: name,
          name: cname,
          ...(task ? { task } : {}),
          ...(check.checkRestart && restartTask ? { restartTask } : {}),
          check,
          address: target.address,
          port: target.port,
        });
      });
    }
  }
  return out;
}
