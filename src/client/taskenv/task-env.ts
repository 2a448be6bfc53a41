// A task's environment and the run-time `${...}` interpolation of its spec
// (Nomad's client/taskenv). The builder gathers what the environment is made
// of once per task (allocation, job, group, task, node, directories); build()
// makes the TaskEnv of one start, with what prestart hooks added. Nothing else
// in Berth expands `${...}` at run time: drivers, hooks and templates ask a
// TaskEnv.

import path from 'node:path';
import { portEnvKey, type AllocatedPort, type Task } from '../../structs/index.js';
import { resolveTaskPath } from '../allocdir/index.js';

/** What the environment knows of the node the task runs on. */
export interface TaskEnvNode {
  id: string;
  name: string;
  datacenter: string;
  /** Default "global". */
  region?: string;
  /** Nomad's node_class; default "". */
  nodeClass?: string;
  /** The node's fingerprinted attributes (`${attr.<name>}`). */
  attributes: Readonly<Record<string, string>>;
  /** The node's meta (`${meta.<key>}`). */
  meta: Readonly<Record<string, string>>;
}

/** A task's three directories, as one path each. */
export interface TaskEnvDirs {
  /** The allocation's shared directory (NOMAD_ALLOC_DIR). */
  alloc: string;
  /** The task's local directory (NOMAD_TASK_DIR). */
  local: string;
  /** The task's secrets directory (NOMAD_SECRETS_DIR). */
  secrets: string;
}

/** The allocation's own network, when it has one (bridge or CNI mode): its address in its namespace and the interface. */
export interface TaskEnvNetwork {
  address?: string;
  interface?: string;
}

export interface TaskEnvBuilderOptions {
  alloc: {
    id: string;
    jobId: string;
    taskGroup: string;
    index?: number;
    namespace?: string;
    /** The host ports the scheduler gave the allocation (NOMAD_PORT_<label> and kin). */
    ports?: readonly AllocatedPort[];
    /** The allocation's own network as its status reports it (Allocation.network); see `network` below. */
    network?: TaskEnvNetwork;
  };
  /**
   * The allocation's own network, read at each build() (its network hook
   * made it before the task starts): NOMAD_ALLOC_IP_<label>,
   * NOMAD_ALLOC_ADDR_<label> and NOMAD_ALLOC_INTERFACE_<label> use its
   * address. Absent or without an address: `alloc.network`, else the
   * port's host IP (host mode: the allocation shares the node's addresses).
   */
  network?: () => TaskEnvNetwork | undefined;
  job: { id: string; name?: string; namespace?: string; region?: string; meta?: Readonly<Record<string, string>> };
  group: { name: string; meta?: Readonly<Record<string, string>> };
  task: Pick<Task, 'name' | 'env' | 'meta' | 'resources'>;
  node: TaskEnvNode;
  /** The directories as the task sees them (`/alloc`, `/local`, `/secrets` in a chroot; host paths otherwise). */
  taskDirs: TaskEnvDirs;
  /** The same directories on the host, for paths the agent itself reads or writes (clientPath). */
  hostDirs: TaskEnvDirs;
}

// Nomad's pattern: `${name}` of letters, digits, `_`, `-` and `.`; and `${env["NAME"]}` for any key.
const REFERENCE = /\$\{([A-Za-z0-9_\-.]+)\}|\$\{env\["([^"\\]+)"\]\}/g;

/**
 * The environment of one start of a task, and the interpolation of `${...}`
 * against it. Immutable and cheap; safe to share.
 *
 * `${NAME}` is the task's variable NAME (NOMAD_*, BERTH_*, the task's `env`,
 * what hooks added such as CSI_ENDPOINT), else a node value
 * (`node.unique.id`, `node.unique.name`, `node.datacenter`, `node.region`,
 * `node.class`, `attr.<name>`, `meta.<key>`); `${env["NAME"]}` is the
 * variable NAME. A reference to nothing known stays as written (as in
 * Nomad) and is listed by unresolved().
 */
export class TaskEnv {
  /** The variables the task's process gets. */
  readonly env: Readonly<Record<string, string>>;
  /** `node.*`, `attr.*` and `meta.*` values. */
  readonly nodeAttrs: Readonly<Record<string, string>>;
  readonly #hostEnv: Readonly<Record<string, string>>;
  readonly #hostTaskDir: string;
  /** The allocation's directory on the host (its tasks' and its shared directory). */
  readonly #hostAllocRoot: string;

  constructor(env: Record<string, string>, nodeAttrs: Record<string, string>, host: { env: Record<string, string>; taskDir: string; allocRoot: string }) {
    this.env = Object.freeze({ ...env });
    this.nodeAttrs = Object.freeze({ ...nodeAttrs });
    this.#hostEnv = Object.freeze({ ...host.env });
    this.#hostTaskDir = host.taskDir;
    this.#hostAllocRoot = host.allocRoot;
  }

  /** `text` with every known `${...}` replaced. Pure; never throws. */
  interpolate(text: string): string {
    return replace(text, this.env, this.nodeAttrs);
  }

  /**
   * A copy of `value` with every string in it interpolated (object keys
   * stay as written). For a driver's `config`, a csi_plugin block, a list
   * of args. Pure.
   */
  interpolateAll<T>(value: T): T {
    return deep(value, (s) => this.interpolate(s)) as T;
  }

  /** The references in `value` (any depth) that name nothing known, as written (`${var.x}`), in order, once each. */
  unresolved(value: unknown): string[] {
    const out = new Set<string>();
    deep(value, (s) => {
      for (const m of s.matchAll(REFERENCE)) if (lookup(m, this.env, this.nodeAttrs) === undefined) out.add(m[0]);
      return s;
    });
    return [...out];
  }

  /**
   * A path the agent reads or writes for the task (a template's or an
   * artifact's destination, a template's source): interpolated with the
   * host paths of the task's directories, then placed as Nomad's ClientPath
   * does (allocdir's resolveTaskPath): a relative path is taken from the
   * task's directory, and so is an absolute one outside the allocation
   * (`/local/app.conf`, as the task sees it in a chroot) unless
   * `joinEscape` is false. `escapes` is true when the result is outside the
   * allocation directory. Pure.
   */
  clientPath(raw: string, joinEscape = true): { path: string; escapes: boolean } {
    const interpolated = replace(raw, this.#hostEnv, this.nodeAttrs);
    const placed = joinEscape ? resolveTaskPath({ dir: this.#hostTaskDir }, this.#hostAllocRoot, interpolated) : undefined;
    if (placed !== undefined) return { path: placed, escapes: false };
    const abs = path.resolve(this.#hostTaskDir, interpolated);
    return { path: abs, escapes: resolveTaskPath({ dir: this.#hostTaskDir }, this.#hostAllocRoot, abs) !== abs };
  }
}

/**
 * Gathers a task's environment once; build() makes the TaskEnv of a start.
 * Order, as Nomad's: the NOMAD_* values, then meta (NOMAD_META_<key> and its
 * upper-cased twin; job < group < task), then the task's `env` (interpolated,
 * and may override NOMAD_*), then BERTH_* (never overridden), then what hooks
 * added.
 */
export class TaskEnvBuilder {
  readonly #o: TaskEnvBuilderOptions;
  readonly #nodeAttrs: Record<string, string>;

  constructor(opts: TaskEnvBuilderOptions) {
    this.#o = opts;
    const n = opts.node;
    const attrs: Record<string, string> = {
      'node.unique.id': n.id,
      'node.unique.name': n.name,
      'node.datacenter': n.datacenter,
      'node.region': opts.job.region ?? n.region ?? 'global',
      'node.class': n.nodeClass ?? '',
    };
    for (const [k, v] of Object.entries(n.attributes)) attrs[`attr.${k}`] = v;
    for (const [k, v] of Object.entries(n.meta)) attrs[`meta.${k}`] = v;
    this.#nodeAttrs = attrs;
  }

  /** The TaskEnv of a start; `hookEnv` is what prestart hooks added (CSI_ENDPOINT...); `task` the task's current spec. Pure. */
  build(hookEnv: Readonly<Record<string, string>> = {}, task: TaskEnvBuilderOptions['task'] = this.#o.task): TaskEnv {
    const env = this.#envWith(this.#o.taskDirs, hookEnv, task);
    const hostEnv = this.#envWith(this.#o.hostDirs, hookEnv, task);
    return new TaskEnv(env, this.#nodeAttrs, { env: hostEnv, taskDir: path.dirname(this.#o.hostDirs.local), allocRoot: path.dirname(this.#o.hostDirs.alloc) });
  }

  #envWith(dirs: TaskEnvDirs, hookEnv: Readonly<Record<string, string>>, task: TaskEnvBuilderOptions['task']): Record<string, string> {
    const { alloc, job, group, node } = this.#o;
    const index = alloc.index ?? 0;
    const env: Record<string, string> = {
      NOMAD_ALLOC_DIR: dirs.alloc,
      NOMAD_TASK_DIR: dirs.local,
      NOMAD_SECRETS_DIR: dirs.secrets,
      NOMAD_MEMORY_LIMIT: String(task.resources.memoryMb),
      NOMAD_CPU_LIMIT: String(task.resources.cpuMhz),
      NOMAD_ALLOC_ID: alloc.id,
      NOMAD_SHORT_ALLOC_ID: alloc.id.slice(0, 8),
      NOMAD_ALLOC_NAME: `${alloc.jobId}.${alloc.taskGroup}[${index}]`,
      NOMAD_ALLOC_INDEX: String(index),
      NOMAD_GROUP_NAME: alloc.taskGroup,
      NOMAD_TASK_NAME: task.name,
      NOMAD_JOB_ID: job.id,
      NOMAD_JOB_NAME: job.name ?? job.id,
      NOMAD_DC: node.datacenter,
      NOMAD_NAMESPACE: alloc.namespace ?? job.namespace ?? 'default',
      NOMAD_REGION: this.#nodeAttrs['node.region'] as string,
      NOMAD_NODE_ID: node.id,
      NOMAD_NODE_NAME: node.name,
    };
    if (task.resources.memoryMaxMb !== undefined) env['NOMAD_MEMORY_MAX_LIMIT'] = String(task.resources.memoryMaxMb);
    const portEnv = portVariables(alloc.ports ?? [], this.#o.network?.() ?? alloc.network);
    Object.assign(env, portEnv);
    const meta = { ...job.meta, ...group.meta, ...task.meta };
    for (const [k, v] of Object.entries(meta)) {
      const key = replace(k, env, this.#nodeAttrs);
      const value = replace(v, env, this.#nodeAttrs);
      env[cleanKey(`NOMAD_META_${key}`)] = value;
      env[cleanKey(`NOMAD_META_${key.toUpperCase()}`)] = value;
    }
    for (const [k, v] of Object.entries(task.env)) env[k] = replace(v, env, this.#nodeAttrs);
    Object.assign(env, {
      BERTH_ALLOC_ID: alloc.id,
      BERTH_ALLOC_INDEX: String(index),
      BERTH_JOB_ID: alloc.jobId,
      BERTH_GROUP_NAME: alloc.taskGroup,
      BERTH_TASK_NAME: task.name,
      // The node the allocation was placed on: plugins use it as their node ID, so agents sharing a machine stay apart.
      BERTH_NODE_ID: node.id,
      BERTH_ALLOC_DIR: dirs.alloc,
      BERTH_TASK_DIR: dirs.local,
      BERTH_SECRETS_DIR: dirs.secrets,
    });
    for (const [k, v] of Object.entries(portEnv)) env[`BERTH_${k.slice('NOMAD_'.length)}`] = v;
    for (const [k, v] of Object.entries(hookEnv)) env[k] = replace(v, env, this.#nodeAttrs);
    return env;
  }
}

const joinHostPort = (ip: string, port: number): string => (ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`);

/**
 * The port variables of an allocation, as Nomad's taskenv makes them:
 * NOMAD_PORT_<label> and NOMAD_ALLOC_PORT_<label> are the port to listen on
 * (the mapped `to` port, else the host port); NOMAD_HOST_PORT_<label> the
 * host port; NOMAD_IP_<label>, NOMAD_HOST_IP_<label> the host IP;
 * NOMAD_ADDR_<label>, NOMAD_HOST_ADDR_<label> host IP:host port (where
 * others reach it); NOMAD_ALLOC_IP_<label>, NOMAD_ALLOC_ADDR_<label> (and
 * NOMAD_ALLOC_INTERFACE_<label> with a namespace) the allocation's own
 * address with the port to listen on. Labels are cleaned as Nomad does. Pure.
 */
export function portVariables(ports: readonly AllocatedPort[], network: TaskEnvNetwork | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const p of ports) {
    const listen = p.to > 0 ? p.to : p.value;
    const allocIp = network?.address || p.hostIp;
    const set = (prefix: string, value: string): void => void (env[portEnvKey(prefix, p.label)] = value);
    set('NOMAD_PORT_', String(listen));
    set('NOMAD_ALLOC_PORT_', String(listen));
    set('NOMAD_HOST_PORT_', String(p.value));
    set('NOMAD_IP_', p.hostIp);
    set('NOMAD_HOST_IP_', p.hostIp);
    set('NOMAD_ADDR_', joinHostPort(p.hostIp, p.value));
    set('NOMAD_HOST_ADDR_', joinHostPort(p.hostIp, p.value));
    set('NOMAD_ALLOC_IP_', allocIp);
    set('NOMAD_ALLOC_ADDR_', joinHostPort(allocIp, listen));
    if (network?.address && network.interface) set('NOMAD_ALLOC_INTERFACE_', network.interface);
  }
  return env;
}

// Nomad cleans NOMAD_META_* names to what a shell accepts.
const cleanKey = (k: string): string => k.replace(/[^A-Za-z0-9_]/g, '_');

function lookup(m: RegExpMatchArray, env: Readonly<Record<string, string>>, attrs: Readonly<Record<string, string>>): string | undefined {
  const name = m[1];
  if (name !== undefined) return Object.hasOwn(env, name) ? env[name] : Object.hasOwn(attrs, name) ? attrs[name] : undefined;
  const key = m[2] as string;
  return Object.hasOwn(env, key) ? env[key] : undefined;
}

function replace(text: string, env: Readonly<Record<string, string>>, attrs: Readonly<Record<string, string>>): string {
  if (!text.includes('${')) return text;
  return text.replace(REFERENCE, (...args: unknown[]) => {
    const m = args.slice(0, 3) as unknown as RegExpMatchArray;
    return lookup(m, env, attrs) ?? (args[0] as string);
  });
}

function deep(value: unknown, fn: (s: string) => string): unknown {
  if (typeof value === 'string') return fn(value);
  if (Array.isArray(value)) return value.map((v) => deep(v, fn));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = deep(v, fn);
    return out;
  }
  return value;
}

/**
 * A task's directories for its environment: as the task sees them and on
 * the host. As Nomad's task_dir hook sets them: a driver with no file
 * system isolation gets the host paths; one that isolates (`chroot`: exec's
 * chroot; `image`: a container) gets `/alloc`, `/local` and `/secrets`,
 * where it binds them. Pure.
 */
export function taskEnvDirs(td: { sharedDir: string; localDir: string; secretsDir: string }, fsIsolation: 'none' | 'chroot' | 'image'): { taskDirs: TaskEnvDirs; hostDirs: TaskEnvDirs } {
  const hostDirs = { alloc: td.sharedDir, local: td.localDir, secrets: td.secretsDir };
  return { taskDirs: fsIsolation === 'none' ? hostDirs : { alloc: '/alloc', local: '/local', secrets: '/secrets' }, hostDirs };
}
