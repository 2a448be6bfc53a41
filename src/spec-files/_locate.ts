// Where in a file's text a canonical path is, for spec-files' problems: the
// file read as JSON (positions by path), as Nomad's JSON (through its
// translation) or as HCL (its outline), into a Located; a problem at a path
// then gets the line, column and words of the file as written.

import { evaluateConfig, outlineOf, toJsonShape, type Diagnostic } from '../hcl/index.js';
import { formatPath, isNomadJobJson, isNomadVolumeJson, nestingProblem, nomadJobToSpec, nomadVolumeToSpec, type NomadTranslation } from '../structs/index.js';
import { convertBody, JOB_BODY, VOLUME_BODY, type Body, type ConvertProblem, type PathSteps } from './_hcl-convert.js';
import { formatHclField, hclMessage, hclNamesByKey, hclParts, namesIn, suggest } from './_hcl-names.js';
import { labelsInOrder, locateHcl, type HclOutlineNode, type HclStep } from './_hcl-outline.js';
import { JsonSyntaxError, parseJsonWithPositions, type TextPosition } from './_json-positions.js';
import { SpecFileError, sortProblems, type FileProblem, type JobFileOptions, type Located } from './file-problems.js';

const NO_NAMES: ReadonlyMap<string, string> = new Map();

export function atPath(file: string, located: Located, path: string, message: string): FileProblem {
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

export function fromJson(file: string, text: string, kind: string): Located {
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

export function fromHcl(file: string, text: string, kind: 'job' | 'volume' | Body, opts: JobFileOptions): Located {
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
