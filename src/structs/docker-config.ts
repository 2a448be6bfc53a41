// The docker driver's two configurations, as Nomad's docker driver reads
// them: a task's `config {}` (checked when a job is submitted, so a mistake
// is named at its line rather than found on a node) and the agent's
// `plugin "docker" { config {} }`. Both are parsed to one normalized shape
// here: HCL writes a block as a list of objects (`auth { ... }` arrives as
// `[{ ... }]`) while JSON job files often write the object itself, and the
// driver should not care which.
//
// Keys Nomad's driver knows but Berth's does not implement are refused by
// name, with what to do instead; unknown keys are refused as unknown.

import { z } from 'zod';
import { lazySchema } from '../api/index.js';

const str = lazySchema(() => z.string({ error: 'must be a string' }));
const bool = lazySchema(() => z.boolean({ error: 'must be a bool' }));
const strings = lazySchema(() => z.array(str, { error: 'must be a list of strings' }));
const nonEmpty = lazySchema(() => str.min(1, { error: 'must not be empty' }));

/** A block written once (`auth { }`): HCL gives a list of one object, JSON the object. */
function block<T extends z.ZodType>(inner: T): z.ZodType<z.output<T> | undefined> {
  const once = z.array(z.unknown()).max(0, { error: 'must be given at most once' }).transform(() => undefined);
  return z.preprocess((v) => (Array.isArray(v) && v.length === 1 ? v[0] : v), z.union([inner, once])) as unknown as z.ZodType<z.output<T> | undefined>;
}

/** A map written as a block or blocks (`labels { a = "b" }`) or an attribute (`labels = { a = "b" }`): merged into one. */
function stringMap(): z.ZodType<Record<string, string>> {
  const value = z.union([z.string(), z.number().transform(String)], { error: 'must be a string' });
  return z.preprocess((v) => (Array.isArray(v) && v.every((e) => e && typeof e === 'object' && !Array.isArray(e)) ? Object.assign({}, ...v) : v), z.record(z.string(), value, { error: 'must be a map of strings' })) as unknown as z.ZodType<Record<string, string>>;
}

/** A list of blocks (`mount { }` repeated); a single object is one block. */
function blockList<T extends z.ZodType>(inner: T): z.ZodType<Array<z.output<T>>> {
  return z.preprocess((v) => (v && typeof v === 'object' && !Array.isArray(v) ? [v] : v), z.array(inner, { error: 'must be a list of blocks' })) as unknown as z.ZodType<Array<z.output<T>>>;
}

/**
 * An object schema that refuses keys it does not name: one issue per key, at
 * the key (so the user's line), saying why; reported beside wrong values.
 */
function fields<S extends z.ZodRawShape>(shape: S, notImplemented: Readonly<Record<string, string>>, what: string): z.ZodObject<S, z.core.$loose> {
  const refused = Object.fromEntries(
    Object.entries(notImplemented).map(([key, why]) => [key, z.never({ error: `is not supported by Berth's docker driver: ${why}` }).optional()]),
  );
  const known = new Set([...Object.keys(refused), ...Object.keys(shape)]);
  return z.looseObject({ ...refused, ...shape }, { error: 'must be an object' }).check(
    z.superRefine((value: Record<string, unknown>, ctx) => {
      for (const key of Object.keys(value)) if (!known.has(key)) ctx.addIssue({ code: 'custom', path: [key], input: value[key], message: `is not a ${what} field` });
    }, { when: (payload) => !!payload.value && typeof payload.value === 'object' && !Array.isArray(payload.value) }),
  ) as unknown as z.ZodObject<S, z.core.$loose>;
}

const mountSchema = lazySchema(() => fields(
  {
      type: z.enum(['bind', 'volume', 'tmpfs'], { error: 'must be "bind", "volume" or "tmpfs"' }).optional(),
      target: nonEmpty.optional(),
      source: str.optional(),
      readonly: bool.optional(),
      bind_options: block(z.strictObject({ propagation: z.enum(['rprivate', 'private', 'rslave', 'slave', 'rshared', 'shared'], { error: 'must be one of rprivate, private, rslave, slave, rshared, shared' }).optional() })).optional(),
      tmpfs_options: block(z.strictObject({ size: z.number({ error: 'must be a number' }).optional(), mode: z.number({ error: 'must be a number' }).optional() })).optional(),
      volume_options: block(
        z.strictObject({
          no_copy: bool.optional(),
          labels: stringMap().optional(),
          driver_config: block(z.strictObject({ name: str.optional(), options: stringMap().optional() })).optional(),
        }),
      ).optional(),
  },
  {},
  'mount',
).superRefine((m, ctx) => {
    if (!m.target) ctx.addIssue({ code: 'custom', path: ['target'], message: 'is required: the path inside the container' });
    if (m.type !== 'tmpfs' && !m.source) ctx.addIssue({ code: 'custom', path: ['source'], message: 'is required for a bind or volume mount' });
}));

const deviceSchema = lazySchema(() => z.strictObject(
  {
    host_path: nonEmpty,
    container_path: str.optional(),
    cgroup_permissions: z.string().regex(/^[rwm]+$/, { error: 'must be letters of "rwm"' }).optional(),
  },
  { error: 'must be a block' },
));

/** Nomad's keys Berth's driver leaves out, and why: the user learns at submit, not from a task that behaves differently. */
const TASK_NOT_IMPLEMENTED: Readonly<Record<string, string>> = {
  port_map: 'use `ports` with the group network\'s `port "label" { to = N }`',
  load: 'load the image into the registry or the node\'s docker beforehand',
  mac_address: 'not implemented',
  ipv4_address: 'not implemented',
  ipv6_address: 'not implemented',
  advertise_ipv6_address: 'not implemented',
  network_aliases: 'not implemented (user-defined docker networks are not supported)',
  volume_driver: 'use a `mount` block of type "volume" with volume_options.driver_config',
  cpuset_cpus: 'use the task\'s `resources { cores }`',
  cpu_cfs_period: 'not implemented',
  runtime: 'not implemented (the node\'s dockerd chooses the runtime)',
  storage_opt: 'not implemented',
  auth_soft_fail: 'not implemented: a failed authentication fails the pull',
  mounts: 'write `mount` blocks',
  uts_mode: 'not implemented',
  userns_mode: 'not implemented',
  security_opt: 'not implemented',
  sysctl: 'not implemented',
  tty: 'not implemented',
  interactive: 'not implemented',
  pids_limit: 'not implemented',
  cpu_hard_limit: 'use the task\'s `resources { cores }`',
  memory_hard_limit: 'use the task\'s `resources { memory_max }`',
  image_pull_timeout: 'the agent\'s `pull_activity_timeout` applies',
};

/** A docker task's `config {}` as submitted (snake_case, Nomad's names). */
export const DOCKER_TASK_CONFIG_SCHEMA = lazySchema(() => fields(
  {
      image: z.string({ error: (iss) => (iss.input === undefined ? 'is required: the image to run, e.g. "redis:7" or "registry.example:5000/app:1.2"' : 'must be a string') }).min(1, { error: 'must not be empty' }),
      command: nonEmpty.optional(),
      args: strings.optional(),
      entrypoint: strings.optional(),
      ports: z.array(nonEmpty, { error: 'must be a list of port labels' }).optional(),
      network_mode: nonEmpty.optional(),
      volumes: z.array(z.string().regex(/^[^:]+:[^:]+(:[^:]+)?$/, { error: 'must be "source:target" or "source:target:mode"' }), { error: 'must be a list of strings' }).optional(),
      mount: blockList(mountSchema).optional(),
      privileged: bool.optional(),
      cap_add: strings.optional(),
      cap_drop: strings.optional(),
      devices: blockList(deviceSchema).optional(),
      labels: stringMap().optional(),
      work_dir: nonEmpty.optional(),
      force_pull: bool.optional(),
      auth: block(z.strictObject({ username: str.optional(), password: str.optional(), email: str.optional(), server_address: str.optional() }, { error: 'must be a block' })).optional(),
      logging: block(z.strictObject({ type: str.optional(), driver: str.optional(), config: stringMap().optional() }, { error: 'must be a block' })).optional(),
      hostname: nonEmpty.optional(),
      extra_hosts: z.array(z.string().regex(/^[^:]+:.+$/, { error: 'must be "host:address"' }), { error: 'must be a list of strings' }).optional(),
      dns_servers: strings.optional(),
      dns_search_domains: strings.optional(),
      dns_options: strings.optional(),
      ulimit: stringMap().optional(),
      shm_size: z.number({ error: 'must be a number (bytes)' }).int({ error: 'must be a whole number of bytes' }).positive({ error: 'must be positive' }).optional(),
      readonly_rootfs: bool.optional(),
      pid_mode: z.enum(['host', ''], { error: 'must be "host" or empty' }).optional(),
      ipc_mode: nonEmpty.optional(),
  },
  TASK_NOT_IMPLEMENTED,
  'docker task config',
).superRefine((c, ctx) => {
    for (const [name, value] of Object.entries(c.ulimit ?? {})) {
      if (!/^\d+(:\d+)?$/.test(value)) ctx.addIssue({ code: 'custom', path: ['ulimit', name], message: 'must be "soft" or "soft:hard" (numbers)' });
    }
}));

/** A docker task's config, parsed: every block a single object or a list, every map merged. */
export type DockerTaskConfig = z.output<typeof DOCKER_TASK_CONFIG_SCHEMA>;
export type DockerMount = NonNullable<DockerTaskConfig['mount']>[number];

/** Go's duration strings ("5m", "1h30m", "250ms") as milliseconds. */
const goDuration = lazySchema(() => z
  .string({ error: 'must be a duration such as "5m"' })
  // µ as \u00b5: the agent's bundle stays ASCII, which it reads fastest (scripts/build.mjs).
  .regex(/^(\d+(\.\d+)?(ns|us|\u00b5s|ms|s|m|h))+$/, { error: 'must be a duration such as "5m" or "90s"' })
  .transform((s) => {
    const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, '\u00b5s': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
    let ms = 0;
    for (const m of s.matchAll(/(\d+(?:\.\d+)?)(ns|us|\u00b5s|ms|s|m|h)/g)) ms += Number(m[1]) * (unit[m[2] as string] ?? 0);
    return Math.round(ms);
  }));

const PLUGIN_NOT_IMPLEMENTED: Readonly<Record<string, string>> = {
  auth: 'registry credential helpers are not implemented; give `auth` in the task config',
  tls: 'not implemented: use a unix socket endpoint',
  extra_labels: 'not implemented',
  logging: 'give `logging` in the task config',
  nvidia_runtime: 'not implemented',
  allow_runtimes: 'not implemented',
  infra_image_pull_timeout: 'the `pull_activity_timeout` applies',
  disable_log_collection: 'not implemented',
};

/** Nomad's default capabilities a task may add (its docker driver's allow_caps default). */
export const DOCKER_DEFAULT_ALLOW_CAPS: readonly string[] = [
  'audit_write', 'chown', 'dac_override', 'fowner', 'fsetid', 'kill', 'mknod', 'net_bind_service', 'net_raw', 'setfcap', 'setgid', 'setpcap', 'setuid', 'sys_chroot',
];

/** The agent's `plugin "docker" { config {} }`, with Nomad's defaults filled in. */
export const DOCKER_PLUGIN_CONFIG_SCHEMA = lazySchema(() => fields(
  {
      endpoint: z.string().regex(/^unix:\/\/\/.+/, { error: 'must be a unix socket address, e.g. "unix:///var/run/docker.sock"' }).optional(),
      allow_privileged: bool.default(false),
      volumes: block(z.strictObject({ enabled: bool.default(false), selinuxlabel: str.optional() }, { error: 'must be a block' })).optional(),
      gc: block(
        z.strictObject(
          {
            image: bool.default(true),
            image_delay: goDuration.default(3 * 60_000),
            container: bool.default(true),
            dangling_containers: block(z.looseObject({})).optional(),
          },
          { error: 'must be a block' },
        ),
      ).optional(),
      pull_activity_timeout: goDuration.default(2 * 60_000),
      allow_caps: strings.default([...DOCKER_DEFAULT_ALLOW_CAPS]),
      infra_image: nonEmpty.default('gcr.io/google_containers/pause-amd64:3.1'),
  },
  PLUGIN_NOT_IMPLEMENTED,
  'docker plugin config',
).transform((c) => ({
    endpoint: c.endpoint,
    allowPrivileged: c.allow_privileged,
    volumesEnabled: c.volumes?.enabled ?? false,
    ...(c.volumes?.selinuxlabel ? { selinuxLabel: c.volumes.selinuxlabel } : {}),
    gc: { image: c.gc?.image ?? true, imageDelayMs: c.gc?.image_delay ?? 3 * 60_000, container: c.gc?.container ?? true },
    pullActivityTimeoutMs: c.pull_activity_timeout,
    allowCaps: c.allow_caps.map((s) => s.toLowerCase()),
    infraImage: c.infra_image,
})));

/** The docker plugin config, parsed (camelCase, defaults filled in). */
export type DockerPluginConfig = z.output<typeof DOCKER_PLUGIN_CONFIG_SCHEMA>;

/**
 * What DOCKER_PLUGIN_CONFIG_SCHEMA makes of no config at all (`{}`: an agent
 * without a `plugin "docker"` block, as a dev agent), written out: building
 * that schema and running it was ~25 ms of CPU in every client's start
 * (issue 40), for defaults that never change. A test keeps it equal to the
 * schema's answer. A new object each call. Pure.
 */
export function defaultDockerPluginConfig(): DockerPluginConfig {
  return {
    endpoint: undefined,
    allowPrivileged: false,
    volumesEnabled: false,
    gc: { image: true, imageDelayMs: 3 * 60_000, container: true },
    pullActivityTimeoutMs: 2 * 60_000,
    allowCaps: [...DOCKER_DEFAULT_ALLOW_CAPS],
    infraImage: 'gcr.io/google_containers/pause-amd64:3.1',
  };
}
