// Job and volume files as users write them: HCL (as Nomad's) or JSON, turned
// into the canonical JSON and checked by the same zod schemas the server
// uses. Every problem names the file, the line and column, and the field.

import type * as Hcl2Json from '@cdktf/hcl2json';
import { BerthError } from '../lib/index.js';
import {
  formatPath,
  isNomadJobJson,
  isNomadVolumeJson,
  JobValidationError,
  jobTaskConfigProblems,
  nestingProblem,
  nomadJobToSpec,
  nomadVolumeToSpec,
  parseJobSpec,
  parseVolumeSpec,
  VolumeSpecValidationError,
  type JobSpec,
  type NomadTranslation,
  type VolumeSpec,
} from '../structs/index.js';
import { convertBody, JOB_BODY, VOLUME_BODY, type Body, type ConvertProblem, type PathSteps } from './_hcl-convert.js';
import { labelsInOrder, locateHcl, outlineHcl, type HclStep } from './_hcl-outline.js';
import { JsonSyntaxError, parseJsonWithPositions, type TextPosition } from './_json-positions.js';

// @cdktf/hcl2json reads, unzips and starts its WebAssembly parser as soon as
// it is imported: load it on the first HCL file only, so that a process that
// reads none (the CLI's API commands, a plugin) never pays for it.
let hcl: Promise<typeof Hcl2Json> | undefined;
async function parseHcl(file: string, text: string): Promise<unknown> {
  hcl ??= import('@cdktf/hcl2json');
  return (await hcl).parse(file, text);
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
}

/**
 * Parses a job file's text (`file` names it in errors and picks the format).
 * HCL holds exactly one `job "<id>" { ... }` block; JSON is the spec or
 * `{ "job": spec }`. Resolves with the checked spec, each task's config
 * checked against its built-in driver's schema (`taskConfigProblems`);
 * rejects with SpecFileError. Submits nothing, reads nothing from disk.
 */
export async function parseJobFile(file: string, text: string): Promise<JobFile> {
  const format = fileFormat(file, text);
  const located = format === 'hcl' ? await fromHcl(file, text, 'job') : fromJson(file, text, 'job');
  try {
    const job = parseJobSpec(located.input);
    // A task's config is checked against its driver's schema now, not found wrong on a node later.
    const configProblems = jobTaskConfigProblems(job);
    if (configProblems.length) throw new JobValidationError(configProblems);
    return { job, input: located.input as Record<string, unknown>, format, notes: located.notes ?? [] };
  } catch (err) {
    if (err instanceof JobValidationError) throw new SpecFileError(err.problems.map((p) => atPath(file, located, p.path, p.message)));
    throw err;
  }
}

/**
 * Parses a volume specification file for `purpose` (register needs
 * external_id; create refuses it). HCL holds top-level attributes and blocks;
 * JSON is the spec or `{ "volume": spec }`. Rejects with SpecFileError.
 */
export async function parseVolumeFile(file: string, text: string, purpose: 'register' | 'create'): Promise<VolumeFile> {
  const format = fileFormat(file, text);
  const located = format === 'hcl' ? await fromHcl(file, text, 'volume') : fromJson(file, text, 'volume');
  try {
    const volume = parseVolumeSpec(located.input, purpose);
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
    if (err instanceof VolumeSpecValidationError) throw new SpecFileError(err.problems.map((p) => atPath(file, located, p.path, p.message)));
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
  const located = format === 'hcl' ? await fromHcl(file, text, opts.hclBody) : fromJson(file, text, opts.wrapper);
  const locate = (path: string): string | undefined => {
    const pos = located.locate(path);
    return pos ? `${file}:${pos.line}:${pos.column}` : undefined;
  };
  const result = opts.validate(located.input as Record<string, unknown>, locate);
  if ('problems' in result) throw new SpecFileError(result.problems.map((p) => atPath(file, located, p.path, p.message)));
  return result.value;
}

/** How an HCL body maps to canonical JSON (see parseSpecText). */
export type HclBody = Body;

function atPath(file: string, located: Located, path: string, message: string): FileProblem {
  // An unknown field is found at the field itself, not at its parent.
  const unknown = /^unknown fields? "([^"]+)"/.exec(message);
  const target = unknown ? (path ? `${path}.${unknown[1]}` : (unknown[1] as string)) : path;
  const pos = located.locate(target) ?? { line: 0, column: 0 };
  return { file, line: pos.line, column: pos.column, field: path, message };
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

async function fromHcl(file: string, text: string, kind: 'job' | 'volume' | Body): Promise<Located> {
  const deep = nestingProblem(text, undefined, { hcl: true });
  if (deep) throw new SpecFileError([{ file, line: deep.line, column: deep.column, field: '', message: deep.message }]);
  let raw: Record<string, unknown>;
  try {
    raw = (await parseHcl(file, text)) as Record<string, unknown>;
  } catch (err) {
    throw new SpecFileError([hclSyntaxProblem(file, err)]);
  }
  const outline = outlineHcl(text);
  const paths: PathSteps = new Map();
  const problems: ConvertProblem[] = [];
  const order = (parent: HclStep[], name: string): string[] => labelsInOrder(outline, parent, name);
  let input: Record<string, unknown>;
  let base: HclStep[] = [];
  if (kind === 'job') {
    const jobs = raw['job'];
    const others = Object.keys(raw).filter((k) => k !== 'job');
    if (others.length) {
      const pos = locateHcl(outline, [{ name: others[0] as string, nth: 0 }]);
      throw new SpecFileError([{ file, line: pos?.line ?? 0, column: pos?.column ?? 0, field: '', message: `unexpected "${others[0]}" outside the job block` }]);
    }
    if (Array.isArray(jobs)) {
      // hcl2json gives an unlabelled `job { ... }` as a list of bodies (which would read as job "0").
      const pos = locateHcl(outline, [{ name: 'job', nth: 0 }]);
      throw new SpecFileError([{ file, line: pos?.line ?? 0, column: pos?.column ?? 0, field: 'id', message: 'the job block needs its ID as a label: job "<id>" { ... }' }]);
    }
    const labels = jobs && typeof jobs === 'object' ? Object.entries(jobs as Record<string, unknown>) : [];
    const count = labels.reduce((n, [, bodies]) => n + (Array.isArray(bodies) ? bodies.length : 1), 0);
    if (count !== 1) {
      const pos = count > 1 ? locateHcl(outline, [{ name: 'job', nth: 1 }]) : undefined;
      throw new SpecFileError([
        { file, line: pos?.line ?? 0, column: pos?.column ?? 0, field: '', message: count ? 'a job file holds exactly one job block' : 'no job "<id>" { ... } block found' },
      ]);
    }
    const [id, bodies] = labels[0] as [string, unknown];
    const body = (Array.isArray(bodies) ? bodies[0] : bodies) as Record<string, unknown>;
    base = [{ name: 'job', label: id, nth: 0 }];
    paths.set('id', base);
    input = { id, ...convertBody(body ?? {}, JOB_BODY, { path: [], steps: base }, paths, problems, order) };
  } else {
    input = convertBody(raw, kind === 'volume' ? VOLUME_BODY : kind, { path: [], steps: [] }, paths, problems, order);
  }
  if (problems.length) {
    throw new SpecFileError(
      problems.map((p) => {
        const pos = locateHcl(outline, p.steps) ?? { line: 0, column: 0 };
        return { file, ...pos, field: p.field, message: p.message };
      }),
    );
  }
  return {
    input,
    locate(path) {
      for (const p of parents(path)) {
        const steps = paths.get(p) ?? (p === '' ? base : undefined);
        if (steps) {
          const pos = locateHcl(outline, steps);
          if (pos) return pos;
        }
      }
      return undefined;
    },
  };
}

// hcl2json: `parse config: [a.hcl:2,22-23: Invalid expression; Expected the start of an expression...]`.
function hclSyntaxProblem(file: string, err: unknown): FileProblem {
  const text = err instanceof Error ? err.message : String(err);
  const m = /:(\d+),(\d+)(?:-\d+(?:,\d+)?)?: ([^;\]]+)(?:; ([^\]]*))?/.exec(text);
  if (!m) return { file, line: 0, column: 0, field: '', message: `malformed HCL: ${text.replace(/^parse config: /, '')}` };
  const detail = m[4] ? ` (${m[4].trim().replace(/\.$/, '')})` : '';
  return { file, line: Number(m[1]), column: Number(m[2]), field: '', message: `malformed HCL: ${(m[3] as string).trim()}${detail}` };
}
