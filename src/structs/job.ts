// A job: what a user asks Berth to run, in its canonical JSON form (a later
// issue parses HCL into this same shape). The zod schema is the one place the
// shape, its defaults and its field-level rules live; the server adds the
// checks that need its state (known plugins, registered volumes). Its
// canonical transforms are in job-canonical.ts, parsing with problems at
// field paths in job-parse.ts, the job as the server stores it in stored-job.ts.

import { z } from 'zod';
import { ACCESS_MODES, ATTACHMENT_MODES, isReadOnlyMode, type AccessMode } from '../csi/index.js';
import { ephemeralDiskSchema, killSignalSchema, lifecycleSchema, metaSchema, refused } from './job-blocks.js';
import { DURATION, durationMs } from './duration.js';
import { canonicalPolicies, canonicalScaling, canonicalUpdates } from './job-canonical.js';
import { MAX_GROUP_COUNT, MAX_JOB_COUNT } from './limits.js';
import { legacyTaskNetwork, networkSchema } from './network-spec.js';
import { cronProblem } from './periodic.js';
import { groupReschedulePolicy, rescheduleInputSchema, rescheduleProblems, restartInputSchema } from './restart-policy.js';
import { serviceSchema, type ServiceSpec } from './service-spec.js';
import { affinitiesSchema, constraintsSchema, spreadsSchema } from './placement-rules.js';
import { workloadIdentitiesSchema } from './workload-identity.js';
import { mergeUpdate, updateInputSchema, updateProblems } from './update-strategy.js';
import { lazySchema } from '../api/index.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/**
 * A volume ID or namespace: as a name (it becomes part of paths on the nodes,
 * so no `/`, no `..` alone, nothing a shell or a mount table would mangle),
 * optionally with a per_alloc `[index]` suffix.
 */
export const VOLUME_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}(\[\d{1,6}\])?$/;
export const VOLUME_ID_RULE = "must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit (optionally with a per_alloc [index] suffix)";
export { durationMs };

const name = (what: string) =>
  z.string().regex(NAME, `${what} must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit`);
const duration = lazySchema(() => z
  .string()
  .regex(DURATION, 'must be a duration such as "500ms", "30s", "5m" or "1h30m"'));
/** An absolute path, or one that starts with a run-time `${...}` (such as `${NOMAD_ALLOC_DIR}/data`) the client expands. */
const taskPath = (what: string) => z.string().regex(/^(\/|\$\{)/, `${what} must be an absolute path (it may start with a run-time value such as \${NOMAD_ALLOC_DIR})`);
const stringMap = lazySchema(() => z.record(z.string(), z.string()));

/** A task's `resources { disk }`, deprecated in Nomad (the group's ephemeral_disk sizes the disk): accepted and dropped, as Nomad does; job files note it. */
const deprecatedDisk = (): Record<string, z.ZodType<undefined>> => ({ disk: z.number().int().min(0).optional().transform(() => undefined) });

/** A duration as milliseconds: a number, or a duration string ("10s") read as its milliseconds. */
const durationAsMs = lazySchema(() => z.preprocess((v) => (typeof v === 'string' && DURATION.test(v) ? durationMs(v) : v), z.number().int().min(0)));

/**
 * Nomad's `migrate` block: how a drain moves the group's allocations off a
 * node. Defaults as Nomad's: one at a time, each replacement healthy for
 * 10 s (within 5 min) before the next moves.
 */
export const migrateSchema = lazySchema(() => z.strictObject({
  maxParallel: z.number().int().min(1, 'max_parallel must be at least 1').default(1),
  healthCheck: z.enum(['checks', 'task_states']).default('checks'),
  minHealthyTimeMs: durationAsMs.default(10_000),
  healthyDeadlineMs: durationAsMs.default(300_000),
}));
export type MigrateStrategy = z.output<typeof migrateSchema>;

const volumeSchema = lazySchema(() => z.strictObject({
  type: z.enum(['csi', 'host']),
  /** A CSI volume ID (with perAlloc, the prefix of `<source>[<index>]`) or a host volume name. */
  source: z.string().min(1, 'source must name a volume'),
  accessMode: z.enum(ACCESS_MODES).default('single-node-writer'),
  attachmentMode: z.enum(ATTACHMENT_MODES).default('file-system'),
  readOnly: z.boolean().default(false),
  perAlloc: z.boolean().default(false),
  /** Host volumes: the group stays with the dynamic host volume its first allocation used (Nomad's sticky). */
  sticky: z.boolean().optional(),
  mountOptions: z
    .strictObject({
      fsType: z.string().default(''),
      /** May carry credentials: write-only, never returned by a read. */
      mountFlags: z.array(z.string().min(1, 'mount flags must not be empty')).default([]),
    })
    .optional(),
}));

const volumeMountSchema = lazySchema(() => z.strictObject({
  volume: z.string().min(1, 'volume must name a group volume'),
  destination: taskPath('destination'),
  readOnly: z.boolean().default(false),
  propagationMode: z.enum(['private', 'host-to-task', 'bidirectional']).default('private'),
  /** Nomad's `selinux_label`: accepted and ignored (Berth applies no SELinux labels). */
  selinuxLabel: z.string().optional(),
}));

const csiPluginSchema = lazySchema(() => z.strictObject({
  id: name('plugin id'),
  type: z.enum(['controller', 'node', 'monolith']),
  /** Where the plugin finds its socket (CSI_ENDPOINT) inside its task; Nomad's default. May use run-time `${...}`. */
  mountDir: taskPath('mountDir').default('/csi'),
  stagePublishBaseDir: taskPath('stagePublishBaseDir').optional(),
  healthTimeout: duration.default('30s'),
}));

/** A `template` block: a file rendered into the task's directory before it starts (Nomad's template). */
const templateSchema = lazySchema(() => z
  .strictObject({
    /** A template file on the node (relative paths are relative to the task directory). */
    source: z.string().min(1, 'source must name a file').optional(),
    /** An inline template. */
    data: z.string().optional(),
    /** Where the rendered file goes, relative to the task directory; it may not leave the allocation directory. */
    destination: z.string().min(1, 'destination must name a file'),
    changeMode: z.enum(['restart', 'signal', 'noop']).default('restart'),
    changeSignal: z.string().regex(/^(SIG)?[A-Z0-9]+$/, 'change_signal must be a signal name such as "SIGHUP"').optional(),
    splay: duration.default('5s'),
    perms: z
      .union([z.string(), z.number().int()])
      .transform((p) => String(p))
      .pipe(z.string().regex(/^0?[0-7]{3,4}$/, 'perms must be an octal mode such as "644"'))
      .default('644'),
    uid: z.number().int().min(0).optional(),
    gid: z.number().int().min(0).optional(),
    leftDelimiter: z.string().min(1).default('{{'),
    rightDelimiter: z.string().min(1).default('}}'),
    /** Parse the rendered file as KEY=VALUE lines and add them to the task's environment. */
    env: z.boolean().default(false),
    errorOnMissingKey: z.boolean().default(false),
  })
  .superRefine((t, ctx) => {
    if (t.source === undefined && t.data === undefined) ctx.addIssue({ code: 'custom', path: ['data'], message: 'a template needs data (inline) or source (a file)' });
    if (t.source !== undefined && t.data !== undefined) ctx.addIssue({ code: 'custom', path: ['source'], message: 'a template takes data or source, not both' });
    if (t.changeMode === 'signal' && !t.changeSignal) ctx.addIssue({ code: 'custom', path: ['changeSignal'], message: 'change_mode "signal" needs change_signal, e.g. "SIGHUP"' });
  }));

/** An `artifact` block: files fetched into the task's directory before it starts (Nomad's artifact). */
const artifactSchema = lazySchema(() => z.strictObject({
  /** A path on the node, a file:// or http(s):// URL, or a git repository (git::URL); archives (.tar, .tar.gz, .tgz, .zip) are unpacked. */
  source: z.string().min(1, 'source must name a file or directory'),
  destination: z.string().min(1).default('local/'),
  mode: z.enum(['any', 'file', 'dir']).default('any'),
  /** go-getter options: `archive`, `checksum`, `filename`; `ref` and `depth` for git. */
  options: z.record(z.string(), z.union([z.string(), z.boolean(), z.number()]).transform((v) => String(v))).default({}),
  /** HTTP headers sent with an http(s) download (interpolated). */
  headers: stringMap.default({}),
}));

const taskSchema = lazySchema(() => z.strictObject({
  name: name('task name'),
  driver: z.string().min(1, 'driver must be set'),
  config: z.record(z.string(), z.unknown()).default({}),
  env: stringMap.default({}),
  /** Merged over the job's and the group's meta; the task sees it as NOMAD_META_<key>. */
  meta: metaSchema.optional(),
  /** When the task runs relative to its group's main tasks; absent: a main task. */
  lifecycle: lifecycleSchema.optional(),
  /** Grace between the stop signal and SIGKILL; absent: the agent's. */
  killTimeout: duration.optional(),
  /** The signal a stop sends first; default SIGTERM. */
  killSignal: killSignalSchema.optional(),
  /** Wait between a stop being decided and the kill signal. */
  shutdownDelay: duration.optional(),
  /** A run of the task is killed once it has run this long, and fails (not restarted). */
  maxRunDuration: duration.optional(),
  /** The user the task runs as (name or uid); absent: the agent's user. */
  user: z.string().min(1, 'user must name a user').optional(),
  /** The group's leader: once it is dead for good, its siblings are stopped; a stop of the group kills it first (Nomad's `leader`). */
  leader: z.boolean().optional(),
  /** Workload identities the server signs for the task (Nomad's `identity` blocks), written to its secrets dir and env as each asks. */
  identities: workloadIdentitiesSchema,
  ...refused('vault', 'consul', 'scaling', 'csiPlugins'),
  /** Registered while the task runs (Nomad's native service discovery). */
  services: z.array(serviceSchema).optional(),
  /** Where the task's group may run / prefers to run (merged with the group's and the job's). */
  constraints: constraintsSchema,
  affinities: affinitiesSchema,
  resources: z
    .strictObject({
      /** Relative CPU weight (v1 cpu.shares, v2 cpu.weight) and what placement counts. */
      cpuMhz: z.number().int().min(1).default(100),
      /** The memory limit (the reservation when memoryMaxMb is set) and what placement counts. */
      memoryMb: z.number().int().min(1).default(300),
      /** A hard memory ceiling above memoryMb (oversubscription). */
      memoryMaxMb: z.number().int().min(1).optional(),
      /** A hard CPU quota in cores (may be fractional). */
      cores: z.number().positive().optional(),
      /** The most processes and threads the task may have. */
      pidsMax: z.number().int().min(1).optional(),
      /** Place the task only on a node that enforces limits with cgroups (false when absent). */
      memoryEnforced: z.boolean().optional(),
      ...deprecatedDisk(),
      ...refused('device'),
      ...legacyTaskNetwork(),
    })
    .prefault({})
    .refine((r) => r.memoryMaxMb === undefined || r.memoryMaxMb >= r.memoryMb, { message: 'memoryMaxMb must be at least memoryMb', path: ['memoryMaxMb'] }),
  volumeMounts: z.array(volumeMountSchema).default([]),
  csiPlugin: csiPluginSchema.optional(),
  /** A parameterized job's task: the dispatch payload is written to `local/<file>` before it starts. */
  dispatchPayload: z
    .strictObject({
      file: z.string().min(1, 'file must name a path under the task\'s local/ directory').refine((f) => !f.startsWith('/') && !f.split('/').includes('..'), {
        message: 'file must be a relative path inside the task\'s local/ directory (no leading "/", no "..")',
      }),
    })
    .optional(),
  templates: z.array(templateSchema).default([]),
  artifacts: z.array(artifactSchema).default([]),
  logs: z
    .strictObject({
      disabled: z.boolean().default(false),
      maxFiles: z.number().int().min(1).default(10),
      maxFileSizeMb: z.number().int().min(1).default(10),
    })
    .prefault({}),
}));

const periodicSchema = lazySchema(() => z
  .strictObject({
    /** One cron expression (Nomad's `cron`); `crons` takes several. */
    cron: z.string().min(1).optional(),
    crons: z.array(z.string().min(1)).optional(),
    prohibitOverlap: z.boolean().default(false),
    timeZone: z.string().min(1).default('UTC'),
    enabled: z.boolean().default(true),
  })
  .superRefine((p, ctx) => {
    const exprs = [...(p.cron ? [{ expr: p.cron, path: ['cron'] }] : []), ...(p.crons ?? []).map((expr, i) => ({ expr, path: ['crons', i] }))];
    if (!exprs.length) ctx.addIssue({ code: 'custom', path: ['crons'], message: 'a periodic block needs cron (or crons), e.g. cron = "*/15 * * * *"' });
    for (const { expr, path } of exprs) {
      const problem = cronProblem(expr, p.timeZone);
      if (problem) ctx.addIssue({ code: 'custom', path: problem.startsWith('time zone') ? ['timeZone'] : path, message: problem });
    }
  }));

const parameterizedSchema = lazySchema(() => z.strictObject({
  payload: z.enum(['optional', 'required', 'forbidden']).default('optional'),
  metaRequired: z.array(z.string().min(1)).default([]),
  metaOptional: z.array(z.string().min(1)).default([]),
}));

/**
 * Nomad's group `scaling` block (horizontal): the bounds `job scale` keeps
 * the group's count within, listed at /v1/scaling/policies; `policy` is the
 * autoscaler's, kept as written.
 */
/** A job's `ui` block: a description (Markdown in Nomad's UI) and links shown with the job. */
const uiSchema = lazySchema(() => z.strictObject({
  description: z.string().default(''),
  links: z.array(z.strictObject({ label: z.string().min(1, 'a link needs a label'), url: z.string().min(1, 'a link needs a url') })).default([]),
}));

const scalingSchema = lazySchema(() => z.strictObject({
  enabled: z.boolean().default(true),
  /** Absent: the group's count when the job is registered (Nomad's Canonicalize). */
  min: z.number().int().min(0, 'scaling min must not be negative').optional(),
  max: z.number({ error: 'scaling max must be set (a whole number)' }).int().min(0, 'scaling max must not be negative'),
  policy: z.record(z.string(), z.unknown()).optional(),
}));

const groupSchema = lazySchema(() => z.strictObject({
  name: name('group name'),
  count: z.number().int().min(0).max(MAX_GROUP_COUNT, `count is at most ${MAX_GROUP_COUNT} per group`).default(1),
  /** Input: the fields the block gives; output: over the job type's default (Nomad's Canonicalize, restart-policy.ts). */
  restart: restartInputSchema.optional(),
  /** Input: the fields the block gives; output: over the job's block and the type's default; absent for system jobs. */
  reschedule: rescheduleInputSchema.optional(),
  network: networkSchema.prefault({}),
  meta: metaSchema.optional(),
  /** Nomad's group shutdown_delay: the default of its tasks'. */
  shutdownDelay: duration.optional(),
  /** Batch jobs: the allocation is stopped (and completes) once it has run this long since it was created. */
  maxRunDuration: duration.optional(),
  ephemeralDisk: ephemeralDiskSchema.optional(),
  constraints: constraintsSchema,
  affinities: affinitiesSchema,
  spreads: spreadsSchema,
  ...refused('vault', 'consul', 'disconnect', 'maxClientDisconnect', 'stopAfterClientDisconnect'),
  scaling: scalingSchema.optional(),
  migrate: migrateSchema.optional(),
  /** Registered while the allocation's tasks run (Nomad's native service discovery). */
  services: z.array(serviceSchema).optional(),
  /** Input: the fields the group's block gives; output: merged with the job's and the defaults (Nomad's Canonicalize). */
  update: updateInputSchema.optional(),
  volumes: z.record(z.string().regex(NAME, 'volume names must be 1-128 letters, digits, ".", "_" or "-"'), volumeSchema).default({}),
  tasks: z.array(taskSchema).min(1, 'a group needs at least one task'),
}));

/** The job spec as users submit it; unknown fields are rejected so that typos surface. */
export const jobSpecSchema = lazySchema(() => z
  .strictObject({
    id: name('job id'),
    namespace: name('namespace').default('default'),
    type: z.enum(['service', 'batch', 'system']).default('service'),
    priority: z.number().int().min(1).max(100).default(50),
    datacenters: z.array(z.string().min(1)).min(1).default(['*']),
    /** Nomad's job name (NOMAD_JOB_NAME); absent: the id. */
    name: z.string().min(1).optional(),
    /** Berth runs one region; NOMAD_REGION and ${node.region} say this name. */
    region: z.string().min(1).default('global'),
    meta: metaSchema.optional(),
    /** Placement rules every group inherits (src/structs/placement-rules.ts). */
    constraints: constraintsSchema,
    affinities: affinitiesSchema,
    spreads: spreadsSchema,
    ...refused('vault', 'consul', 'multiregion'),
    update: updateInputSchema.optional(),
    migrate: migrateSchema.optional(),
    /** Nomad's job-level reschedule block: what each group's own block leaves out (kept as written). */
    reschedule: rescheduleInputSchema.optional(),
    groups: z.array(groupSchema).min(1, 'a job needs at least one group'),
    /** A periodic job launches a child job `<id>/periodic-<unix>` on its schedule; it runs nothing itself. */
    periodic: periodicSchema.optional(),
    /** A parameterized job runs nothing itself: `berth job dispatch` launches children with a payload and meta. */
    parameterized: parameterizedSchema.optional(),
    /** Nomad's `ui` block: what the web UI shows on the job's page (no effect on what runs). */
    ui: uiSchema.optional(),
  })
  .superRefine((job, ctx) => {
    if (job.periodic && job.parameterized) ctx.addIssue({ code: 'custom', path: ['periodic'], message: 'a job is periodic or parameterized, not both' });
    for (const kind of ['periodic', 'parameterized'] as const) {
      if (job[kind] && job.type !== 'batch') ctx.addIssue({ code: 'custom', path: [kind], message: `${kind} jobs must be of type "batch"` });
    }
    const total = job.groups.reduce((n, g) => n + g.count, 0);
    if (total > MAX_JOB_COUNT) {
      ctx.addIssue({ code: 'custom', path: ['groups'], message: `the groups' counts add up to ${total}; a job runs at most ${MAX_JOB_COUNT} allocations` });
    }
    const seenGroups = new Set<string>();
    job.groups.forEach((group, gi) => {
      if (seenGroups.has(group.name)) {
        ctx.addIssue({ code: 'custom', path: ['groups', gi, 'name'], message: `duplicate group name "${group.name}"` });
      }
      seenGroups.add(group.name);
      for (const [volName, vol] of Object.entries(group.volumes)) {
        const path = ['groups', gi, 'volumes', volName];
        if (vol.type === 'csi' && isReadOnlyMode(vol.accessMode) && !vol.readOnly) {
          ctx.addIssue({
            code: 'custom',
            path: [...path, 'readOnly'],
            message: `access mode "${vol.accessMode}" never allows writes; set readOnly: true`,
          });
        }
        if (vol.attachmentMode === 'block-device' && vol.mountOptions) {
          ctx.addIssue({ code: 'custom', path: [...path, 'mountOptions'], message: 'a block-device volume takes no mount options' });
        }
        if (vol.type === 'csi' && vol.sticky) {
          ctx.addIssue({ code: 'custom', path: [...path, 'sticky'], message: 'sticky applies to host volumes only' });
        }
        if (vol.type === 'host' && vol.perAlloc) {
          ctx.addIssue({ code: 'custom', path: [...path, 'perAlloc'], message: 'perAlloc applies to csi volumes only' });
        }
      }
      servicePortProblems(group, gi, ctx);
      reschedulePolicyProblems(job, group, gi, ctx);
      if (group.maxRunDuration !== undefined) {
        if (durationMs(group.maxRunDuration) <= 0) ctx.addIssue({ code: 'custom', path: ['groups', gi, 'maxRunDuration'], message: 'max_run_duration must be greater than zero' });
        if (job.type !== 'batch') ctx.addIssue({ code: 'custom', path: ['groups', gi, 'maxRunDuration'], message: `job type "${job.type}" does not allow max_run_duration (batch jobs only)` });
      }
      if (group.scaling) {
        const min = group.scaling.min ?? group.count;
        const at = ['groups', gi, 'scaling'];
        if (min > group.scaling.max) ctx.addIssue({ code: 'custom', path: [...at, 'max'], message: `scaling max (${group.scaling.max}) must not be less than min (${min})` });
        else if (group.count < min) ctx.addIssue({ code: 'custom', path: ['groups', gi, 'count'], message: `task group count (${group.count}) must not be less than the scaling policy's min (${min})` });
        else if (group.count > group.scaling.max) ctx.addIssue({ code: 'custom', path: ['groups', gi, 'count'], message: `task group count (${group.count}) must not be greater than the scaling policy's max (${group.scaling.max})` });
      }
      const seenTasks = new Set<string>();
      const leaders = group.tasks.filter((t) => t.leader);
      if (leaders.length > 1) {
        ctx.addIssue({ code: 'custom', path: ['groups', gi, 'tasks', group.tasks.indexOf(leaders[1]!), 'leader'], message: `only one task may be marked as leader (tasks ${leaders.map((t) => `"${t.name}"`).join(', ')} are)` });
      }
      if (group.tasks.every((t) => t.lifecycle)) {
        ctx.addIssue({ code: 'custom', path: ['groups', gi, 'tasks'], message: `group "${group.name}" needs at least one main task (a task without a lifecycle block)` });
      }
      group.tasks.forEach((task, ti) => {
        if (task.lifecycle?.sidecar && task.lifecycle.hook === 'poststop') {
          ctx.addIssue({ code: 'custom', path: ['groups', gi, 'tasks', ti, 'lifecycle', 'sidecar'], message: 'sidecar applies to prestart and poststart tasks only' });
        }
        if (seenTasks.has(task.name)) {
          ctx.addIssue({ code: 'custom', path: ['groups', gi, 'tasks', ti, 'name'], message: `duplicate task name "${task.name}"` });
        }
        seenTasks.add(task.name);
        const seenDest = new Set<string>();
        task.volumeMounts.forEach((mount, mi) => {
          const path = ['groups', gi, 'tasks', ti, 'volumeMounts', mi];
          const vol = group.volumes[mount.volume];
          if (!vol) {
            ctx.addIssue({
              code: 'custom',
              path: [...path, 'volume'],
              message: `volume "${mount.volume}" is not declared in group "${group.name}"`,
            });
          } else if (mount.propagationMode === 'bidirectional' && volumeIsReadOnly(vol)) {
            ctx.addIssue({
              code: 'custom',
              path: [...path, 'propagationMode'],
              message: `bidirectional propagation needs a writable volume, and "${mount.volume}" is read-only`,
            });
          } else if (mount.propagationMode === 'bidirectional' && mount.readOnly) {
            ctx.addIssue({
              code: 'custom',
              path: [...path, 'propagationMode'],
              message: 'bidirectional propagation cannot be used with a read-only mount',
            });
          }
          if (seenDest.has(mount.destination)) {
            ctx.addIssue({ code: 'custom', path: [...path, 'destination'], message: `duplicate mount destination "${mount.destination}"` });
          }
          seenDest.add(mount.destination);
        });
      });
      if (group.update || job.update) {
        const merged = mergeUpdate(job.update, group.update);
        if (job.type === 'batch' && merged.maxParallel > 0) {
          ctx.addIssue({ code: 'custom', path: [...(group.update ? ['groups', gi] : []), 'update'], message: 'batch jobs take no update block (their allocations run to completion, they are not rolled)' });
        }
        for (const p of updateProblems(merged)) ctx.addIssue({ code: 'custom', path: [...(group.update && p.field in group.update ? ['groups', gi] : []), 'update', p.field], message: p.message });
      }
    });
  })
  .transform(canonicalUpdates)
  .transform(canonicalScaling)
  .transform(canonicalPolicies));

export type JobSpec = z.output<typeof jobSpecSchema>;
export type JobSpecInput = z.input<typeof jobSpecSchema>;
export type TaskGroup = JobSpec['groups'][number];
export type Task = TaskGroup['tasks'][number];
export type GroupVolume = TaskGroup['volumes'][string];
export type VolumeMount = Task['volumeMounts'][number];
export type TaskTemplate = Task['templates'][number];
export type TaskArtifact = Task['artifacts'][number];
export type TaskIdentity = Task['identities'][number];
export type TaskLifecycle = NonNullable<Task['lifecycle']>;
export type GroupNetwork = TaskGroup['network'];
export type NetworkPort = GroupNetwork['ports'][number];
export type JobType = JobSpec['type'];

/**
 * A group's reschedule policy as Nomad's Validate takes it (merged over the
 * job's block and the type's default), each problem at the block that set
 * the field, else at the group's block, else at the job's.
 */
function reschedulePolicyProblems(job: { type: 'service' | 'batch' | 'system'; reschedule?: z.output<typeof rescheduleInputSchema> | undefined }, group: { reschedule?: z.output<typeof rescheduleInputSchema> | undefined }, gi: number, ctx: z.RefinementCtx): void {
  const groupAt = ['groups', gi, 'reschedule'];
  if (job.type === 'system') {
    if (group.reschedule) ctx.addIssue({ code: 'custom', path: groupAt, message: 'system jobs take no reschedule block (they are never rescheduled)' });
    if (job.reschedule && gi === 0) ctx.addIssue({ code: 'custom', path: ['reschedule'], message: 'system jobs take no reschedule block (they are never rescheduled)' });
    return;
  }
  const policy = groupReschedulePolicy(job.type, job.reschedule, group.reschedule);
  if (!policy) return;
  type Field = keyof z.output<typeof rescheduleInputSchema>;
  const written = (f: Field): PropertyKey[] | undefined =>
    group.reschedule?.[f] !== undefined ? [...groupAt, f] : job.reschedule?.[f] !== undefined ? ['reschedule', f] : undefined;
  // A field that came from the type's default is pointed at through the attempts that made it matter.
  for (const p of rescheduleProblems(policy)) ctx.addIssue({ code: 'custom', path: written(p.field) ?? written('attempts') ?? groupAt, message: p.message });
}

/** A service's or check's port that is a label must be one of the group network's port labels. */
function servicePortProblems(group: { name: string; network: object; services?: ServiceSpec[] | undefined; tasks: Array<{ services?: ServiceSpec[] | undefined }> }, gi: number, ctx: z.RefinementCtx): void {
  const ports = (group.network as { ports?: unknown }).ports;
  const labels = new Set(Array.isArray(ports) ? ports.map((p: { label?: string }) => p.label) : ports && typeof ports === 'object' ? Object.keys(ports) : []);
  const check = (port: string | undefined, path: PropertyKey[]): void => {
    if (port === undefined || /^\d+$/.test(port) || labels.has(port)) return;
    ctx.addIssue({ code: 'custom', path, message: `port "${port}" is not a port label of group "${group.name}"'s network block (give a label from network { port "..." {} } or a number)` });
  };
  const each = (services: ServiceSpec[] | undefined, at: PropertyKey[]): void =>
    services?.forEach((s, si) => {
      check(s.port, [...at, si, 'port']);
      s.checks.forEach((c, ci) => check(c.port, [...at, si, 'checks', ci, 'port']));
    });
  each(group.services, ['groups', gi, 'services']);
  group.tasks.forEach((t, ti) => each(t.services, ['groups', gi, 'tasks', ti, 'services']));
}

/** True when a group volume never allows writes (by its flag or its access mode). */
export function volumeIsReadOnly(vol: { readOnly: boolean; accessMode: AccessMode }): boolean {
  return vol.readOnly || isReadOnlyMode(vol.accessMode);
}

/** The CSI volume ID a group volume means for the allocation with `allocIndex` (Nomad's per_alloc naming). */
export function volumeIdFor(vol: GroupVolume, allocIndex: number): string {
  return vol.perAlloc ? `${vol.source}[${allocIndex}]` : vol.source;
}
