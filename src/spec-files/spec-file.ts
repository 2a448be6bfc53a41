// Job and volume files as users write them: HCL (as Nomad's) or JSON, turned
// into the canonical JSON and checked by the same zod schemas the server
// uses. Every problem names the file, the line and column, and the field.
// The problem type and error are file-problems.ts; finding where in the text
// a canonical path is (JSON, Nomad's JSON, HCL) is _locate.ts.

import {
  jobTaskConfigProblems,
  JobValidationError,
  parseHostVolumeSpec,
  parseJobSpec,
  parseVolumeSpec,
  taskConfigProblems,
  VolumeSpecValidationError,
  unknownTarget,
  withConvertedTaskConfigs,
  type JobProblem,
  type HostVolumeSpec,
  type JobSpec,
  type VolumeSpec,
} from '../structs/index.js';
import type { Body } from './_hcl-convert.js';
import { SpecFileError, fileFormat, sortProblems, type FileFormat, type JobFileOptions, type Located } from './file-problems.js';
import { atPath, fromHcl, fromJson } from './_locate.js';

export { SpecFileError, formatFileProblem, fileFormat, type FileFormat, type FileProblem, type JobFileOptions } from './file-problems.js';

/** A parsed job file: the checked spec, and the canonical JSON to submit. */
export interface JobFile {
  job: JobSpec;
  /** The canonical JSON (before defaults), what the CLI submits. */
  input: Record<string, unknown>;
  format: FileFormat;
  /** What was read but has no effect (Nomad's JSON: defaults Berth has no setting for), one `file:line:col: ...` line each. */
  notes: string[];
  /**
   * Problems found later (a server refused the job: a volume it does not
   * know), at canonical paths of this job, as a SpecFileError that names
   * each one at its place in the file. Pure.
   */
  problemsAt(problems: readonly JobProblem[]): SpecFileError;
}

/** A parsed volume file: the checked spec, and the canonical JSON to submit. */
export interface VolumeFile {
  volume: VolumeSpec;
  input: Record<string, unknown>;
  format: FileFormat;
  notes: string[];
}

/**
 * Parses a job file's text (`file` names it in errors and picks the format).
 * HCL holds exactly one `job "<id>" { ... }` block; JSON is the spec or
 * `{ "job": spec }`. Resolves with the checked spec, each task's config
 * checked against its built-in driver's schema (`taskConfigProblems`);
 * rejects with SpecFileError. Submits nothing, reads nothing from disk.
 */
export async function parseJobFile(file: string, text: string, opts: JobFileOptions = {}): Promise<JobFile> {
  const format = opts.format ?? fileFormat(file, text);
  const located = format === 'hcl' ? fromHcl(file, text, 'job', opts) : fromJson(file, text, 'job');
  try {
    const job = withConvertedTaskConfigs(parseJobSpec(located.input, { hclConversions: true }));
    // A task's config is checked against its driver's schema now, not found wrong on a node later.
    const configProblems = jobTaskConfigProblems(job);
    if (configProblems.length) throw new JobValidationError(configProblems);
    const problemsAt = (problems: readonly JobProblem[]): SpecFileError => new SpecFileError(sortProblems(problems.map((p) => atPath(file, located, p.path, p.message))));
    const notes = [...(located.notes ?? []), ...deprecatedDiskNotes(file, located), ...unknownTargetNotes(file, located)];
    return { job, input: located.input as Record<string, unknown>, format, notes, problemsAt };
  } catch (err) {
    if (err instanceof JobValidationError) {
      // Schema and driver-config problems are shown together, not one round after the other.
      const all = err.problems.some((p) => /\.config(\.|$)/.test(p.path)) ? err.problems : [...err.problems, ...rawConfigProblems(located.input)];
      throw new SpecFileError(sortProblems(all.map((p) => atPath(file, located, p.path, p.message))));
    }
    throw err;
  }
}

// The driver-config problems of a job the schema refused (so not yet a JobSpec).
function rawConfigProblems(input: unknown): JobProblem[] {
  const out: JobProblem[] = [];
  const groups = (input as { groups?: unknown })?.groups;
  if (!Array.isArray(groups)) return out;
  groups.forEach((g: { tasks?: unknown }, gi) => {
    if (!Array.isArray(g?.tasks)) return;
    g.tasks.forEach((t: { driver?: unknown; config?: unknown }, ti) => {
      if (typeof t?.driver !== 'string') return;
      for (const p of taskConfigProblems(t.driver, t.config)) out.push({ path: `groups[${gi}].tasks[${ti}].${p.path}`, message: p.message });
    });
  });
  return out;
}

// A task's `resources { disk }`: Nomad accepts it, warns that it is deprecated and ignores it.
function deprecatedDiskNotes(file: string, located: Located): string[] {
  const out: string[] = [];
  const groups = (located.input as { groups?: unknown })?.groups;
  if (!Array.isArray(groups)) return out;
  groups.forEach((g: { tasks?: unknown }, gi) => {
    if (!Array.isArray(g?.tasks)) return;
    g.tasks.forEach((t: { resources?: { disk?: unknown } }, ti) => {
      if (t?.resources?.disk === undefined) return;
      const pos = located.locate(`groups[${gi}].tasks[${ti}].resources.disk`);
      out.push(`${pos ? `${file}:${pos.line}:${pos.column}` : file}: resources.disk: deprecated and ignored, as Nomad does (the group's ephemeral_disk sizes the disk)`);
    });
  });
  return out;
}

// Rules whose target names nothing a node has: Nomad registers such a job and it stays blocked; the file's author hears why.
function unknownTargetNotes(file: string, located: Located): string[] {
  const out: string[] = [];
  const visit = (holder: unknown, at: string): void => {
    if (!holder || typeof holder !== 'object') return;
    for (const kind of ['constraints', 'affinities'] as const) {
      const rules = (holder as Record<string, unknown>)[kind];
      if (!Array.isArray(rules)) continue;
      rules.forEach((rule: { attribute?: unknown; value?: unknown }, i) => {
        const target = rule && typeof rule === 'object' ? unknownTarget(rule) : undefined;
        if (!target) return;
        const field = rule.attribute === target ? 'attribute' : 'value';
        const pos = located.locate(`${at}${kind}[${i}].${field}`);
        out.push(
          `${pos ? `${file}:${pos.line}:${pos.column}` : file}: ${kind === 'constraints' ? 'constraint' : 'affinity'}.${field}: "${target}" is no node attribute (use \${attr.<name>}, \${meta.<key>}, \${node.datacenter}, \${node.class}, \${node.unique.name} or \${node.unique.id}); no node has it, so ${kind === 'constraints' ? 'the job stays blocked until it is fixed' : 'the affinity never applies'}, as in Nomad`,
        );
      });
    }
  };
  visit(located.input, '');
  const groups = (located.input as { groups?: unknown })?.groups;
  if (Array.isArray(groups)) {
    groups.forEach((g: { tasks?: unknown }, gi) => {
      visit(g, `groups[${gi}].`);
      if (Array.isArray(g?.tasks)) g.tasks.forEach((t: unknown, ti) => visit(t, `groups[${gi}].tasks[${ti}].`));
    });
  }
  return out;
}

/**
 * Parses a volume specification file for `purpose` (register needs
 * external_id; create refuses it). HCL holds top-level attributes and blocks;
 * JSON is the spec or `{ "volume": spec }`. Rejects with SpecFileError.
 */
export async function parseVolumeFile(file: string, text: string, purpose: 'register' | 'create'): Promise<VolumeFile> {
  const format = fileFormat(file, text);
  const located = format === 'hcl' ? fromHcl(file, text, 'volume', {}) : fromJson(file, text, 'volume');
  try {
    const volume = parseVolumeSpec(located.input, purpose, { hclConversions: true });
    const notes = [...(located.notes ?? [])];
    if (purpose === 'register') {
      for (const [field, written] of [['snapshotId', 'snapshot_id'], ['cloneId', 'clone_id']] as const) {
        if ((located.input as Record<string, unknown>)[field] === undefined) continue;
        const pos = located.locate(field);
        notes.push(`${pos ? `${file}:${pos.line}:${pos.column}` : file}: ${written}: ignored by volume register, as Nomad does (it applies to volume create)`);
      }
    }
    return { volume, input: located.input as Record<string, unknown>, format, notes };
  } catch (err) {
    if (err instanceof VolumeSpecValidationError) throw new SpecFileError(sortProblems(err.problems.map((p) => atPath(file, located, p.path, p.message))));
    throw err;
  }
}

/** The `type` a volume file declares ('csi' when it names none). Rejects with SpecFileError when the file does not parse. */
export async function volumeFileType(file: string, text: string): Promise<string> {
  const format = fileFormat(file, text);
  const located = format === 'hcl' ? fromHcl(file, text, 'volume', {}) : fromJson(file, text, 'volume');
  const type = (located.input as Record<string, unknown> | undefined)?.['type'];
  return typeof type === 'string' ? type : 'csi';
}

/** A parsed dynamic host volume file (`type = "host"`). */
export interface HostVolumeFile {
  volume: HostVolumeSpec;
  format: FileFormat;
}

/**
 * Parses and checks a dynamic host volume file (HCL or JSON, Nomad's) for
 * `volume create` or `volume register`. Rejects with SpecFileError naming
 * each problem at its line.
 */
export async function parseHostVolumeFile(file: string, text: string, purpose: 'register' | 'create'): Promise<HostVolumeFile> {
  const format = fileFormat(file, text);
  const located = format === 'hcl' ? fromHcl(file, text, 'volume', {}) : fromJson(file, text, 'volume');
  try {
    return { volume: parseHostVolumeSpec(located.input, purpose, { hclConversions: true }), format };
  } catch (err) {
    if (err instanceof VolumeSpecValidationError) throw new SpecFileError(sortProblems(err.problems.map((p) => atPath(file, located, p.path, p.message))));
    throw err;
  }
}

/** One problem a `parseSpecText` validator found: the canonical path and what is wrong. */
export interface SpecProblem {
  path: string;
  message: string;
}

/**
 * Parses any other Berth file (the agent's config) the way job and volume
 * files are parsed: HCL converted by `hclBody` (snake_case names -> the
 * canonical camelCase; unknown names pass through camelCased so the
 * validator reports them at their line), or JSON (optionally wrapped as
 * `{ "<wrapper>": {...} }`). `validate` returns the value or its problems;
 * rejects with SpecFileError whose problems carry file:line:col.
 */
export async function parseSpecText<T>(
  file: string,
  text: string,
  opts: {
    hclBody: HclBody;
    wrapper: string;
    /** `locate` gives `file:line:col` of a canonical path (or of its nearest ancestor), for problems found later (a plugin's config). */
    validate(input: Record<string, unknown>, locate: (path: string) => string | undefined): { value: T } | { problems: SpecProblem[] };
  },
): Promise<T> {
  const format = fileFormat(file, text);
  const located = format === 'hcl' ? fromHcl(file, text, opts.hclBody, {}) : fromJson(file, text, opts.wrapper);
  const locate = (path: string): string | undefined => {
    const pos = located.locate(path);
    return pos ? `${file}:${pos.line}:${pos.column}` : undefined;
  };
  const result = opts.validate(located.input as Record<string, unknown>, locate);
  if ('problems' in result) throw new SpecFileError(sortProblems(result.problems.map((p) => atPath(file, located, p.path, p.message))));
  return result.value;
}

/** How an HCL body maps to canonical JSON (see parseSpecText). */
export type HclBody = Body;
