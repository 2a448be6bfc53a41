// Nomad's JSON forms -> Berth's canonical JSON. Nomad's API writes a job as
// `{"Job": {...}}` in PascalCase with durations in nanoseconds (what `nomad
// job run -json`, `job inspect` and `job init -json` print), and a volume as
// the API's CSIVolume (`ID`, `PluginID`, `RequestedCapabilities`...). Each is
// translated field by field from a table; a field Berth does not support is
// refused by name at its path when it carries a value, a field Nomad fills in
// with its defaults on every read (`Update`, `Migrate`...) is ignored and
// reported, and the server's own bookkeeping (`Status`, `CreateIndex`...) is
// ignored silently. Used by the CLI (job and volume files) and by the HTTP API.

import { formatPath, type JobProblem } from './job.js';

/** What a translation gives: the canonical input, where each of its paths came from, and what was refused or ignored. */
export interface NomadTranslation {
  input: Record<string, unknown>;
  /** Canonical path (`groups[0].tasks[0].driver`) -> path in the Nomad object (`TaskGroups[0].Tasks[0].Driver`). */
  origins: Map<string, string>;
  /** Fields refused, each at its Nomad path. */
  problems: JobProblem[];
  /** Nomad paths ignored because Berth has no such setting (a default Nomad filled in). */
  ignored: string[];
}

type Convert = (value: unknown, at: string, t: Translation) => unknown;

type Rule =
  /** An attribute, renamed (and converted). */
  | { to: string; conv?: Convert }
  /** A nested object. */
  | { to: string; obj: Table }
  /** A list of objects. */
  | { to: string; list: Table }
  /** A map of name -> object. */
  | { to: string; byName: Table }
  /** Server bookkeeping or a restatement (a volume's Name under its key): dropped silently. */
  | { drop: true }
  /** Something Berth has no equivalent for: refused when it carries a value. */
  | { unsupported: string }
  /** Filled in by Nomad with its defaults: ignored (reported) when it carries a value. */
  | { defaulted: true };

type Table = Readonly<Record<string, Rule>>;

interface Translation {
  origins: Map<string, string>;
  problems: JobProblem[];
  ignored: string[];
}

const attr = (to: string, conv?: Convert): Rule => (conv ? { to, conv } : { to });
/** A field Berth takes only at its one value (or left empty): dropped then, refused otherwise. */
const onlyValue = (allowed: string, message: string): Rule => ({
  to: '',
  conv: (v, at, t) => {
    if (v !== allowed && !isEmpty(v)) t.problems.push({ path: at, message });
    return undefined;
  },
});
const DROP: Rule = { drop: true };
const DEFAULTED: Rule = { defaulted: true };
const unsupported = (what: string): Rule => ({ unsupported: what });

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** Null, "", 0, false, and lists and objects of nothing else: what Nomad writes for a setting left alone. */
function isEmpty(v: unknown): boolean {
  if (v === null || v === undefined || v === '' || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.every(isEmpty);
  if (isObject(v)) return Object.values(v).every(isEmpty);
  return false;
}

/** Nanoseconds (Nomad's durations in JSON) -> a duration string: 30000000000 -> "30s". Strings pass through. */
export function nanosToDuration(value: unknown): unknown {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) return value;
  const units: Array<[string, number]> = [
    ['h', 3_600_000_000_000],
    ['m', 60_000_000_000],
    ['s', 1_000_000_000],
    ['ms', 1_000_000],
  ];
  for (const [unit, ns] of units) if (value % ns === 0 && value > 0) return `${value / ns}${unit}`;
  return `${Math.max(0, Math.round(value / 1_000_000))}ms`;
}

/** A duration; 0 is how Nomad writes one left unset. */
const duration: Convert = (v) => (v === 0 ? undefined : nanosToDuration(v));
/** Nomad's kill_timeout is 5s unless set; Berth's task kill timeout is the client's, so only another value is kept (and refused until tasks have one). */
const killTimeout: Convert = (v) => (v === 0 || v === 5_000_000_000 ? undefined : nanosToDuration(v));
/** Nomad writes 0 for a number left unset (MemoryMaxMB, Cores): unset here too. */
const unsetIfZero: Convert = (v) => (v === 0 ? undefined : v);

/** Nomad's MigrateStrategy; its durations (ns) become duration strings the schema reads as milliseconds. */
const MIGRATE: Table = {
  MaxParallel: attr('maxParallel', unsetIfZero),
  HealthCheck: attr('healthCheck'),
  MinHealthyTime: attr('minHealthyTimeMs', duration),
  HealthyDeadline: attr('healthyDeadlineMs', duration),
};
const RESTART: Table = { Attempts: attr('attempts'), Interval: attr('interval', duration), Delay: attr('delay', duration), Mode: attr('mode'), RenderTemplates: DEFAULTED };
const RESCHEDULE: Table = {
  Attempts: attr('attempts'),
  Interval: attr('interval', duration),
  Delay: attr('delay', duration),
  DelayFunction: attr('delayFunction'),
  MaxDelay: attr('maxDelay', duration),
  Unlimited: attr('unlimited'),
};
/** Nanoseconds -> milliseconds; 0 is how Nomad writes one left unset. */
const nanosToMs: Convert = (v) => (v === 0 ? undefined : typeof v === 'number' ? Math.round(v / 1_000_000) : v);
/** Nomad's UpdateStrategy; "" or 0 is a field left unset. */
const UPDATE: Table = {
  MaxParallel: attr('maxParallel'),
  HealthCheck: attr('healthCheck', (v) => (v === '' ? undefined : v)),
  MinHealthyTime: attr('minHealthyTimeMs', nanosToMs),
  HealthyDeadline: attr('healthyDeadlineMs', nanosToMs),
  ProgressDeadline: attr('progressDeadlineMs', nanosToMs),
  AutoRevert: attr('autoRevert'),
  AutoPromote: attr('autoPromote'),
  Canary: attr('canary'),
  Stagger: attr('staggerMs', nanosToMs),
};
const MOUNT_OPTIONS: Table = { FSType: attr('fsType'), MountFlags: attr('mountFlags') };
const GROUP_VOLUME: Table = {
  Name: DROP,
  Type: attr('type'),
  Source: attr('source'),
  ReadOnly: attr('readOnly'),
  AccessMode: attr('accessMode'),
  AttachmentMode: attr('attachmentMode'),
  MountOptions: { to: 'mountOptions', obj: MOUNT_OPTIONS },
  PerAlloc: attr('perAlloc'),
  Sticky: unsupported('sticky volumes'),
};
/** Nomad's Port: `Value` is the static port (0 in DynamicPorts), `To` the mapped one (0: unset). */
const PORT: Table = { Label: attr('label'), Value: attr('static', unsetIfZero), To: attr('to', unsetIfZero), HostNetwork: attr('hostNetwork'), IgnoreCollision: unsupported('ignore_collision on ports') };
const NETWORK: Table = {
  Mode: attr('mode'),
  // Both lists become `ports` (nomadJobToSpec joins them, static ones first).
  ReservedPorts: { to: 'reservedPorts', list: PORT },
  DynamicPorts: { to: 'dynamicPorts', list: PORT },
  DNS: { to: 'dns', obj: { Servers: attr('servers'), Searches: attr('searches'), Options: attr('options') } },
  Device: DEFAULTED,
  CIDR: DEFAULTED,
  IP: DEFAULTED,
  MBits: DEFAULTED,
  Hostname: DEFAULTED,
};
const CHECK_RESTART: Table = { Limit: attr('limit'), Grace: attr('grace', duration), IgnoreWarnings: attr('ignoreWarnings') };
const CHECK: Table = {
  Name: attr('name'),
  Type: attr('type'),
  Command: attr('command'),
  Args: attr('args'),
  Path: attr('path'),
  Protocol: attr('protocol'),
  PortLabel: attr('port'),
  AddressMode: attr('addressMode'),
  Interval: attr('interval', duration),
  Timeout: attr('timeout', duration),
  InitialStatus: attr('initialStatus'),
  Method: attr('method'),
  Header: attr('header'),
  CheckRestart: { to: 'checkRestart', obj: CHECK_RESTART },
  TaskName: attr('task'),
  SuccessBeforePassing: attr('successBeforePassing'),
  FailuresBeforeCritical: attr('failuresBeforeCritical'),
  FailuresBeforeWarning: unsupported('failures_before_warning'),
  Expose: unsupported('exposed checks (Consul Connect)'),
  GRPCService: unsupported('grpc checks'),
  GRPCUseTLS: DEFAULTED,
  TLSServerName: unsupported('https checks'),
  TLSSkipVerify: DEFAULTED,
  Body: unsupported('check request bodies'),
  OnUpdate: DEFAULTED,
};
const SERVICE: Table = {
  Name: attr('name'),
  TaskName: attr('taskName'),
  PortLabel: attr('port'),
  AddressMode: attr('addressMode'),
  Address: attr('address'),
  Tags: attr('tags'),
  Meta: attr('meta'),
  Provider: attr('provider'),
  Checks: { to: 'checks', list: CHECK },
  EnableTagOverride: DEFAULTED,
  CanaryTags: unsupported('canary tags'),
  CanaryMeta: unsupported('canary meta'),
  TaggedAddresses: unsupported('tagged addresses'),
  Connect: unsupported('Consul Connect'),
  Identity: unsupported('workload identities'),
  Namespace: DEFAULTED,
  Cluster: DEFAULTED,
  OnUpdate: DEFAULTED,
};
// Placement rules: Nomad's LTarget/Operand/RTarget.
const CONSTRAINT: Table = { LTarget: attr('attribute'), Operand: attr('operator'), RTarget: attr('value') };
const CONSTRAINTS: Rule = { to: 'constraints', list: CONSTRAINT };
const AFFINITIES: Rule = { to: 'affinities', list: { ...CONSTRAINT, Weight: attr('weight') } };
const SPREADS: Rule = { to: 'spreads', list: { Attribute: attr('attribute'), Weight: attr('weight'), SpreadTarget: { to: 'targets', list: { Value: attr('value'), Percent: attr('percent') } } } };
const TASK: Table = {
  Name: attr('name'),
  Driver: attr('driver'),
  Config: attr('config'),
  Env: attr('env'),
  User: attr('user'),
  Meta: attr('meta'),
  KillTimeout: attr('killTimeout', killTimeout),
  KillSignal: attr('killSignal'),
  ShutdownDelay: attr('shutdownDelay', duration),
  Lifecycle: { to: 'lifecycle', obj: { Hook: attr('hook'), Sidecar: attr('sidecar') } },
  Resources: {
    to: 'resources',
    obj: {
      CPU: attr('cpuMhz', unsetIfZero),
      Cores: attr('cores', unsetIfZero),
      MemoryMB: attr('memoryMb', unsetIfZero),
      MemoryMaxMB: attr('memoryMaxMb', unsetIfZero),
      DiskMB: DEFAULTED,
      IOPS: DEFAULTED,
      Networks: unsupported('task networks (give the group a network block)'),
      Devices: unsupported('devices'),
      NUMA: unsupported('NUMA placement'),
      SecretsMB: DEFAULTED,
    },
  },
  VolumeMounts: { to: 'volumeMounts', list: { Volume: attr('volume'), Destination: attr('destination'), ReadOnly: attr('readOnly'), PropagationMode: attr('propagationMode'), SELinuxLabel: DEFAULTED } },
  CSIPluginConfig: {
    to: 'csiPlugin',
    obj: { ID: attr('id'), Type: attr('type'), MountDir: attr('mountDir'), StagePublishBaseDir: attr('stagePublishBaseDir'), HealthTimeout: attr('healthTimeout', duration) },
  },
  LogConfig: {
    to: 'logs',
    obj: { MaxFiles: attr('maxFiles'), MaxFileSizeMB: attr('maxFileSizeMb'), Disabled: attr('disabled'), Enabled: { to: 'disabled', conv: (v) => (typeof v === 'boolean' ? !v : v) } },
  },
  DispatchPayload: { to: 'dispatchPayload', obj: { File: attr('file') } },
  Templates: {
    to: 'templates',
    list: {
      SourcePath: attr('source'),
      DestPath: attr('destination'),
      EmbeddedTmpl: attr('data'),
      ChangeMode: attr('changeMode'),
      ChangeSignal: attr('changeSignal'),
      Splay: attr('splay', duration),
      Perms: attr('perms'),
      Envvars: attr('env'),
      LeftDelim: attr('leftDelimiter'),
      RightDelim: attr('rightDelimiter'),
      Uid: DEFAULTED,
      Gid: DEFAULTED,
      VaultGrace: DEFAULTED,
      Wait: DEFAULTED,
      ErrMissingKey: DEFAULTED,
      ChangeScript: unsupported('template change scripts'),
      Once: DEFAULTED,
    },
  },
  Artifacts: { to: 'artifacts', list: { GetterSource: attr('source'), RelativeDest: attr('destination'), GetterOptions: attr('options'), GetterMode: attr('mode'), GetterHeaders: attr('headers'), GetterInsecure: DEFAULTED } },
  Constraints: CONSTRAINTS,
  Affinities: AFFINITIES,
  Services: { to: 'services', list: SERVICE },
  Vault: unsupported('Vault'),
  Consul: unsupported('Consul'),
  Identity: unsupported('workload identities'),
  Identities: unsupported('workload identities'),
  Kind: DEFAULTED,
  Leader: unsupported('leader tasks'),
  ScalingPolicies: unsupported('scaling policies'),
  RestartPolicy: { to: 'restart', obj: RESTART },
  Schedule: unsupported('task schedules'),
  Actions: unsupported('task actions'),
};
const GROUP: Table = {
  Name: attr('name'),
  Count: attr('count'),
  Tasks: { to: 'tasks', list: TASK },
  RestartPolicy: { to: 'restart', obj: RESTART },
  ReschedulePolicy: { to: 'reschedule', obj: RESCHEDULE },
  Volumes: { to: 'volumes', byName: GROUP_VOLUME },
  Meta: attr('meta'),
  ShutdownDelay: attr('shutdownDelay', duration),
  // A list of at most one: translated by nomadJobToSpec after the table walk.
  Networks: DROP,
  EphemeralDisk: DEFAULTED,
  Update: { to: 'update', obj: UPDATE },
  Migrate: { to: 'migrate', obj: MIGRATE },
  Constraints: CONSTRAINTS,
  Affinities: AFFINITIES,
  Spreads: SPREADS,
  Services: { to: 'services', list: SERVICE },
  Scaling: unsupported('scaling'),
  Consul: unsupported('Consul'),
  StopAfterClientDisconnect: unsupported('stop_after_client_disconnect'),
  MaxClientDisconnect: unsupported('max_client_disconnect'),
  PreventRescheduleOnLost: DEFAULTED,
  Disconnect: DEFAULTED,
};
const PERIODIC: Table = {
  Enabled: attr('enabled'),
  Spec: { to: 'crons', conv: (v) => (typeof v === 'string' && v ? [v] : v) },
  Specs: attr('crons'),
  SpecType: onlyValue('cron', 'only "cron" periodic specs are supported'),
  ProhibitOverlap: attr('prohibitOverlap'),
  TimeZone: attr('timeZone'),
};
/** The job object of Nomad's `{"Job": {...}}`. */
const JOB: Table = {
  ID: attr('id'),
  // Berth's jobs have one name, their ID.
  Name: DROP,
  Namespace: attr('namespace'),
  Type: attr('type'),
  Priority: attr('priority', unsetIfZero),
  Datacenters: attr('datacenters'),
  TaskGroups: { to: 'groups', list: GROUP },
  Meta: attr('meta'),
  Periodic: { to: 'periodic', obj: PERIODIC },
  ParameterizedJob: { to: 'parameterized', obj: { Payload: attr('payload'), MetaRequired: attr('metaRequired'), MetaOptional: attr('metaOptional') } },
  Region: onlyValue('global', 'Berth has no regions; leave Region out (or "global")'),
  AllAtOnce: DEFAULTED,
  Update: { to: 'update', obj: UPDATE },
  Constraints: CONSTRAINTS,
  Affinities: AFFINITIES,
  Spreads: SPREADS,
  Migrate: { to: 'migrate', obj: MIGRATE },
  Multiregion: unsupported('multiregion jobs'),
  Vault: unsupported('Vault'),
  Consul: unsupported('Consul'),
  UI: DEFAULTED,
  NodePool: onlyValue('default', 'Berth has no node pools; leave NodePool out (or "default")'),
  // What the server keeps about a job, in `job inspect` output.
  ...Object.fromEntries(
    [
      'Stop', 'Status', 'StatusDescription', 'Stable', 'Version', 'SubmitTime', 'CreateIndex', 'ModifyIndex', 'JobModifyIndex', 'ParentID', 'Dispatched',
      'DispatchIdempotencyToken', 'Payload', 'ConsulToken', 'ConsulNamespace', 'VaultToken', 'VaultNamespace', 'NomadTokenID', 'VersionTag', 'Tags',
    ].map((k) => [k, DROP]),
  ),
};

/** The API's CSIVolume (`PUT /v1/volume/csi/:id` takes `{"Volumes": [...]}`). */
const VOLUME: Table = {
  ID: attr('id'),
  Name: attr('name'),
  Namespace: attr('namespace'),
  ExternalID: attr('externalId'),
  PluginID: attr('pluginId'),
  Provider: DROP,
  ProviderVersion: DROP,
  RequestedCapacityMin: attr('capacityMinBytes'),
  RequestedCapacityMax: attr('capacityMaxBytes'),
  RequestedCapabilities: { to: 'capabilities', list: { AccessMode: attr('accessMode'), AttachmentMode: attr('attachmentMode') } },
  AccessMode: attr('accessMode'),
  AttachmentMode: attr('attachmentMode'),
  MountOptions: { to: 'mountOptions', obj: MOUNT_OPTIONS },
  Secrets: attr('secrets'),
  Parameters: attr('parameters'),
  Context: attr('context'),
  SnapshotID: attr('snapshotId'),
  CloneID: attr('cloneId'),
  RequestedTopologies: {
    to: 'topologyRequest',
    obj: {
      Required: { to: 'required', conv: segmentsOf },
      Preferred: { to: 'preferred', conv: segmentsOf },
    },
  },
  Topologies: DROP,
  ...Object.fromEntries(
    [
      'Capacity', 'Schedulable', 'ControllerRequired', 'ControllersHealthy', 'ControllersExpected', 'NodesHealthy', 'NodesExpected', 'ResourceExhausted',
      'CreateIndex', 'ModifyIndex', 'CreateTime', 'ModifyTime', 'ReadAllocs', 'WriteAllocs', 'ReadClaims', 'WriteClaims', 'PastClaims', 'Allocations',
    ].map((k) => [k, DROP]),
  ),
};

// [{ "Segments": { "rack": "R1" } }] -> [{ "rack": "R1" }]
function segmentsOf(v: unknown): unknown {
  return Array.isArray(v) ? v.map((t) => (isObject(t) && isObject(t['Segments']) ? t['Segments'] : t)) : v;
}

function translateObject(raw: Record<string, unknown>, table: Table, at: { canon: PropertyKey[]; nomad: PropertyKey[] }, t: Translation): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(raw)) {
    const nomadPath = [...at.nomad, key];
    const where = formatPath(nomadPath);
    const rule = Object.hasOwn(table, key) ? table[key] : undefined;
    if (!rule) {
      if (!isEmpty(value)) t.problems.push({ path: where, message: `unknown field "${key}" (not part of Nomad's job or volume JSON that Berth reads)` });
      continue;
    }
    if ('drop' in rule) continue;
    if ('defaulted' in rule) {
      if (!isEmpty(value)) t.ignored.push(where);
      continue;
    }
    if ('unsupported' in rule) {
      if (!isEmpty(value)) t.problems.push({ path: where, message: `Berth does not support ${rule.unsupported}; remove "${key}"` });
      continue;
    }
    // Nomad writes null and "" for what was left unset.
    if (value === null || value === undefined || value === '') continue;
    const canon = [...at.canon, rule.to];
    const record = (path: PropertyKey[], nomad: PropertyKey[]): void => void t.origins.set(formatPath(path), formatPath(nomad));
    if ('obj' in rule) {
      record(canon, nomadPath);
      out[rule.to] = isObject(value) ? translateObject(value, rule.obj, { canon, nomad: nomadPath }, t) : value;
    } else if ('list' in rule) {
      record(canon, nomadPath);
      out[rule.to] = Array.isArray(value)
        ? value.map((item, i) => {
            record([...canon, i], [...nomadPath, i]);
            return isObject(item) ? translateObject(item, rule.list, { canon: [...canon, i], nomad: [...nomadPath, i] }, t) : item;
          })
        : value;
    } else if ('byName' in rule) {
      record(canon, nomadPath);
      out[rule.to] = isObject(value)
        ? Object.fromEntries(
            Object.entries(value).map(([name, item]) => {
              record([...canon, name], [...nomadPath, name]);
              return [name, isObject(item) ? translateObject(item, rule.byName, { canon: [...canon, name], nomad: [...nomadPath, name] }, t) : item];
            }),
          )
        : value;
    } else {
      const converted = rule.conv ? rule.conv(value, where, t) : value;
      if (rule.to && converted !== undefined) {
        record(canon, nomadPath);
        out[rule.to] = converted;
      }
    }
  }
  return out;
}

function translate(raw: Record<string, unknown>, table: Table, prefix: PropertyKey[]): NomadTranslation {
  const t: Translation = { origins: new Map(), problems: [], ignored: [] };
  t.origins.set('', formatPath(prefix));
  const input = translateObject(raw, table, { canon: [], nomad: prefix }, t);
  return { input, ...t };
}

/** True for Nomad's API job JSON: a `Job` object, or a job object with PascalCase `ID` and `TaskGroups`. */
export function isNomadJobJson(doc: unknown): boolean {
  if (!isObject(doc)) return false;
  if (isObject(doc['Job']) && Object.keys(doc).every((k) => /^[A-Z]/.test(k))) return true;
  return 'TaskGroups' in doc || ('ID' in doc && !('id' in doc));
}

/**
 * Nomad's API job JSON (`{"Job": {...}}` or the job object itself) ->
 * Berth's canonical job input, with Nomad paths (`Job.TaskGroups[0].Name`)
 * in `origins` and `problems`. Also takes the `{"Job": ...}` registration
 * body of `POST /v1/jobs` (other top-level fields of it, such as
 * `EnforceIndex`, are ignored). Pure; never throws.
 */
export function nomadJobToSpec(doc: Record<string, unknown>): NomadTranslation {
  const wrapped = isObject(doc['Job']);
  const job = wrapped ? (doc['Job'] as Record<string, unknown>) : doc;
  const out = translate(job, JOB, wrapped ? ['Job'] : []);
  // A Nomad job with its group's network at the group level: Networks is a list of at most one.
  const groups = Array.isArray(job['TaskGroups']) ? job['TaskGroups'] : [];
  groups.forEach((g, gi) => {
    if (!isObject(g) || !Array.isArray(g['Networks']) || isEmpty(g['Networks'])) return;
    const at = [...(wrapped ? ['Job'] : []), 'TaskGroups', gi, 'Networks'];
    const nets = g['Networks'] as unknown[];
    if (nets.length > 1) out.problems.push({ path: formatPath([...at, 1]), message: 'a group has at most one network' });
    const t: Translation = { origins: out.origins, problems: out.problems, ignored: out.ignored };
    const canon = ['groups', gi, 'network'];
    out.origins.set(formatPath(canon), formatPath([...at, 0]));
    const group = (out.input['groups'] as Array<Record<string, unknown>>)[gi];
    if (group && isObject(nets[0])) group['network'] = joinPorts(translateObject(nets[0], NETWORK, { canon, nomad: [...at, 0] }, t), canon, out.origins);
  });
  return out;
}

/**
 * A translated Nomad network's ReservedPorts and DynamicPorts -> Berth's one
 * `ports` list (reserved first), their origins moved along. A port in
 * ReservedPorts keeps its `static`; one in DynamicPorts has none.
 */
function joinPorts(net: Record<string, unknown>, canon: PropertyKey[], origins: Map<string, string>): Record<string, unknown> {
  const { reservedPorts, dynamicPorts, ...rest } = net;
  if (reservedPorts === undefined && dynamicPorts === undefined) return net;
  const ports: unknown[] = [];
  const base = formatPath([...canon, 'ports']);
  for (const [key, list] of [['reservedPorts', reservedPorts], ['dynamicPorts', dynamicPorts]] as const) {
    if (!Array.isArray(list)) continue;
    const from = formatPath([...canon, key]);
    list.forEach((p, i) => {
      const n = ports.length;
      for (const [path, nomad] of [...origins]) {
        if (path === `${from}[${i}]` || path.startsWith(`${from}[${i}].`)) origins.set(`${base}[${n}]${path.slice(`${from}[${i}]`.length)}`, nomad);
      }
      ports.push(p);
    });
    if (!origins.has(base)) origins.set(base, origins.get(from) ?? '');
  }
  return { ...rest, ports };
}

/**
 * Nomad's API volume (`{"Volumes": [vol]}`, `{"Volume": vol}` or the CSIVolume
 * object, PascalCase) -> Berth's canonical volume input. Pure; never throws.
 * `{"Volumes": [...]}` must hold exactly one volume (a problem otherwise).
 */
export function nomadVolumeToSpec(doc: Record<string, unknown>): NomadTranslation {
  if (Array.isArray(doc['Volumes'])) {
    const list = doc['Volumes'] as unknown[];
    if (list.length !== 1 || !isObject(list[0])) {
      return { input: {}, origins: new Map(), problems: [{ path: 'Volumes', message: 'give exactly one volume' }], ignored: [] };
    }
    return translate(list[0], VOLUME, ['Volumes', 0]);
  }
  if (isObject(doc['Volume'])) return translate(doc['Volume'], VOLUME, ['Volume']);
  return translate(doc, VOLUME, []);
}

/** True for Nomad's API volume JSON (PascalCase `ID`/`PluginID`, or `{"Volumes": [...]}` / `{"Volume": {...}}`). */
export function isNomadVolumeJson(doc: unknown): boolean {
  if (!isObject(doc)) return false;
  return Array.isArray(doc['Volumes']) || isObject(doc['Volume']) || 'PluginID' in doc || ('ID' in doc && !('id' in doc));
}
