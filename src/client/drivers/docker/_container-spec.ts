// What Docker is asked to create for a task: the Engine API's container
// config built from the task (Berth's TaskConfig) and its `config {}`, as
// Nomad's docker driver builds it (createContainerConfig): the allocation's
// directories at /alloc, /local and /secrets, the task's mounts with their
// propagation, its cgroup resources, Nomad's labels, ports published on the
// host's IP or the group's network joined through its pause container.
// Pure: every refusal is a DriverError the task runner shows as it is.

import path from 'node:path';
import type { ContainerCreateOptions } from 'dockerode';
import type { DockerPluginConfig, DockerTaskConfig } from '../../../structs/index.js';
import { DriverError } from '../driver-error.js';
import type { TaskConfig, TaskMount } from '../task-driver.js';

/** Labels Nomad puts on every task container; Berth's reaper and `docker ps` users read them. */
export const LABEL = {
  allocId: 'com.hashicorp.nomad.alloc_id',
  jobId: 'com.hashicorp.nomad.job_id',
  jobName: 'com.hashicorp.nomad.job_name',
  taskGroupName: 'com.hashicorp.nomad.task_group_name',
  taskName: 'com.hashicorp.nomad.task_name',
  namespace: 'com.hashicorp.nomad.namespace',
  nodeId: 'com.hashicorp.nomad.node_id',
  /** Berth's own: the task run (TaskConfig.id) the container belongs to, and which agent's driver made it. */
  taskId: 'io.berth.task_id',
  owner: 'io.berth.driver',
} as const;

const MIB = 1024 * 1024;

/** Nomad's name of a task container: `<task>-<alloc id>` (docker's names must be unique). */
export function containerName(cfg: Pick<TaskConfig, 'taskName' | 'allocId'>): string {
  return `${cfg.taskName}-${cfg.allocId}`;
}

/** Nomad's name of the pause container holding an allocation's network namespace. */
export function pauseContainerName(allocId: string): string {
  return `nomad_init_${allocId}`;
}

const PROPAGATION: Record<TaskMount['propagation'], string> = { private: 'rprivate', 'host-to-task': 'rslave', bidirectional: 'rshared' };

/** Capability names as docker and Nomad's allow_caps compare them: lower case, no CAP_ prefix. */
function capName(c: string): string {
  return c.toLowerCase().replace(/^cap_/, '');
}

export interface ContainerSpecInput {
  cfg: TaskConfig;
  config: DockerTaskConfig;
  plugin: DockerPluginConfig;
  /** Who owns the container (the driver's owner label): reapOrphans removes only its own. */
  owner: string;
  /** The allocation's pause container, when the task joins a group network namespace. */
  pauseContainerId?: string;
}

/**
 * The Engine API create options of the task's container. Throws DriverError
 * DRIVER_START_FAILED (not recoverable) for what the agent's plugin config
 * forbids (privileged, host volumes, capabilities) or a port label the
 * group does not have.
 */
export function containerSpec(i: ContainerSpecInput): ContainerCreateOptions {
  const { cfg, config, plugin } = i;
  const refuse = (msg: string): never => {
    throw new DriverError('DRIVER_START_FAILED', `task ${cfg.taskName}: ${msg}`, { recoverable: false });
  };
  if (config.privileged && !plugin.allowPrivileged) refuse('docker privileged mode is disabled on this agent (plugin "docker" { config { allow_privileged = true } })');
  const allowAll = plugin.allowCaps.map(capName).includes('all');
  const refusedCaps = (config.cap_add ?? []).map(capName).filter((c) => c !== 'all' && !allowAll && !plugin.allowCaps.map(capName).includes(c));
  if ((config.cap_add ?? []).some((c) => capName(c) === 'all') && !allowAll) refusedCaps.push('all');
  if (refusedCaps.length) refuse(`the docker driver does not allow these capabilities on this agent (allow_caps): ${refusedCaps.join(', ')}`);

  // Relative host paths are the task directory's (the parent of local/), as in Nomad.
  const taskRoot = path.dirname(cfg.taskDir);
  const hostPath = (src: string, what: string): string => {
    const abs = path.resolve(taskRoot, src);
    const inside = abs === taskRoot || abs.startsWith(`${taskRoot}/`) || abs.startsWith(`${path.join(cfg.allocDir, 'alloc')}/`);
    if (!plugin.volumesEnabled && !inside) refuse(`${what} ${src}: volumes are not enabled on this agent; cannot mount host paths (plugin "docker" { config { volumes { enabled = true } } })`);
    return abs;
  };
  const selinux = plugin.selinuxLabel ? `:${plugin.selinuxLabel}` : '';
  const binds = [`${path.join(cfg.allocDir, 'alloc')}:/alloc${selinux}`, `${cfg.taskDir}:/local${selinux}`, `${cfg.secretsDir}:/secrets${selinux}`];
  for (const v of config.volumes ?? []) {
    const [src = '', dst = '', mode] = v.split(':');
    // A name without a slash is a docker volume (its driver's business), not a host path.
    const source = src.startsWith('/') || src.startsWith('.') ? hostPath(src, 'volume') : src;
    binds.push([source, dst, ...(mode ? [mode] : [])].join(':') + (mode ? '' : selinux));
  }

  // Built loosely: the Engine API takes the optional parts dockerode's types call required.
  const mounts: Array<Record<string, unknown>> = cfg.mounts.map((m) => {
    if (m.propagation === 'bidirectional' && m.readOnly) refuse(`mount ${m.destination}: bidirectional propagation needs a writable mount`);
    return { Type: 'bind', Source: m.source, Target: m.destination, ReadOnly: m.readOnly, BindOptions: { Propagation: PROPAGATION[m.propagation] } };
  });
  for (const m of config.mount ?? []) {
    const type = m.type ?? 'volume';
    if (type === 'bind') {
      mounts.push({
        Type: 'bind',
        Source: hostPath(m.source ?? '', 'mount'),
        Target: m.target ?? '',
        ReadOnly: m.readonly ?? false,
        ...(m.bind_options?.propagation ? { BindOptions: { Propagation: m.bind_options.propagation } } : {}),
      });
    } else if (type === 'tmpfs') {
      mounts.push({ Type: 'tmpfs', Target: m.target ?? '', ReadOnly: m.readonly ?? false, TmpfsOptions: { ...(m.tmpfs_options?.size ? { SizeBytes: m.tmpfs_options.size } : {}), ...(m.tmpfs_options?.mode ? { Mode: m.tmpfs_options.mode } : {}) } });
    } else {
      const vo = m.volume_options;
      mounts.push({
        Type: 'volume',
        Source: m.source ?? '',
        Target: m.target ?? '',
        ReadOnly: m.readonly ?? false,
        ...(vo ? { VolumeOptions: { NoCopy: vo.no_copy ?? false, Labels: vo.labels ?? {}, ...(vo.driver_config ? { DriverConfig: { Name: vo.driver_config.name ?? '', Options: vo.driver_config.options ?? {} } } : {}) } } : {}),
      });
    }
  }

  // The group's namespace is joined through its pause container; otherwise docker's own network (or the config's).
  let networkMode = config.network_mode ?? (i.pauseContainerId ? `container:${i.pauseContainerId}` : 'default');
  if (!config.network_mode && cfg.networkNamespacePath && !i.pauseContainerId) refuse('the group network namespace has no pause container (the docker driver did not create the network)');
  if (networkMode === 'default') networkMode = 'bridge';
  const sharedNetwork = networkMode.startsWith('container:');

  const exposed: Record<string, object> = {};
  const bindings: Record<string, Array<{ HostIp: string; HostPort: string }>> = {};
  if (!sharedNetwork && networkMode !== 'host') {
    for (const label of config.ports ?? []) {
      const port = cfg.ports?.find((p) => p.label === label);
      if (!port) refuse(`port "${label}" not found, check the group's network block`);
      else {
        const inside = port.to > 0 ? port.to : port.value;
        for (const proto of ['tcp', 'udp']) {
          exposed[`${inside}/${proto}`] = {};
          bindings[`${inside}/${proto}`] = [{ HostIp: port.hostIp, HostPort: String(port.value) }];
        }
      }
    }
  }

  const r = cfg.resources;
  const memory = (r.memoryMaxMb && r.memoryMaxMb > r.memoryMb ? r.memoryMaxMb : r.memoryMb) * MIB;
  const ulimits = Object.entries(config.ulimit ?? {}).map(([Name, v]) => {
    const [soft = '0', hard] = v.split(':');
    return { Name, Soft: Number(soft), Hard: Number(hard ?? soft) };
  });
  const command = config.command ? [config.command, ...(config.args ?? [])] : config.args?.length ? config.args : undefined;
  const logging = config.logging;

  return {
    name: containerName(cfg),
    Image: config.image,
    ...(command ? { Cmd: command } : {}),
    ...(config.entrypoint ? { Entrypoint: config.entrypoint } : {}),
    Env: Object.entries(cfg.env).map(([k, v]) => `${k}=${v}`),
    ...(config.work_dir ? { WorkingDir: config.work_dir } : {}),
    ...(config.hostname && !sharedNetwork ? { Hostname: config.hostname } : {}),
    ...(cfg.user ? { User: cfg.user } : {}),
    ...(Object.keys(exposed).length ? { ExposedPorts: exposed } : {}),
    Labels: {
      ...(config.labels ?? {}),
      [LABEL.allocId]: cfg.allocId,
      [LABEL.taskName]: cfg.taskName,
      ...(cfg.jobId ? { [LABEL.jobId]: cfg.jobId, [LABEL.jobName]: cfg.jobName ?? cfg.jobId } : {}),
      ...(cfg.groupName ? { [LABEL.taskGroupName]: cfg.groupName } : {}),
      ...(cfg.namespace ? { [LABEL.namespace]: cfg.namespace } : {}),
      ...(cfg.nodeId ? { [LABEL.nodeId]: cfg.nodeId } : {}),
      [LABEL.taskId]: cfg.id,
      [LABEL.owner]: i.owner,
    },
    HostConfig: {
      Binds: binds,
      Mounts: mounts as unknown as NonNullable<ContainerCreateOptions['HostConfig']>['Mounts'],
      Memory: memory,
      ...(r.memoryMaxMb && r.memoryMaxMb > r.memoryMb ? { MemoryReservation: r.memoryMb * MIB } : {}),
      // Nomad's default memory_swap: no swap beyond the limit.
      MemorySwap: memory,
      CpuShares: Math.max(2, Math.round(r.cpuMhz)),
      ...(r.cores ? { CpuPeriod: 100_000, CpuQuota: Math.round(r.cores * 100_000) } : {}),
      ...(r.pidsMax ? { PidsLimit: r.pidsMax } : {}),
      NetworkMode: networkMode,
      ...(Object.keys(bindings).length ? { PortBindings: bindings } : {}),
      Privileged: config.privileged ?? false,
      ...(config.cap_add?.length ? { CapAdd: config.cap_add } : {}),
      ...(config.cap_drop?.length ? { CapDrop: config.cap_drop } : {}),
      ...(config.devices?.length || cfg.devices?.length
        ? {
            Devices: [
              ...(config.devices ?? []).map((d) => ({ PathOnHost: d.host_path, PathInContainer: d.container_path || d.host_path, CgroupPermissions: d.cgroup_permissions || 'rwm' })),
              ...(cfg.devices ?? []).map((d) => ({ PathOnHost: d.hostPath, PathInContainer: d.taskPath, CgroupPermissions: d.permissions || 'rwm' })),
            ],
          }
        : {}),
      ...(config.dns_servers?.length ? { Dns: config.dns_servers } : {}),
      ...(config.dns_search_domains?.length ? { DnsSearch: config.dns_search_domains } : {}),
      ...(config.dns_options?.length ? { DnsOptions: config.dns_options } : {}),
      ...(config.extra_hosts?.length ? { ExtraHosts: config.extra_hosts } : {}),
      ...(ulimits.length ? { Ulimits: ulimits } : {}),
      ...(config.shm_size ? { ShmSize: config.shm_size } : {}),
      ReadonlyRootfs: config.readonly_rootfs ?? false,
      ...(config.pid_mode ? { PidMode: config.pid_mode } : {}),
      ...(config.ipc_mode ? { IpcMode: config.ipc_mode } : {}),
      ...(logging?.type || logging?.driver ? { LogConfig: { Type: (logging.type || logging.driver) as 'json-file', Config: logging.config ?? {} } } : {}),
      // The agent restarts tasks (restart policy); docker must not do it behind its back.
      RestartPolicy: { Name: '', MaximumRetryCount: 0 },
    },
  };
}
