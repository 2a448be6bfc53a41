// A task group's `network` block (Nomad's group network): its mode, the
// ports it asks for (static or dynamic, optionally mapped `to` a port inside
// the allocation's network namespace, on a named `host_network`), and DNS.
// The scheduler turns the asked ports into the allocation's `ports`
// (structs/allocation.ts); the client turns those into NOMAD_PORT_* and kin.

import { z } from 'zod';
import { BerthError } from '../lib/index.js';
import { isNetworkMode, type NetworkMode } from './node.js';
import { lazySchema } from '../api/index.js';

/** The highest port number. */
export const MAX_PORT = 65535;

/**
 * A port label: 1-64 letters, digits, `_`, `-` or `.`. It names environment
 * variables (NOMAD_PORT_<label>); as in Nomad, a character a shell does not
 * take in a name becomes `_` there (`http-api` -> NOMAD_PORT_http_api).
 */
export const PORT_LABEL = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/;
const PORT_LABEL_RULE = 'a port label must be 1-64 letters, digits, "_", "-" or ".", starting with a letter, digit or "_"';

const portSchema = lazySchema(() => z.strictObject({
  label: z.string().regex(PORT_LABEL, PORT_LABEL_RULE),
  /** A fixed host port; absent: a dynamic port from the node's range. */
  static: z.number().int().min(1, 'a static port must be between 1 and 65535').max(MAX_PORT, 'a static port must be between 1 and 65535').optional(),
  /** The port inside the allocation's network namespace the host port maps to (bridge/cni); -1: the same as the host port. */
  to: z.number().int().min(-1, 'to must be -1 (the host port) or a port between 1 and 65535').max(MAX_PORT, 'to must be at most 65535').optional(),
  /** A client `host_network` the port is bound on; absent: the node's default network. */
  hostNetwork: z.string().min(1, 'host_network must name a client host_network').optional(),
}));

const dnsSchema = lazySchema(() => z.strictObject({
  servers: z.array(z.string().min(1)).default([]),
  searches: z.array(z.string().min(1)).default([]),
  options: z.array(z.string().min(1)).default([]),
}));

/** A group's network mode: host, none, bridge, or a CNI network of the client's cni_config_dir as `cni/<name>`. */
const networkModeSchema = lazySchema(() => z.custom<NetworkMode>((v) => typeof v === 'string' && isNetworkMode(v), {
  message: 'network mode must be "host", "none", "bridge" or "cni/<name>" (a CNI network in the client\'s cni_config_dir)',
}));

/**
 * The group `network` block. Checks, with Nomad's rules: each label once,
 * each static port once per host network.
 */
export const networkSchema = lazySchema(() => z
  .strictObject({
    mode: networkModeSchema.default('host'),
    ports: z.array(portSchema).default([]),
    dns: dnsSchema.optional(),
  })
  .superRefine((net, ctx) => {
    if (net.mode === 'none' && net.ports.length) {
      ctx.addIssue({ code: 'custom', path: ['ports'], message: 'mode "none" gives the group no network to put ports on; remove the ports or use mode "host"' });
    }
    const labels = new Set<string>();
    const statics = new Map<string, string>();
    net.ports.forEach((p, i) => {
      if (labels.has(p.label)) ctx.addIssue({ code: 'custom', path: ['ports', i, 'label'], message: `port label "${p.label}" is already used in this network` });
      labels.add(p.label);
      if (p.static === undefined) return;
      const key = `${p.hostNetwork ?? 'default'}:${p.static}`;
      const other = statics.get(key);
      if (other !== undefined) ctx.addIssue({ code: 'custom', path: ['ports', i, 'static'], message: `static port ${p.static} is already asked for by port "${other}"` });
      else statics.set(key, p.label);
    });
  }));

/**
 * The task-level `resources { network {} }` (Nomad's deprecated task
 * network), refused by name with the way out.
 */
export const legacyTaskNetwork = (): Record<string, z.ZodType<undefined>> => ({
  network: z
    .unknown()
    .optional()
    .superRefine((v, ctx) => {
      if (v === undefined) return;
      ctx.addIssue({
        code: 'custom',
        message: 'a task\'s resources { network } is Nomad\'s deprecated form, and Berth does not take it: move it to the group, e.g. group "app" { network { port "http" {} } }',
      });
    })
    .transform(() => undefined),
});

/** Nomad's default dynamic port range. */
export const DEFAULT_MIN_DYNAMIC_PORT = 20000;
export const DEFAULT_MAX_DYNAMIC_PORT = 32000;

/**
 * Nomad's port list: "22,80,8500-8600" -> [22, 80, 8500, ..., 8600],
 * sorted, each once. Pure; throws a BerthError INVALID naming the bad part
 * ("8600-8500" is an empty range, "70000" is out of range).
 */
export function parsePortList(text: string): number[] {
  const out = new Set<number>();
  for (const raw of text.split(',')) {
    const part = raw.trim();
    if (!part) continue;
    const m = /^(\d+)(?:\s*-\s*(\d+))?$/.exec(part);
    if (!m) throw new BerthError('INVALID', `"${part}" is not a port or a range of ports such as "8500-8600"`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    if (from < 1 || to > MAX_PORT) throw new BerthError('INVALID', `"${part}": ports are between 1 and ${MAX_PORT}`);
    if (to < from) throw new BerthError('INVALID', `"${part}" is an empty range (its end is before its start)`);
    for (let p = from; p <= to; p++) out.add(p);
  }
  return [...out].sort((a, b) => a - b);
}

/** The environment variable `prefix + label`, with what a shell does not take in a name made `_` (as Nomad cleans it). */
export function portEnvKey(prefix: string, label: string): string {
  return `${prefix}${label.replace(/[^A-Za-z0-9_]/g, '_')}`;
}
