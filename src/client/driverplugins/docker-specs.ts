// The docker driver's two schemas as hclspec, for `berth driver serve docker`:
// what the agent encodes `plugin "docker" { config {} }` and a task's
// `config {}` against before sending them (go-cty msgpack), the same keys
// and block shapes Nomad's docker driver declares (drivers/docker/config.go)
// but only those Berth's driver implements (src/structs/docker-config.ts).

import { hclspec, type Spec } from '../../plugins/index.js';

const { object, attr, block, blockList, withDefault, literal } = hclspec;

/** The plugin config: endpoint, allow_privileged, volumes, gc, pull_activity_timeout, allow_caps, infra_image. */
export const DOCKER_CONFIG_SPEC: Spec = object({
  endpoint: attr('endpoint', 'string'),
  allow_privileged: attr('allow_privileged', 'bool'),
  volumes: block('volumes', false, object({ enabled: attr('enabled', 'bool'), selinuxlabel: attr('selinuxlabel', 'string') })),
  gc: block('gc', false, object({ image: attr('image', 'bool'), image_delay: attr('image_delay', 'string'), container: attr('container', 'bool') })),
  pull_activity_timeout: withDefault(attr('pull_activity_timeout', 'string'), literal('"2m"')),
  allow_caps: attr('allow_caps', 'list(string)'),
  infra_image: attr('infra_image', 'string'),
});

const mountSpec = object({
  type: withDefault(attr('type', 'string'), literal('"volume"')),
  target: attr('target', 'string'),
  source: attr('source', 'string'),
  readonly: attr('readonly', 'bool'),
  bind_options: block('bind_options', false, object({ propagation: attr('propagation', 'string') })),
  tmpfs_options: block('tmpfs_options', false, object({ size: attr('size', 'number'), mode: attr('mode', 'number') })),
  volume_options: block(
    'volume_options',
    false,
    object({
      no_copy: attr('no_copy', 'bool'),
      labels: attr('labels', 'list(map(string))'),
      driver_config: block('driver_config', false, object({ name: attr('name', 'string'), options: attr('options', 'list(map(string))') })),
    }),
  ),
});

/** A task's config, Nomad's keys that Berth's docker driver implements. */
export const DOCKER_TASK_CONFIG_SPEC: Spec = object({
  image: attr('image', 'string', true),
  command: attr('command', 'string'),
  args: attr('args', 'list(string)'),
  entrypoint: attr('entrypoint', 'list(string)'),
  ports: attr('ports', 'list(string)'),
  network_mode: attr('network_mode', 'string'),
  volumes: attr('volumes', 'list(string)'),
  mount: blockList('mount', mountSpec),
  privileged: attr('privileged', 'bool'),
  cap_add: attr('cap_add', 'list(string)'),
  cap_drop: attr('cap_drop', 'list(string)'),
  devices: blockList('devices', object({ host_path: attr('host_path', 'string'), container_path: attr('container_path', 'string'), cgroup_permissions: attr('cgroup_permissions', 'string') })),
  labels: attr('labels', 'list(map(string))'),
  work_dir: attr('work_dir', 'string'),
  force_pull: attr('force_pull', 'bool'),
  auth: block('auth', false, object({ username: attr('username', 'string'), password: attr('password', 'string'), email: attr('email', 'string'), server_address: attr('server_address', 'string') })),
  logging: block('logging', false, object({ type: attr('type', 'string'), driver: attr('driver', 'string'), config: attr('config', 'list(map(string))') })),
  hostname: attr('hostname', 'string'),
  extra_hosts: attr('extra_hosts', 'list(string)'),
  dns_servers: attr('dns_servers', 'list(string)'),
  dns_search_domains: attr('dns_search_domains', 'list(string)'),
  dns_options: attr('dns_options', 'list(string)'),
  ulimit: attr('ulimit', 'list(map(string))'),
  shm_size: attr('shm_size', 'number'),
  readonly_rootfs: attr('readonly_rootfs', 'bool'),
  pid_mode: attr('pid_mode', 'string'),
  ipc_mode: attr('ipc_mode', 'string'),
});

/** go-cty gives every attribute of an object, absent ones as null: dropped, so that the driver's own schema sees what was written. */
export function withoutNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (v && typeof v === 'object' && !(v instanceof Uint8Array)) {
    return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null && x !== undefined).map(([k, x]) => [k, withoutNulls(x)]));
  }
  return v;
}
