// The defaults Nomad's Canonicalize (api/jobs.go, api/tasks.go,
// api/services.go) fills into a job, where leaving the field out means the
// same thing to Berth. One list, two directions: an answer is filled with
// them (GET /v1/job/:id answers a canonical job, as Nomad's does), and a job
// read from Nomad's JSON has them cleared first, so that a canonical job
// sent back (`job inspect` piped to `job run -json`, Terraform's
// parse-then-register) is the same Berth job as the file it came from, not
// one that spells out its defaults.
//
// Defaults Berth does not share are not here: a service job without an
// update block rolls no deployment on Berth (Nomad fills one in), and a CSI
// plugin's stage_publish_base_dir defaults to <mount_dir>/mounts.

import { isDeepStrictEqual } from 'node:util';
import { defaultServiceName } from './service-spec.js';
import { isEmpty, isObject } from './nomad-table.js';

/** `fill`: set each default where the field is unset. `clear`: unset each field that holds exactly its default. */
export type DefaultsMode = 'fill' | 'clear';

type Obj = Record<string, unknown>;

const SECOND = 1_000_000_000;
/** Nomad's DefaultMigrateStrategy, which is also Berth's (migrateSchema). */
const DEFAULT_MIGRATE = { MaxParallel: 1, HealthCheck: 'checks', MinHealthyTime: 10 * SECOND, HealthyDeadline: 300 * SECOND };
const DEFAULT_EPHEMERAL_DISK = { Sticky: false, Migrate: false, SizeMB: 300 };
const REQUIRE_HEALTHY = 'require_healthy';
const SERVER_ZEROS: ReadonlyArray<[string, unknown]> = [
  ['Stop', false],
  ['ParentID', ''],
  ['ConsulNamespace', ''],
  ['VaultNamespace', ''],
  ['NomadTokenID', ''],
  ['Status', ''],
  ['StatusDescription', ''],
  ['Stable', false],
  ['Version', 0],
  ['CreateIndex', 0],
  ['ModifyIndex', 0],
  ['JobModifyIndex', 0],
];

/** The default identity Nomad's Task.Canonicalize gives a task without one. */
const DEFAULT_IDENTITY = {
  Name: 'default',
  Audience: ['nomadproject.io'],
  ChangeMode: '',
  ChangeSignal: '',
  Env: false,
  File: false,
  Filepath: '',
  ServiceName: '',
  TTL: 0,
  ExtraClaims: null,
};

/** A default identity that is neither in the env nor in a file (its audience is always Nomad's). */
function isUnexposedDefault(id: Obj): boolean {
  const named = id['Name'];
  if (named !== undefined && named !== null && named !== '' && named !== 'default') return false;
  return ['ChangeMode', 'ChangeSignal', 'Env', 'File', 'Filepath', 'ServiceName', 'TTL', 'ExtraClaims'].every((k) => isEmpty(id[k]));
}

const unset = (v: unknown): boolean => v === null || v === undefined || v === '';

function implied(obj: Obj, key: string, value: unknown, mode: DefaultsMode): void {
  if (value === null || value === undefined) return;
  if (mode === 'fill') {
    if (unset(obj[key])) obj[key] = structuredClone(value);
  } else if (isDeepStrictEqual(obj[key], value)) {
    obj[key] = null;
  }
}

const objects = (v: unknown): Obj[] => (Array.isArray(v) ? v.filter(isObject) : []);
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * Fills or clears Nomad's implied defaults in a Nomad job object, in place.
 * Takes any JSON (a user's file): what is not the expected shape is left
 * alone for the table to report. Never throws.
 */
export function nomadJobDefaults(job: Obj, mode: DefaultsMode): void {
  const id = text(job['ID']) ?? '';
  const type = text(job['Type']) ?? 'service';
  implied(job, 'Name', id || null, mode);
  const jobName = text(job['Name']) ?? id;
  implied(job, 'AllAtOnce', false, mode);
  implied(job, 'NodePool', 'default', mode);
  // The server's fields, zero until the server sets them (read, they are dropped anyway).
  for (const [key, zero] of SERVER_ZEROS) implied(job, key, zero, mode);
  if (isObject(job['Periodic'])) {
    implied(job['Periodic'], 'Spec', '', mode);
    implied(job['Periodic'], 'Specs', [], mode);
    implied(job['Periodic'], 'SpecType', 'cron', mode);
  }
  for (const group of objects(job['TaskGroups'])) {
    const groupName = text(group['Name']) ?? '';
    implied(group, 'EphemeralDisk', DEFAULT_EPHEMERAL_DISK, mode);
    // Filled before the tasks take the group's policy, cleared after they gave theirs back.
    const renderTemplates = (): void => void (isObject(group['RestartPolicy']) && implied(group['RestartPolicy'], 'RenderTemplates', false, mode));
    if (mode === 'fill') renderTemplates();
    implied(group, 'Migrate', isObject(job['Migrate']) ? job['Migrate'] : type === 'service' ? DEFAULT_MIGRATE : null, mode);
    for (const service of objects(group['Services'])) serviceDefaults(service, defaultServiceName(jobName, groupName, undefined), mode);
    for (const task of objects(group['Tasks'])) {
      implied(task, 'KillTimeout', 5 * SECOND, mode);
      // Nomad gives every task its default identity; one that asks for nothing is no identity block to Berth.
      if (mode === 'fill') implied(task, 'Identity', DEFAULT_IDENTITY, mode);
      else if (isObject(task['Identity']) && isUnexposedDefault(task['Identity'])) task['Identity'] = null;
      implied(task, 'Leader', false, mode);
      implied(task, 'RestartPolicy', isObject(group['RestartPolicy']) ? group['RestartPolicy'] : null, mode);
      if (isObject(task['Resources'])) implied(task['Resources'], 'Cores', 0, mode);
      for (const mount of objects(task['VolumeMounts'])) implied(mount, 'SELinuxLabel', '', mode);
      for (const tmpl of objects(task['Templates'])) {
        for (const key of ['SourcePath', 'DestPath', 'EmbeddedTmpl', 'ChangeSignal']) implied(tmpl, key, '', mode);
        implied(tmpl, 'Once', false, mode);
        implied(tmpl, 'VaultGrace', 0, mode);
      }
      for (const artifact of objects(task['Artifacts'])) implied(artifact, 'GetterInsecure', false, mode);
      const taskName = text(task['Name']) ?? '';
      for (const service of objects(task['Services'])) serviceDefaults(service, defaultServiceName(jobName, groupName, taskName), mode);
    }
    if (mode === 'clear') renderTemplates();
  }
}

function serviceDefaults(service: Obj, name: string, mode: DefaultsMode): void {
  // A check's on_update is its service's (read before the service's own is cleared).
  const onUpdate = text(service['OnUpdate']) ?? REQUIRE_HEALTHY;
  for (const check of objects(service['Checks'])) implied(check, 'OnUpdate', onUpdate, mode);
  implied(service, 'Name', name, mode);
  implied(service, 'OnUpdate', REQUIRE_HEALTHY, mode);
  implied(service, 'Cluster', 'default', mode);
}
