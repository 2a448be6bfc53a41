// Nomad's `service` and `check` blocks (provider "nomad", Nomad 1.3+ native
// service discovery): the schema of a group's or a task's services, and the
// registrations and check results that flow from them. Durations are written
// as strings (`interval = "10s"`) and stored as milliseconds (`intervalMs`),
// so that a stored job sent back is accepted again.

import { z } from 'zod';
import { metaSchema } from './job-blocks.js';
import { lazySchema } from '../api/index.js';

const DURATION = /^(\d+(\.\d+)?(ms|s|m|h))+$/;
const durationText = lazySchema(() => z.string().regex(DURATION, 'must be a duration such as "500ms", "10s" or "1m"'));

function ms(text: string): number {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) total += Number(m[1]) * (units[m[2] as string] as number);
  return Math.round(total);
}

/** A port: a label of the group's network block, or a number (written bare or as a string). */
const portRef = lazySchema(() => z
  .union([z.string().min(1, 'port must name a port label or give a number'), z.number().int().min(1).max(65535)])
  .transform((p) => String(p))
  .refine((p) => !/^\d+$/.test(p) || (Number(p) >= 1 && Number(p) <= 65535), 'a numeric port must be 1-65535'));

export const CHECK_TYPES = ['http', 'tcp', 'script', 'grpc'] as const;
export const ADDRESS_MODES = ['auto', 'host', 'alloc', 'driver'] as const;
export type CheckStatus = 'pending' | 'passing' | 'warning' | 'critical';

const checkRestartSchema = lazySchema(() => z
  .strictObject({
    /** Restart the task after this many consecutive unhealthy results (0: never). */
    limit: z.number().int().min(0).default(0),
    grace: durationText.optional(),
    graceMs: z.number().int().min(0).optional(),
    /** A warning counts as healthy for the limit. */
    ignoreWarnings: z.boolean().default(false),
  })
  .transform(({ grace, graceMs, ...r }) => ({ ...r, graceMs: grace !== undefined ? ms(grace) : (graceMs ?? 1000) })));
export type CheckRestart = z.output<typeof checkRestartSchema>;

const checkSchema = lazySchema(() => z
  .strictObject({
    name: z.string().min(1).optional(),
    type: z.enum(CHECK_TYPES),
    /** http: the request path (and query). */
    path: z.string().optional(),
    method: z.string().regex(/^[A-Z]+$/, 'method must be an HTTP method such as "GET" or "HEAD"').optional(),
    header: z.record(z.string(), z.array(z.string())).optional(),
    /** http: the statuses that pass; absent: Nomad's rule (2xx passing, 429 warning, anything else critical). */
    expectedStatus: z.array(z.number().int().min(100).max(599)).optional(),
    protocol: z.enum(['http']).optional(),
    interval: durationText.optional(),
    intervalMs: z.number().int().optional(),
    timeout: durationText.optional(),
    timeoutMs: z.number().int().optional(),
    initialStatus: z.enum(['passing', 'warning', 'critical']).optional(),
    successBeforePassing: z.number().int().min(0).default(0),
    failuresBeforeCritical: z.number().int().min(0).default(0),
    checkRestart: checkRestartSchema.optional(),
    /** The port checked, when not the service's. */
    port: portRef.optional(),
    addressMode: z.enum(ADDRESS_MODES).optional(),
    command: z.string().optional(),
    args: z.array(z.string()).optional(),
    task: z.string().optional(),
  })
  .transform(({ interval, timeout, ...c }) => ({
    ...c,
    intervalMs: interval !== undefined ? ms(interval) : (c.intervalMs ?? 0),
    timeoutMs: timeout !== undefined ? ms(timeout) : (c.timeoutMs ?? 0),
  }))
  .superRefine((c, ctx) => {
    if (c.type === 'script' || c.type === 'grpc') {
      ctx.addIssue({
        code: 'custom',
        path: ['type'],
        message: `a check of type "${c.type}" needs Consul; a service with provider "nomad" (Berth's) takes "http" and "tcp" checks`,
      });
    }
    if (c.type === 'http' && !c.path) ctx.addIssue({ code: 'custom', path: ['path'], message: 'an http check needs a path, e.g. path = "/health"' });
    if (c.intervalMs < 1000) ctx.addIssue({ code: 'custom', path: ['interval'], message: 'interval must be at least "1s"' });
    if (c.timeoutMs <= 0) ctx.addIssue({ code: 'custom', path: ['timeout'], message: 'timeout must be set, e.g. timeout = "2s"' });
    else if (c.intervalMs >= 1000 && c.timeoutMs > c.intervalMs) ctx.addIssue({ code: 'custom', path: ['timeout'], message: 'timeout must not be longer than interval' });
  }));
export type CheckSpec = z.output<typeof checkSchema>;

/** A service name as Nomad takes it: letters, digits and dashes (RFC 1123), or with `${...}` the client fills in. */
const SERVICE_NAME = /^(?:[A-Za-z0-9-]|\$\{[A-Za-z0-9_.]+\})+$/;

export const serviceSchema = lazySchema(() => z
  .strictObject({
    /** Default: `<job>-<group>` for a group's service, `<job>-<group>-<task>` for a task's. */
    name: z.string().regex(SERVICE_NAME, 'service name must be letters, digits and dashes (it may use ${NOMAD_JOB_NAME} and the like)').optional(),
    port: portRef.optional(),
    tags: z.array(z.string()).default([]),
    meta: metaSchema.default({}),
    addressMode: z.enum(ADDRESS_MODES).default('auto'),
    address: z.string().min(1).optional(),
    provider: z
      .string()
      .default('nomad')
      .refine((p) => p === 'nomad', { message: 'Berth has no Consul: provider must be "nomad" (the default), Nomad\'s native service discovery' })
      .transform(() => 'nomad' as const),
    checks: z.array(checkSchema).default([]),
    /** A group service: the task whose life it follows (Nomad's service `task`). */
    taskName: z.string().optional(),
    /** Applies to every check of the service that has none of its own. */
    checkRestart: checkRestartSchema.optional(),
  })
  .transform(({ checkRestart, ...s }) => ({
    ...s,
    checks: s.checks.map((c) => (c.checkRestart || !checkRestart ? c : { ...c, checkRestart })),
  }))
  .superRefine((s, ctx) => {
    if (s.address !== undefined && s.addressMode !== 'auto') ctx.addIssue({ code: 'custom', path: ['address'], message: 'address may only be set with address_mode "auto"' });
    const names = new Set<string>();
    s.checks.forEach((c, i) => {
      const n = checkName(s.name ?? '', c, i);
      if (names.has(n)) ctx.addIssue({ code: 'custom', path: ['checks', i, 'name'], message: `duplicate check name "${n}"` });
      names.add(n);
      if (!c.port && !s.port) ctx.addIssue({ code: 'custom', path: ['checks', i, 'port'], message: 'the check needs a port: set port on the service or on the check' });
    });
  }));
export type ServiceSpec = z.output<typeof serviceSchema>;

/**
 * Nomad's name for a service that gives none: `<job>-<group>` for a group's,
 * `<job>-<group>-<task>` for a task's (`job` is the job's name, its ID
 * unless set), with what a service name may not hold made `-`. Pure.
 */
export function defaultServiceName(job: string, group: string, task: string | undefined): string {
  return [job, group, ...(task ? [task] : [])].join('-').replace(/[^A-Za-z0-9-]/g, '-');
}

/** A check's name: its own, else Nomad's `service: "<name>" check` (numbered after the first). */
export function checkName(service: string, c: { name?: string | undefined }, index: number): string {
  return c.name ?? `service: "${service}" check${index ? ` ${index + 1}` : ''}`;
}

/**
 * A service as the state store keeps it (Nomad's ServiceRegistration): one
 * per service per allocation, written while the allocation runs and removed
 * when it stops, is collected or its node goes down.
 */
export interface ServiceRegistration {
  id: string;
  serviceName: string;
  namespace: string;
  nodeId: string;
  datacenter: string;
  jobId: string;
  allocId: string;
  tags: string[];
  meta: Record<string, string>;
  address: string;
  port: number;
  createIndex: number;
  modifyIndex: number;
}

/** What a client reports of one registration (the server adds namespace, job, node and indexes). */
export type ServiceReport = Pick<ServiceRegistration, 'id' | 'serviceName' | 'tags' | 'meta' | 'address' | 'port'>;

/** One check's latest result on an allocation (Allocation.checks, keyed by check ID). */
export interface CheckResult {
  service: string;
  name: string;
  task?: string;
  status: CheckStatus;
  output: string;
  at: number;
}

/**
 * Whether a registration counts as healthy: none of its allocation's checks
 * of that service is critical or still pending (a warning still serves, as
 * Consul's DNS has it). A service without checks is healthy while registered.
 */
export function registrationHealthy(reg: Pick<ServiceRegistration, 'serviceName'>, checks: Readonly<Record<string, CheckResult>> | undefined): boolean {
  for (const c of Object.values(checks ?? {})) {
    if (c.service === reg.serviceName && (c.status === 'critical' || c.status === 'pending')) return false;
  }
  return true;
}

/** The ID of a registration, as Nomad builds it: `_nomad-task-<alloc>-<group or task>-<service>-<port>`. */
export function registrationId(allocId: string, owner: string, serviceName: string, port: string | undefined): string {
  return `_nomad-task-${allocId}-${owner}-${serviceName}-${port ?? ''}`;
}
