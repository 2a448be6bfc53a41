// An evaluated HCL body in hcl2json's shape (every block a list, labelled
// blocks keyed by label, snake_case names; see hcl's toJsonShape) ->
// Berth's canonical camelCase JSON, driven by a table of the blocks each
// body may hold. Unknown names pass through camelCased so
// that the zod schema reports them as unknown fields, at their line.

import { formatPath } from '../structs/index.js';
import type { HclStep } from './_hcl-outline.js';

export type Body = Readonly<Record<string, Field>>;

export type Field =
  /** An attribute, renamed. */
  | { t: 'attr'; to: string }
  /**
   * A block that may appear once -> an object. With `concat`, repeating it
   * is allowed and the lists its `post` makes are joined (Nomad reads every
   * `required { topology {} }` block of a volume's topology_request).
   */
  | { t: 'block'; to: string; body: Body; post?: (obj: Record<string, unknown>) => unknown; concat?: boolean }
  /** A repeatable block -> a list of objects. */
  | { t: 'blocks'; to: string; body: Body }
  /** A labelled block -> a list of objects with the label under `labelAs`. */
  | { t: 'labeled'; to: string; labelAs: string; body: Body }
  /** A labelled block -> a record keyed by label. */
  | { t: 'labeledMap'; to: string; body: Body }
  /** A block (or object attribute) of free keys kept verbatim: env, secrets, parameters, config. */
  | { t: 'map'; to: string };

const attr = (to: string): Field => ({ t: 'attr', to });
const map = (to: string): Field => ({ t: 'map', to });

const RESTART: Body = { attempts: attr('attempts'), interval: attr('interval'), delay: attr('delay'), mode: attr('mode') };
const RESCHEDULE: Body = {
  attempts: attr('attempts'),
  interval: attr('interval'),
  delay: attr('delay'),
  unlimited: attr('unlimited'),
  delay_function: attr('delayFunction'),
  max_delay: attr('maxDelay'),
};
// Blocks Berth parses and refuses by name (structs/job-blocks.ts says why); kept whole so the error points at them.
const REFUSED_BLOCKS: Body = {
  scaling: { t: 'blocks', to: 'scaling', body: {} },
  vault: { t: 'block', to: 'vault', body: {} },
  consul: { t: 'block', to: 'consul', body: {} },
};
/** Nomad's `migrate` block (job and group); durations become milliseconds in the schema. */
const MIGRATE: Field = {
  t: 'block',
  to: 'migrate',
  body: { max_parallel: attr('maxParallel'), health_check: attr('healthCheck'), min_healthy_time: attr('minHealthyTimeMs'), healthy_deadline: attr('healthyDeadlineMs') },
};
const CHECK_RESTART: Body = { limit: attr('limit'), grace: attr('grace'), ignore_warnings: attr('ignoreWarnings') };
const CHECK: Body = {
  name: attr('name'),
  type: attr('type'),
  path: attr('path'),
  method: attr('method'),
  header: map('header'),
  expected_status: attr('expectedStatus'),
  protocol: attr('protocol'),
  interval: attr('interval'),
  timeout: attr('timeout'),
  initial_status: attr('initialStatus'),
  success_before_passing: attr('successBeforePassing'),
  failures_before_critical: attr('failuresBeforeCritical'),
  check_restart: { t: 'block', to: 'checkRestart', body: CHECK_RESTART },
  port: attr('port'),
  address_mode: attr('addressMode'),
  command: attr('command'),
  args: attr('args'),
  task: attr('task'),
};
const SERVICE: Body = {
  name: attr('name'),
  port: attr('port'),
  tags: attr('tags'),
  meta: map('meta'),
  address_mode: attr('addressMode'),
  address: attr('address'),
  provider: attr('provider'),
  task: attr('taskName'),
  check: { t: 'blocks', to: 'checks', body: CHECK },
  check_restart: { t: 'block', to: 'checkRestart', body: CHECK_RESTART },
};
// Placement rules (structs/placement-rules.ts): Nomad's shorthands (version = "...", distinct_hosts = true) pass camelCased.
const RULE: Body = { attribute: attr('attribute'), operator: attr('operator'), value: attr('value') };
const CONSTRAINT: Field = { t: 'blocks', to: 'constraints', body: RULE };
const AFFINITY: Field = { t: 'blocks', to: 'affinities', body: { ...RULE, weight: attr('weight') } };
const SPREAD: Field = {
  t: 'blocks',
  to: 'spreads',
  body: { attribute: attr('attribute'), weight: attr('weight'), target: { t: 'labeled', to: 'targets', labelAs: 'value', body: { percent: attr('percent'), value: attr('value') } } },
};
const UPDATE: Body = {
  max_parallel: attr('maxParallel'),
  health_check: attr('healthCheck'),
  min_healthy_time: attr('minHealthyTimeMs'),
  healthy_deadline: attr('healthyDeadlineMs'),
  progress_deadline: attr('progressDeadlineMs'),
  auto_revert: attr('autoRevert'),
  auto_promote: attr('autoPromote'),
  canary: attr('canary'),
  stagger: attr('staggerMs'),
};
const MOUNT_OPTIONS: Body = { fs_type: attr('fsType'), mount_flags: attr('mountFlags') };
const GROUP_VOLUME: Body = {
  type: attr('type'),
  source: attr('source'),
  access_mode: attr('accessMode'),
  attachment_mode: attr('attachmentMode'),
  read_only: attr('readOnly'),
  per_alloc: attr('perAlloc'),
  sticky: attr('sticky'),
  mount_options: { t: 'block', to: 'mountOptions', body: MOUNT_OPTIONS },
};
const TEMPLATE: Body = {
  source: attr('source'),
  data: attr('data'),
  destination: attr('destination'),
  change_mode: attr('changeMode'),
  change_signal: attr('changeSignal'),
  splay: attr('splay'),
  perms: attr('perms'),
  uid: attr('uid'),
  gid: attr('gid'),
  left_delimiter: attr('leftDelimiter'),
  right_delimiter: attr('rightDelimiter'),
  env: attr('env'),
  error_on_missing_key: attr('errorOnMissingKey'),
};
const IDENTITY: Body = {
  name: attr('name'),
  aud: attr('aud'),
  env: attr('env'),
  file: attr('file'),
  filepath: attr('filepath'),
  ttl: attr('ttl'),
  change_mode: attr('changeMode'),
  change_signal: attr('changeSignal'),
  extra_claims: attr('extraClaims'),
  service_name: attr('serviceName'),
};
const ARTIFACT: Body = { source: attr('source'), destination: attr('destination'), mode: attr('mode'), options: map('options'), headers: map('headers') };
const TASK: Body = {
  driver: attr('driver'),
  config: map('config'),
  env: map('env'),
  meta: map('meta'),
  kill_timeout: attr('killTimeout'),
  kill_signal: attr('killSignal'),
  shutdown_delay: attr('shutdownDelay'),
  max_run_duration: attr('maxRunDuration'),
  user: attr('user'),
  leader: attr('leader'),
  lifecycle: { t: 'block', to: 'lifecycle', body: { hook: attr('hook'), sidecar: attr('sidecar') } },
  identity: { t: 'blocks', to: 'identities', body: IDENTITY },
  ...REFUSED_BLOCKS,
  service: { t: 'blocks', to: 'services', body: SERVICE },
  constraint: CONSTRAINT,
  affinity: AFFINITY,
  resources: {
    t: 'block',
    to: 'resources',
    body: {
      cpu: attr('cpuMhz'),
      cpu_mhz: attr('cpuMhz'),
      memory: attr('memoryMb'),
      memory_mb: attr('memoryMb'),
      memory_max: attr('memoryMaxMb'),
      cores: attr('cores'),
      pids: attr('pidsMax'),
      memory_enforced: attr('memoryEnforced'),
      disk: attr('disk'),
      device: { t: 'blocks', to: 'device', body: {} },
      // Nomad's deprecated task network: refused by name (structs' legacyTaskNetwork).
      network: { t: 'blocks', to: 'network', body: {} },
    },
  },
  volume_mount: {
    t: 'blocks',
    to: 'volumeMounts',
    body: { volume: attr('volume'), destination: attr('destination'), read_only: attr('readOnly'), propagation_mode: attr('propagationMode'), selinux_label: attr('selinuxLabel') },
  },
  csi_plugin: {
    t: 'block',
    to: 'csiPlugin',
    body: {
      id: attr('id'),
      type: attr('type'),
      mount_dir: attr('mountDir'),
      stage_publish_base_dir: attr('stagePublishBaseDir'),
      health_timeout: attr('healthTimeout'),
    },
  },
  dispatch_payload: { t: 'block', to: 'dispatchPayload', body: { file: attr('file') } },
  template: { t: 'blocks', to: 'templates', body: TEMPLATE },
  artifact: { t: 'blocks', to: 'artifacts', body: ARTIFACT },
  logs: {
    t: 'block',
    to: 'logs',
    body: { disabled: attr('disabled'), max_files: attr('maxFiles'), max_file_size: attr('maxFileSizeMb'), max_file_size_mb: attr('maxFileSizeMb') },
  },
};
const GROUP: Body = {
  count: attr('count'),
  restart: { t: 'block', to: 'restart', body: RESTART },
  reschedule: { t: 'block', to: 'reschedule', body: RESCHEDULE },
  network: {
    t: 'block',
    to: 'network',
    body: {
      mode: attr('mode'),
      port: { t: 'labeled', to: 'ports', labelAs: 'label', body: { static: attr('static'), to: attr('to'), host_network: attr('hostNetwork') } },
      dns: { t: 'block', to: 'dns', body: { servers: attr('servers'), searches: attr('searches'), options: attr('options') } },
    },
  },
  meta: map('meta'),
  shutdown_delay: attr('shutdownDelay'),
  max_run_duration: attr('maxRunDuration'),
  ephemeral_disk: { t: 'block', to: 'ephemeralDisk', body: { size: attr('size'), sticky: attr('sticky'), migrate: attr('migrate') } },
  ...REFUSED_BLOCKS,
  // After the refused blocks: a group's scaling block is Nomad's horizontal policy (a task's stays refused).
  scaling: { t: 'block', to: 'scaling', body: { enabled: attr('enabled'), min: attr('min'), max: attr('max'), policy: map('policy') } },
  migrate: MIGRATE,
  service: { t: 'blocks', to: 'services', body: SERVICE },
  constraint: CONSTRAINT,
  affinity: AFFINITY,
  spread: SPREAD,
  update: { t: 'block', to: 'update', body: UPDATE },
  volume: { t: 'labeledMap', to: 'volumes', body: GROUP_VOLUME },
  task: { t: 'labeled', to: 'tasks', labelAs: 'name', body: TASK },
};
/** The body of `job "<id>" { ... }`. */
export const JOB_BODY: Body = {
  namespace: attr('namespace'),
  type: attr('type'),
  priority: attr('priority'),
  datacenters: attr('datacenters'),
  name: attr('name'),
  region: attr('region'),
  meta: map('meta'),
  ...REFUSED_BLOCKS,
  constraint: CONSTRAINT,
  affinity: AFFINITY,
  spread: SPREAD,
  update: { t: 'block', to: 'update', body: UPDATE },
  migrate: MIGRATE,
  reschedule: { t: 'block', to: 'reschedule', body: RESCHEDULE },
  group: { t: 'labeled', to: 'groups', labelAs: 'name', body: GROUP },
  periodic: {
    t: 'block',
    to: 'periodic',
    body: { cron: attr('cron'), crons: attr('crons'), prohibit_overlap: attr('prohibitOverlap'), time_zone: attr('timeZone'), enabled: attr('enabled') },
  },
  parameterized: { t: 'block', to: 'parameterized', body: { payload: attr('payload'), meta_required: attr('metaRequired'), meta_optional: attr('metaOptional') } },
  ui: { t: 'block', to: 'ui', body: { description: attr('description'), link: { t: 'blocks', to: 'links', body: { label: attr('label'), url: attr('url') } } } },
  /** A task directly under the job: Nomad's implicit group, named after the task (structs' implicitGroups). */
  task: { t: 'labeled', to: 'tasks', labelAs: 'name', body: TASK },
};

// topology { segments { k = "v" } } blocks -> the list of segment maps the schema takes.
const topologies = (obj: Record<string, unknown>): unknown =>
  Array.isArray(obj['topologies']) ? obj['topologies'].map((t) => (t && typeof t === 'object' ? ((t as Record<string, unknown>)['segments'] ?? {}) : t)) : obj;
const TOPOLOGY_LIST: Body = { topology: { t: 'blocks', to: 'topologies', body: { segments: map('segments') } } };

/** The top level of a volume specification file. */
export const VOLUME_BODY: Body = {
  id: attr('id'),
  name: attr('name'),
  namespace: attr('namespace'),
  type: attr('type'),
  plugin_id: attr('pluginId'),
  external_id: attr('externalId'),
  capacity_min: attr('capacityMin'),
  capacity_max: attr('capacityMax'),
  snapshot_id: attr('snapshotId'),
  clone_id: attr('cloneId'),
  // Dynamic host volumes (type = "host").
  node_id: attr('nodeId'),
  node_pool: attr('nodePool'),
  host_path: attr('hostPath'),
  capacity: attr('capacity'),
  constraint: CONSTRAINT,
  capability: { t: 'blocks', to: 'capabilities', body: { access_mode: attr('accessMode'), attachment_mode: attr('attachmentMode') } },
  // Nomad's legacy single capability at the top level.
  access_mode: attr('accessMode'),
  attachment_mode: attr('attachmentMode'),
  mount_options: { t: 'block', to: 'mountOptions', body: MOUNT_OPTIONS },
  secrets: map('secrets'),
  parameters: map('parameters'),
  context: map('context'),
  topology_request: {
    t: 'block',
    to: 'topologyRequest',
    body: {
      required: { t: 'block', to: 'required', body: TOPOLOGY_LIST, post: topologies, concat: true },
      preferred: { t: 'block', to: 'preferred', body: TOPOLOGY_LIST, post: topologies, concat: true },
    },
  },
};

/** A structural problem found while converting (a block given twice). */
export interface ConvertProblem {
  steps: HclStep[];
  field: string;
  message: string;
}

/** Where each canonical path came from in the HCL text. */
export type PathSteps = Map<string, HclStep[]>;

const camel = (s: string): string => s.replace(/(?<=[A-Za-z0-9])_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Converts one body (hcl2json's shape) by `spec`. Records paths in `paths` and structural problems in `problems`. */
export function convertBody(
  raw: Record<string, unknown>,
  spec: Body,
  at: { path: PropertyKey[]; steps: HclStep[] },
  paths: PathSteps,
  problems: ConvertProblem[],
  labelOrder?: (parent: HclStep[], name: string) => string[],
): Record<string, unknown> {
  const recurse = (obj: Record<string, unknown>, body: Body, inner: { path: PropertyKey[]; steps: HclStep[] }): Record<string, unknown> =>
    convertBody(obj, body, inner, paths, problems, labelOrder);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const field = Object.hasOwn(spec, key) ? spec[key] : undefined;
    const step: HclStep = { name: key, nth: 0 };
    const here = (to: string | number, extra: HclStep = step): { path: PropertyKey[]; steps: HclStep[] } => {
      const path = [...at.path, to];
      const steps = [...at.steps, extra];
      paths.set(formatPath(path), steps);
      return { path, steps };
    };
    if (!field) {
      here(camel(key));
      // An own key even for "__proto__", so that the schema refuses it as unknown instead of it vanishing.
      Object.defineProperty(out, camel(key), { value, enumerable: true, writable: true, configurable: true });
      continue;
    }
    switch (field.t) {
      case 'attr':
        here(field.to);
        out[field.to] = value;
        break;
      case 'map': {
        here(field.to);
        const list = Array.isArray(value) ? value : [value];
        if (list.length > 1) problems.push({ steps: [...at.steps, { name: key, nth: 1 }], field: formatPath([...at.path, field.to]), message: `block "${key}" may appear only once` });
        out[field.to] = list[0];
        if (isObject(list[0])) {
          for (const k of Object.keys(list[0])) paths.set(formatPath([...at.path, field.to, k]), [...at.steps, step, { name: k, nth: 0 }]);
        }
        break;
      }
      case 'block': {
        const list = Array.isArray(value) ? value : [value];
        if (field.concat && field.post && list.length > 1) {
          // Each block converted at its own steps; the joined list is the field's (`volume init -json` writes one block per topology).
          const inner = here(field.to);
          const parts = list.map((item, n) => (isObject(item) ? field.post!(recurse(item, field.body, { path: inner.path, steps: [...at.steps, { name: key, nth: n }] })) : item));
          out[field.to] = parts.every(Array.isArray) ? parts.flat() : parts[0];
          break;
        }
        if (list.length > 1) problems.push({ steps: [...at.steps, { name: key, nth: 1 }], field: formatPath([...at.path, field.to]), message: `block "${key}" may appear only once` });
        const first = list[0];
        const inner = here(field.to);
        const obj = isObject(first) ? recurse(first, field.body, inner) : first;
        out[field.to] = field.post && isObject(obj) ? field.post(obj) : obj;
        break;
      }
      case 'blocks': {
        here(field.to);
        const list = Array.isArray(value) ? value : [value];
        out[field.to] = list.map((item, n) => {
          const inner = here(field.to, step);
          const elemPath = [...inner.path, n];
          const elemSteps = [...at.steps, { name: key, nth: n }];
          paths.set(formatPath(elemPath), elemSteps);
          return isObject(item) ? recurse(item, field.body, { path: elemPath, steps: elemSteps }) : item;
        });
        break;
      }
      case 'labeled':
      case 'labeledMap': {
        here(field.to);
        if (!isObject(value)) {
          out[field.to] = value;
          break;
        }
        const list: Record<string, unknown>[] = [];
        const byLabel: Record<string, unknown> = {};
        // hcl2json sorts labels; keep the order the user wrote them in.
        const source = labelOrder?.(at.steps, key) ?? [];
        const rank = (label: string): number => (source.includes(label) ? source.indexOf(label) : source.length);
        const entries = Object.entries(value).sort((a, b) => rank(a[0]) - rank(b[0]));
        for (const [label, bodies] of entries) {
          const items = Array.isArray(bodies) ? bodies : [bodies];
          items.forEach((item, n) => {
            const steps = [...at.steps, { name: key, label, nth: n }];
            if (n > 0) {
              problems.push({ steps, field: formatPath([...at.path, field.to]), message: `${key} "${label}" is defined twice` });
              return;
            }
            const path = field.t === 'labeled' ? [...at.path, field.to, list.length] : [...at.path, field.to, label];
            paths.set(formatPath(path), steps);
            const converted = isObject(item) ? recurse(item, field.body, { path, steps }) : {};
            if (field.t === 'labeled') {
              paths.set(formatPath([...path, field.labelAs]), steps);
              list.push({ [field.labelAs]: label, ...converted });
            } else byLabel[label] = converted;
          });
        }
        out[field.to] = field.t === 'labeled' ? list : byLabel;
        break;
      }
    }
  }
  return out;
}
