// Nomad's Job JSON <-> Berth's canonical job spec, both ways by the same
// tables (nomad-job-tables.ts): a job as `nomad job run -json`, `job
// inspect`, Nomad's Go client and `PUT /v1/jobs` write it (`{"Job": {...}}`,
// PascalCase, durations in nanoseconds) is read into Berth's canonical job
// input; a canonical spec is written as Nomad's Job, every field of the
// API's shape present (src/api's Job), optionally canonicalized as Nomad's
// server answers it. Used by the CLI (job files, what it sends) and by the
// HTTP API (request bodies, answers).

import type { Job as NomadJob, NetworkResource, TaskGroup as NomadGroup, WorkloadIdentity } from '../api/index.js';
import { formatPath } from './job-parse.js';
import type { JobSpec } from './job.js';
import { nomadJobDefaults } from './nomad-job-defaults.js';
import { NOMAD_SHAPES } from './nomad-job-shapes.js';
import { IDENTITY, JOB, NETWORK } from './nomad-job-tables.js';
import { HORIZONTAL } from './scaling-policy.js';
import { DEFAULT_IDENTITY_NAME } from './workload-identity.js';
import { isEmpty, isObject, readNomad, readObject, writeObject, type NomadTranslation, type ReadAt, type Translation } from './nomad-table.js';

/** True for Nomad's API job JSON: a `Job` object, or a job object with PascalCase `ID` and `TaskGroups`. */
export function isNomadJobJson(doc: unknown): boolean {
  if (!isObject(doc)) return false;
  if (isObject(doc['Job']) && Object.keys(doc).every((k) => /^[A-Z]/.test(k))) return true;
  return 'TaskGroups' in doc || ('ID' in doc && !('id' in doc));
}

/**
 * Nomad's API job JSON (`{"Job": {...}}` or the job object itself) ->
 * Berth's canonical job input, with Nomad paths (`Job.TaskGroups[0].Name`)
 * in `origins` and `problems`. Also takes the registration body of `PUT
 * /v1/jobs` (`{"Job": ..., "EnforceIndex": ...}`: the other top-level fields
 * are the route's to read). A field left out, null or "" is unset; a
 * default Nomad's Canonicalize fills in where Berth means the same by
 * leaving it out is unset too (nomad-job-defaults.ts), so a canonical job
 * reads as the job it was made from. Never throws. Does not change `doc`,
 * unless `consume` says the caller gives it up (a request body parsed for
 * this read): then its job's defaults are cleared in place rather than in
 * a copy (a registration's copy cost as much as reading its fields).
 */
export function nomadJobToSpec(doc: Record<string, unknown>, opts: { consume?: boolean } = {}): NomadTranslation {
  const { job, prefix } = clearedJob(doc, opts);
  return readClearedJob(job, prefix, false);
}

/** What readNomadJobQuick gives: the canonical input, whether it read without a problem, and the read with paths. */
export interface QuickNomadRead {
  /** The canonical input, the same as nomadJobToSpec's. */
  input: Record<string, unknown>;
  /** No field was refused: `input` is all there is to check. */
  clean: boolean;
  /**
   * The same job read again with origins and problems at their Nomad paths:
   * nomadJobToSpec's translation of `doc`. Made once, at the first call.
   */
  full(): NomadTranslation;
}

/**
 * nomadJobToSpec without the paths: the same input, but no origin recorded
 * and no Nomad path made, for a registration, which needs them only when
 * something is wrong (a field refused here, the schema's or the state's
 * problems later: `full()` reads the job again for those). Every field a
 * job sends cost a Map entry and two printed paths, and their garbage, on
 * every registration. The job read (`doc`'s, or its copy) is kept for
 * `full()`: nothing may change it after. Never throws.
 */
export function readNomadJobQuick(doc: Record<string, unknown>, opts: { consume?: boolean } = {}): QuickNomadRead {
  const { job, prefix } = clearedJob(doc, opts);
  const quick = readClearedJob(job, prefix, true);
  let full: NomadTranslation | undefined;
  // Read again as it is: its defaults are cleared already (clearing is not always idempotent: a task's restart policy).
  return { input: quick.input, clean: quick.problems.length === 0, full: () => (full ??= readClearedJob(job, prefix, false)) };
}

/** The job object of `doc` (or its copy) with Nomad's defaults cleared, and its path in `doc`. */
function clearedJob(doc: Record<string, unknown>, opts: { consume?: boolean }): { job: Record<string, unknown>; prefix: PropertyKey[] } {
  const wrapped = isObject(doc['Job']);
  const given = wrapped ? (doc['Job'] as Record<string, unknown>) : doc;
  const job = opts.consume ? given : structuredClone(given);
  nomadJobDefaults(job, 'clear');
  return { job, prefix: wrapped ? ['Job'] : [] };
}

/** Reads a job whose defaults were cleared; `quick` records no origin and makes no path (readObject's quick read). */
function readClearedJob(job: Record<string, unknown>, prefix: PropertyKey[], quick: boolean): NomadTranslation {
  const out = readNomad(job, JOB, prefix, { quick });
  const t: Translation = { origins: out.origins, problems: out.problems, ignored: out.ignored };
  // A group's network: Nomad's Networks is a list of at most one.
  const groups = Array.isArray(job['TaskGroups']) ? job['TaskGroups'] : [];
  groups.forEach((g, gi) => {
    if (!isObject(g) || !Array.isArray(g['Networks']) || isEmpty(g['Networks'])) return;
    const at = [...prefix, 'TaskGroups', gi, 'Networks'];
    const nets = g['Networks'] as unknown[];
    if (nets.length > 1) out.problems.push({ path: formatPath([...at, 1]), message: 'a group has at most one network' });
    const canon = ['groups', gi, 'network'];
    if (!quick) out.origins.set(formatPath(canon), formatPath([...at, 0]));
    const group = (out.input['groups'] as Array<Record<string, unknown>>)[gi];
    if (group && isObject(nets[0])) group['network'] = joinPorts(readObject(nets[0], NETWORK, quick ? undefined : { canon, nomad: [...at, 0] }, t), canon, quick ? undefined : out.origins);
  });
  groups.forEach((g, gi) => {
    const tasks = isObject(g) && Array.isArray(g['Tasks']) ? g['Tasks'] : [];
    tasks.forEach((task, ti) => {
      const into = ((out.input['groups'] as Array<Record<string, unknown>> | undefined)?.[gi]?.['tasks'] as Array<Record<string, unknown>> | undefined)?.[ti];
      if (isObject(task) && into) readIdentities(task, into, quick ? undefined : { canon: ['groups', gi, 'tasks', ti, 'identities'], nomad: [...prefix, 'TaskGroups', gi, 'Tasks', ti] }, t);
    });
  });
  return out;
}

/**
 * A Nomad task's Identities (the named ones) and Identity (the default one,
 * after them) -> Berth's one `identities` list, in the order the job spec
 * keeps them (identitiesSchema puts the default last). `at` undefined: a
 * quick read (no origins).
 */
function readIdentities(task: Record<string, unknown>, into: Record<string, unknown>, at: ReadAt | undefined, t: Translation): void {
  const list: unknown[] = [];
  const read = (raw: unknown, nomad: PropertyKey[] | undefined): void => {
    const here = at && nomad && { canon: [...at.canon, list.length], nomad };
    if (here) t.origins.set(formatPath(here.canon), formatPath(here.nomad));
    list.push(isObject(raw) ? readObject(raw, IDENTITY, here, t) : raw);
  };
  const named = task['Identities'];
  if (Array.isArray(named)) named.forEach((raw, i) => read(raw, at && [...at.nomad, 'Identities', i]));
  else if (!isEmpty(named)) read(named, at && [...at.nomad, 'Identities']);
  if (!isEmpty(task['Identity'])) read(task['Identity'], at && [...at.nomad, 'Identity']);
  if (list.length === 0) return;
  if (at) t.origins.set(formatPath(at.canon), formatPath([...at.nomad, task['Identities'] ? 'Identities' : 'Identity']));
  into['identities'] = list;
}

/**
 * A read Nomad network's ReservedPorts and DynamicPorts -> Berth's one
 * `ports` list (reserved first: Nomad's JSON does not keep the order they
 * were written in), their origins moved along (none in a quick read). A
 * port in ReservedPorts keeps its `static`; one in DynamicPorts has none.
 */
function joinPorts(net: Record<string, unknown>, canon: PropertyKey[], origins: Map<string, string> | undefined): Record<string, unknown> {
  const { reservedPorts, dynamicPorts, ...rest } = net;
  if (reservedPorts === undefined && dynamicPorts === undefined) return net;
  if (!origins) return { ...rest, ports: [reservedPorts, dynamicPorts].flatMap((list) => (Array.isArray(list) ? list : [])) };
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

/** Options of specToNomadJob. */
export interface NomadJobOptions {
  /**
   * Fill the defaults Nomad's Canonicalize fills where Berth means the same
   * (what Nomad's server answers, and `/v1/jobs/parse` with Canonicalize);
   * false (the default): Nomad's zero values there, as Nomad's Go client
   * sends a parsed job file.
   */
  canonicalize?: boolean;
}

/**
 * A canonical job spec (parsed, defaults applied: a JobSpec or a stored
 * job's spec) -> Nomad's Job, every field of src/api's `Job` present, in
 * its order. What only the server knows (Status, Version, the indexes) is
 * zero: nomad-job-stored.ts writes a stored job. Nothing is redacted here:
 * pass a `publicJob` for an answer. Pure; does not change `spec`.
 * nomadJobToSpec reads the result back into the same spec, but for the
 * order of a group's ports (static ones first).
 */
export function specToNomadJob(spec: JobSpec, opts: NomadJobOptions = {}): NomadJob {
  const job = writeObject(spec as unknown as Record<string, unknown>, JOB, NOMAD_SHAPES.Job) as NomadJob;
  (job.TaskGroups ?? []).forEach((group: NomadGroup, i) => {
    const network = spec.groups[i]?.network;
    if (network) group.Networks = [writeNetwork(network)];
    if (group.Scaling) group.Scaling.Type = HORIZONTAL;
    (group.Tasks ?? []).forEach((task, ti) => {
      const ids = spec.groups[i]?.tasks[ti]?.identities ?? [];
      const write = (id: (typeof ids)[number]): WorkloadIdentity => writeObject(id as unknown as Record<string, unknown>, IDENTITY, NOMAD_SHAPES.WorkloadIdentity) as WorkloadIdentity;
      const byDefault = ids.find((id) => id.name === DEFAULT_IDENTITY_NAME);
      const named = ids.filter((id) => id.name !== DEFAULT_IDENTITY_NAME);
      task.Identity = byDefault ? write(byDefault) : null;
      task.Identities = named.length ? named.map(write) : null;
    });
  });
  if (opts.canonicalize) nomadJobDefaults(job as unknown as Record<string, unknown>, 'fill');
  return job;
}

/** Berth's network -> Nomad's, its ports split into static (ReservedPorts) and dynamic ones. */
function writeNetwork(network: JobSpec['groups'][number]['network']): NetworkResource {
  const reservedPorts = network.ports.filter((p) => p.static !== undefined);
  const dynamicPorts = network.ports.filter((p) => p.static === undefined);
  return writeObject({ ...network, reservedPorts, dynamicPorts }, NETWORK, NOMAD_SHAPES.NetworkResource) as NetworkResource;
}
