// Job and volume files as users write them: HCL (as Nomad's) or JSON, turned
// into the canonical JSON and checked by the same zod schemas the server
// uses. Every problem names the file, the line and column, and the field.

import { evaluateConfig, outlineOf, toJsonShape, type Diagnostic, type VariableInputs } from '../hcl/index.js';
import { BerthError } from '../lib/index.js';
import {
  formatPath,
  isNomadJobJson,
  isNomadVolumeJson,
  jobTaskConfigProblems,
  JobValidationError,
  nestingProblem,
  nomadJobToSpec,
  nomadVolumeToSpec,
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
  type NomadTranslation,
  type VolumeSpec,
} from '../structs/index.js';
import { convertBody, JOB_BODY, VOLUME_BODY, type Body, type ConvertProblem, type PathSteps } from './_hcl-convert.js';
import { formatHclField, hclMessage, hclNamesByKey, hclParts, namesIn, suggest } from './_hcl-names.js';
import { labelsInOrder, locateHcl, type HclOutlineNode, type HclStep } from './_hcl-outline.js';
import { JsonSyntaxError, parseJsonWithPositions, type TextPosition } from './_json-positions.js';

/**
 * How a job file is evaluated (Nomad's `-var`, `-var-file`, NOMAD_VAR_*):
 * values for its `variable` blocks, and whether file functions (file(),
 * templatefile()...) may read the disk, relative to `baseDir` (default: the
 * file's directory).
 */
export interface JobFileOptions extends VariableInputs {
  allowFS?: boolean;
  /** Read the file as this format whatever its name (Nomad's `job run -json`); default: fileFormat's guess. */
  format?: FileFormat;
  baseDir?: string;
}

/** One problem in a file: where, which field (canonical path, may be empty), and what. */
export interface FileProblem {
  file: string;
  /** 1-based; 0 when the position is unknown. */
  line: number;
  column: number;
  field: string;
  message: string;
}

/**
 * A job or volume file that cannot be used: malformed HCL or JSON, or a spec
 * the schema refuses. Code FILE_INVALID. `problems` lists each with its
 * position; the message has one `file:line:col: field: message` line per
 * problem. Never quotes a submitted value (files may carry secrets).
 */
export class SpecFileError extends BerthError {
  readonly problems: FileProblem[];

  constructor(problems: FileProblem[]) {
    super('FILE_INVALID', problems.map(formatFileProblem).join('\n'));
    this.problems = problems;
  }
}

/** `writer.hcl:12:7: groups[0].count: expected number`. */
export function formatFileProblem(p: FileProblem): string {
  const where = p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file;
  return `${where}: ${p.field ? `${p.field}: ` : ''}${p.message}`;
}

export type FileFormat = 'hcl' | 'json';

/** The file's format: by extension (.hcl/.nomad, .json), else by content (JSON starts with `{`). */
export function fileFormat(file: string, text: string): FileFormat {
  if (/\.(hcl|nomad)$/i.test(file)) return 'hcl';
  if (/\.json$/i.test(file)) return 'json';
  return text.trimStart().startsWith('{') ? 'json' : 'hcl';
}

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

interface Located {
  input: unknown;
  /** Position of a canonical path, or of its nearest ancestor. */
  locate(path: string): TextPosition | undefined;
  notes?: string[];
  /** HCL files: a problem at a canonical path in the file's own words. */
  describe?(path: string, message: string): FileProblem;
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

function sortProblems(list: FileProblem[]): FileProblem[] {
  return [...list].sort((a, b) => (a.file === b.file ? a.line - b.line || a.column - b.column : a.file < b.file ? -1 : 1));
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

const NO_NAMES: ReadonlyMap<string, string> = new Map();

function atPath(file: string, located: Located, path: string, message: string): FileProblem {
  if (located.describe) return located.describe(path, message);
  // An unknown field is found at the field itself, not at its parent.
  const unknown = /^unknown fields? "([^"]+)"/.exec(message);
  const target = unknown ? (path ? `${path}.${unknown[1]}` : (unknown[1] as string)) : path;
  const pos = located.locate(target) ?? { line: 0, column: 0 };
  // JSON files keep their own (canonical) names, and get the same plain wording as HCL files.
  return { file, line: pos.line, column: pos.column, field: path, message: unknown ? message : hclMessage(message, valueAt(located.input, path) === undefined, path, NO_NAMES) };
}

function parents(path: string): string[] {
  const out = [path];
  let p = path;
  while (p) {
    const cut = Math.max(p.lastIndexOf('.'), p.lastIndexOf('['));
    p = cut > 0 ? p.slice(0, cut) : '';
    out.push(p);
  }
  return out;
}

function fromJson(file: string, text: string, kind: string): Located {
  let parsed: ReturnType<typeof parseJsonWithPositions>;
  try {
    parsed = parseJsonWithPositions(text);
  } catch (err) {
    if (err instanceof JsonSyntaxError) {
      const deep = err.message.startsWith('nesting deeper than');
      throw new SpecFileError([{ file, ...err.position, field: '', message: deep ? err.message : `malformed JSON: ${err.message}` }]);
    }
    throw err;
  }
  const positionOf = (path: string): TextPosition | undefined => parsed.positions.get(path);
  if (kind === 'job' && isNomadJobJson(parsed.value)) return fromNomad(file, nomadJobToSpec(parsed.value as Record<string, unknown>), positionOf);
  if (kind === 'volume' && isNomadVolumeJson(parsed.value)) return fromNomad(file, nomadVolumeToSpec(parsed.value as Record<string, unknown>), positionOf);
  if (kind === 'volume' && isObject(parsed.value) && Object.keys(parsed.value).some((k) => k.includes('_'))) {
    return fromHclJson(file, parsed.value, VOLUME_BODY, positionOf);
  }
  let input = parsed.value;
  let prefix = '';
  const wrapped = input && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>)[kind] : undefined;
  if (wrapped && typeof wrapped === 'object' && !Array.isArray(wrapped) && Object.keys(input as object).length === 1) {
    input = wrapped;
    prefix = kind;
  }
  if (!input || typeof input !== 'object' || Array.isArray(input)) {
    throw new SpecFileError([{ file, line: 1, column: 1, field: '', message: `a ${kind} file must hold one JSON object` }]);
  }
  return {
    input,
    locate(path) {
      for (const p of parents(path)) {
        const full = prefix ? (p ? `${prefix}.${p}` : prefix) : p;
        const pos = parsed.positions.get(full);
        if (pos) return pos;
      }
      return undefined;
    },
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

/** The nearest known position of `path` or of one of its parents. */
function nearest(path: string, known: (p: string) => TextPosition | undefined): TextPosition | undefined {
  for (const p of parents(path)) {
    const pos = known(p);
    if (pos) return pos;
  }
  return undefined;
}

/** Nomad's API JSON, translated: refused fields become problems at their position, ignored ones notes. */
function fromNomad(file: string, t: NomadTranslation, positionOf: (path: string) => TextPosition | undefined): Located {
  if (t.problems.length) {
    throw new SpecFileError(
      t.problems
        .map((p) => ({ file, ...(nearest(p.path, positionOf) ?? { line: 0, column: 0 }), field: p.path, message: p.message }))
        .sort((a, b) => a.line - b.line || a.column - b.column),
    );
  }
  const notes = t.ignored.map((path) => {
    const pos = nearest(path, positionOf);
    return `${pos ? `${file}:${pos.line}:${pos.column}` : file}: ${path}: ignored (Berth has no such setting; Nomad fills it in with its defaults)`;
  });
  return {
    input: t.input,
    notes,
    locate: (path) => nearest(path, (p) => {
      const origin = t.origins.get(p);
      return origin === undefined ? undefined : positionOf(origin);
    }),
  };
}

/**
 * A volume file in Nomad's JSON volume spec, the HCL body written as JSON
 * (`"plugin_id"`, `"capability": [{...}]`): converted like HCL, positions
 * from the JSON text.
 */
function fromHclJson(file: string, value: Record<string, unknown>, body: Body, positionOf: (path: string) => TextPosition | undefined): Located {
  const paths: PathSteps = new Map();
  const problems: ConvertProblem[] = [];
  const input = convertBody(value, body, { path: [], steps: [] }, paths, problems);
  const stepsAt = (steps: HclStep[]): TextPosition | undefined => positionOf(jsonPathOf(value, steps));
  if (problems.length) throw new SpecFileError(problems.map((p) => ({ file, ...(stepsAt(p.steps) ?? { line: 0, column: 0 }), field: p.field, message: p.message })));
  return {
    input,
    locate: (path) => nearest(path, (p) => {
      const steps = paths.get(p);
      return steps ? stepsAt(steps) : p === '' ? positionOf('') : undefined;
    }),
  };
}

/** The JSON path (`capability[1].access_mode`) the converter's steps name in `value`: a block is an object, or a list of them. */
function jsonPathOf(value: unknown, steps: HclStep[]): string {
  const path: PropertyKey[] = [];
  let at = value;
  for (const step of steps) {
    at = isObject(at) ? at[step.name] : undefined;
    path.push(step.name);
    if (step.label !== undefined) {
      at = isObject(at) ? at[step.label] : undefined;
      path.push(step.label);
    }
    if (Array.isArray(at)) {
      at = at[step.nth];
      path.push(step.nth);
    }
  }
  return formatPath(path);
}

function fromHcl(file: string, text: string, kind: 'job' | 'volume' | Body, opts: JobFileOptions): Located {
  const deep = nestingProblem(text, undefined, { hcl: true });
  if (deep) throw new SpecFileError([{ file, line: deep.line, column: deep.column, field: '', message: deep.message }]);
  const evaluated = evaluateConfig(file, text, { ...opts, lenient: kind === 'volume', variables: kind === 'job' });
  if (evaluated.diagnostics.length) throw new SpecFileError(sortProblems(evaluated.diagnostics.map((d) => diagnosticProblem(file, d, evaluated.syntax ? 'malformed HCL: ' : ''))));
  const raw = toJsonShape(evaluated.body);
  const outline: HclOutlineNode[] = outlineOf(evaluated.body);
  const spec = kind === 'job' ? JOB_BODY : kind === 'volume' ? VOLUME_BODY : kind;
  const paths: PathSteps = new Map();
  const problems: ConvertProblem[] = [];
  const order = (parent: HclStep[], name: string): string[] => labelsInOrder(outline, parent, name);
  let input: Record<string, unknown>;
  let base: HclStep[] = [];
  const at = (steps: HclStep[]): { line: number; column: number } => locateHcl(outline, steps) ?? { line: 0, column: 0 };
  if (kind === 'job') {
    const jobs = raw['job'];
    const others = Object.keys(raw).filter((k) => k !== 'job');
    if (others.length) {
      const name = others[0] as string;
      const node = outline.find((n) => n.name === name);
      const what = node?.kind === 'attr' ? `argument "${name}"` : `block "${name}"`;
      throw new SpecFileError([{ file, ...at([{ name, nth: 0 }]), field: '', message: `unexpected ${what} outside the job block (a job file holds variable, locals and one job block)` }]);
    }
    if (Array.isArray(jobs)) {
      // An unlabelled `job { ... }` comes as a list of bodies (which would read as job "0").
      throw new SpecFileError([{ file, ...at([{ name: 'job', nth: 0 }]), field: 'job', message: 'the job block needs its ID as a label: job "<id>" { ... }' }]);
    }
    const labels = jobs && typeof jobs === 'object' ? Object.entries(jobs as Record<string, unknown>) : [];
    const count = labels.reduce((n, [, bodies]) => n + (Array.isArray(bodies) ? bodies.length : 1), 0);
    if (count !== 1) {
      const pos = count > 1 ? at([{ name: 'job', nth: 1 }]) : { line: 0, column: 0 };
      throw new SpecFileError([{ file, ...pos, field: '', message: count ? 'a job file holds exactly one job block' : 'no job "<id>" { ... } block found' }]);
    }
    const [id, bodies] = labels[0] as [string, unknown];
    const body = (Array.isArray(bodies) ? bodies[0] : bodies) as Record<string, unknown>;
    base = [{ name: 'job', label: id, nth: 0 }];
    paths.set('id', base);
    input = { id, ...convertBody(body ?? {}, JOB_BODY, { path: [], steps: base }, paths, problems, order) };
  } else {
    input = convertBody(raw, spec, { path: [], steps: [] }, paths, problems, order);
  }
  const names = hclNamesByKey(spec);
  const field = (path: string): string => (kind === 'job' && path === 'id' ? `job "${String(input['id'])}"` : formatHclField(hclParts(path, spec, input, paths)));
  if (problems.length) {
    throw new SpecFileError(sortProblems(problems.map((p) => ({ file, ...at(p.steps), field: field(p.field), message: hclMessage(p.message, false, '', names) }))));
  }
  const locate = (path: string): TextPosition | undefined => {
    for (const p of parents(path)) {
      const steps = paths.get(p) ?? (p === '' ? base : undefined);
      if (steps) {
        const pos = locateHcl(outline, steps);
        if (pos) return pos;
      }
    }
    return undefined;
  };
  return {
    input,
    locate,
    describe(path, message) {
      const unknown = /^unknown fields? "([^"]+)"/.exec(message);
      if (unknown) {
        const target = path ? `${path}.${unknown[1]}` : (unknown[1] as string);
        const steps = paths.get(target);
        const written = steps?.[steps.length - 1]?.name ?? (unknown[1] as string);
        const node = steps ? findNode(outline, steps) : undefined;
        const near = suggest(written, namesIn(spec, path));
        const what = node?.kind === 'block' ? 'block' : 'argument';
        const pos = locate(target) ?? { line: 0, column: 0 };
        const parent = field(path);
        return { file, ...pos, field: parent, message: `unsupported ${what} "${written}"${near ? ` (did you mean "${near}"?)` : ''}` };
      }
      const pos = locate(path) ?? { line: 0, column: 0 };
      const name = field(path);
      return { file, ...pos, field: name, message: hclMessage(message, valueAt(input, path) === undefined, name, names) };
    },
  };
}

function findNode(outline: readonly HclOutlineNode[], steps: readonly HclStep[]): HclOutlineNode | undefined {
  let nodes = outline;
  let found: HclOutlineNode | undefined;
  for (const step of steps) {
    const matches = nodes.filter((n) => n.name === step.name && (step.label === undefined || n.labels[0] === step.label));
    found = matches[step.nth] ?? matches[0];
    if (!found) return undefined;
    nodes = found.children;
  }
  return found;
}

function valueAt(input: unknown, path: string): unknown {
  let v: unknown = input;
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) {
    if (!v || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[m[2] ?? (m[1] as string)];
  }
  return v;
}

// An HCL diagnostic as a file problem: `Unsupported attribute; This object does not have...`.
function diagnosticProblem(file: string, d: Diagnostic, prefix: string): FileProblem {
  const where = d.subject ? { file: d.subject.file, line: d.subject.start.line, column: d.subject.start.column } : { file, line: 0, column: 0 };
  return { ...where, field: '', message: prefix + (d.detail ? `${d.summary}: ${d.detail}` : d.summary) };
}
