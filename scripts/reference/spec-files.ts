// docs/reference/job-file.md and volume-file.md: every block and attribute
// of a job file and a volume file, from the two tables the file parser reads
// them with (spec-files' JOB_BODY and VOLUME_BODY: HCL name -> canonical
// field, block or attribute) and the zod schemas the canonical spec is then
// checked against (structs' jobSpecSchema, volumeSpecSchema and
// hostVolumeSpecSchema: type, allowed values, default, required).

import { JOB_BODY, VOLUME_BODY, type SpecBody, type SpecField } from '../../src/spec-files/index.js';
import { hostVolumeSpecSchema, jobSpecSchema, volumeSpecSchema } from '../../src/structs/index.js';
import { anchor, cell, code, generatedNote, table } from './markdown.js';

/** The parts of a zod 4 schema this page reads (`schema._zod.def`, a number's format). */
interface Zod {
  _zod: { def: ZodDef };
  format?: string | null;
}
interface ZodDef {
  type: string;
  innerType?: Zod;
  defaultValue?: unknown;
  in?: Zod;
  out?: Zod;
  element?: Zod;
  valueType?: Zod;
  shape?: Record<string, Zod>;
  options?: Zod[];
  entries?: Record<string, string | number>;
  values?: unknown[];
  getter?: () => Zod;
  checks?: { _zod: { def: { check: string; value?: unknown; inclusive?: boolean; pattern?: RegExp } } }[];
}

interface Described {
  type: string;
  default?: unknown;
  required: boolean;
  /** The object schema inside (of a block, of each list element, of each map value). */
  object?: Zod;
}

/** What a schema takes: its type in words, its default, whether it must be given. */
function describe(schema: Zod | undefined, name = ''): Described {
  if (!schema) return { type: '', required: false };
  const def = schema._zod.def;
  switch (def.type) {
    case 'optional':
    case 'nullable':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return { ...describe(def.innerType, name), required: false };
    case 'default':
    case 'prefault':
      return { ...describe(def.innerType, name), default: def.defaultValue, required: false };
    case 'lazy':
      return describe(def.getter?.(), name);
    case 'pipe': {
      // z.preprocess(f, s) is pipe(transform, s): what is written is what s takes; x.transform(f) is pipe(x, transform).
      const inner = def.in?._zod.def.type === 'transform' ? def.out : def.in;
      const d = describe(inner, name);
      return name.endsWith('Ms') && d.type.startsWith('integer') ? { ...d, type: 'duration ("30s", "1h30m"), or milliseconds' } : d;
    }
    case 'string': {
      // A pattern that takes "30s" and "1h30m" and nothing else of these is a duration.
      const patterns = (def.checks ?? []).map(({ _zod: { def: c } }) => c.pattern).filter((p): p is RegExp => p instanceof RegExp);
      const isDuration = patterns.length > 0 && patterns.every((p) => p.test('30s') && p.test('1h30m') && !p.test('/x') && !p.test('30'));
      return { type: isDuration ? 'duration ("30s", "1h30m")' : 'string', required: true };
    }
    case 'number': {
      const bounds = (def.checks ?? []).flatMap(({ _zod: { def: c } }) =>
        c.check === 'greater_than' ? [`${c.inclusive ? '≥' : '>'} ${String(c.value)}`] : c.check === 'less_than' ? [`${c.inclusive ? '≤' : '<'} ${String(c.value)}`] : [],
      );
      const kind = schema.format === 'safeint' || schema.format === 'int32' ? 'integer' : 'number';
      return { type: bounds.length ? `${kind} (${bounds.join(', ')})` : kind, required: true };
    }
    case 'boolean':
      return { type: 'bool', required: true };
    case 'enum':
      return { type: `one of ${Object.values(def.entries ?? {}).map((v) => JSON.stringify(v)).join(', ')}`, required: true };
    case 'literal':
      return { type: (def.values ?? []).map((v) => JSON.stringify(v)).join(' or '), required: true };
    case 'array': {
      const el = describe(def.element);
      return { type: `list of ${el.object ? 'blocks' : el.type || 'values'}`, required: true, ...(el.object ? { object: el.object } : {}) };
    }
    case 'record': {
      const v = describe(def.valueType);
      return { type: `map of string to ${v.object ? 'block' : v.type || 'any'}`, required: true, ...(v.object ? { object: v.object } : {}) };
    }
    case 'object':
      return { type: 'block', required: true, object: schema };
    case 'union': {
      const parts = (def.options ?? []).map((o) => describe(o, name).type);
      return { type: [...new Set(parts)].join(' or '), required: true };
    }
    case 'unknown':
    case 'any':
      return { type: 'any', required: true };
    default:
      return { type: def.type, required: true };
  }
}

/** The field `to` of an object schema (unwrapped), when it has one. */
function fieldOf(object: Zod | undefined, to: string): Zod | undefined {
  let s = object;
  while (s && s._zod.def.type !== 'object') {
    const def = s._zod.def;
    s = def.innerType ?? (def.type === 'pipe' ? (def.in?._zod.def.type === 'transform' ? def.out : def.in) : undefined);
  }
  return s?._zod.def.shape?.[to];
}

const KIND: Record<SpecField['t'], string> = {
  attr: 'attribute',
  map: 'map (block or object of free keys)',
  block: 'block, at most once',
  blocks: 'block, repeatable',
  labeled: 'labelled block, repeatable',
  labeledMap: 'labelled block, repeatable',
};

function defaultText(value: unknown, name: string): string {
  if (value === undefined) return '';
  if (name.endsWith('Ms') && typeof value === 'number') return `${value} ms`;
  return JSON.stringify(value);
}

interface Column {
  title: string;
  schema: Zod;
}

const LINK = '\u0000';

/** Sections for `body` at `path` (`job > group > task`) and, depth first, for each block inside it. */
function sections(body: SpecBody, path: string[], objects: (Zod | undefined)[], columns: readonly Column[], seen: Map<SpecBody, string>, bodies: SpecBody[]): string[] {
  const title = path.join(' > ');
  seen.set(body, title);
  const rows: string[][] = [];
  const inner: { name: string; field: Exclude<SpecField, { t: 'attr' | 'map' }>; objects: (Zod | undefined)[] }[] = [];
  for (const name of Object.keys(body)) {
    const field = body[name] as SpecField;
    const found = objects.map((o) => describe(fieldOf(o, field.to), field.to));
    const first = found.find((d) => d.type !== '');
    const label = field.t === 'labeled' || field.t === 'labeledMap' ? `${name} "<label>"` : name;
    const perSchema = columns.length > 1 ? columns.map((_c, i) => (found[i]?.type ? (found[i]?.required ? 'required' : 'yes') : '')) : [];
    const types = [...new Set(found.map((d) => d.type).filter(Boolean))];
    let type = types.length > 1 ? columns.map((c, i) => (found[i]?.type ? `${c.title}: ${found[i]?.type}` : '')).filter(Boolean).join('; ') : (first?.type ?? '');
    if (field.t !== 'attr' && field.t !== 'map') {
      const nested = field.body;
      if (Object.keys(nested).length === 0) type = 'refused: Berth does not support it (the error says why)';
      else {
        // Linked once every section is made: a body met twice (a task under the job, under a group) has one section.
        type = `${LINK}${bodies.length}${LINK}`;
        bodies.push(nested);
        if (!seen.has(nested)) inner.push({ name, field, objects: found.map((d) => d.object) });
      }
    }
    rows.push([
      code(label),
      KIND[field.t],
      cell(type),
      ...(columns.length > 1 ? perSchema : [first?.required && field.t === 'attr' ? 'yes' : '']),
      // A block's default is its fields' defaults, listed in its own table.
      field.t === 'attr' || field.t === 'map' ? code(defaultText(first?.default, field.to)) : '',
      code(field.to),
    ]);
  }
  const headers = ['name', 'kind', 'type', ...(columns.length > 1 ? columns.map((c) => c.title) : ['required']), 'default', 'field'];
  const out = [`## ${title}\n`, table(headers, rows)];
  for (const { name, field, objects: objs } of inner) {
    if (seen.has(field.body)) continue;
    out.push(...sections(field.body, [...path, name], objs, columns, seen, bodies));
  }
  return out;
}

const LEGEND =
  '**kind**: an attribute (`name = value`), a block (`name { ... }`) or a labelled block (`name "label" { ... }`). **type**: what the value must be, as the schema checks it; a block links to its own table. **default**: what the field is when left out. **field**: the field in Berth\'s canonical JSON spec, as `--json` output and errors outside a file name it.\n';

/** The sections of a file's table, blocks linked to their sections. */
function fileSections(body: SpecBody, top: string, columns: readonly Column[]): string {
  const seen = new Map<SpecBody, string>();
  const bodies: SpecBody[] = [];
  const text = sections(body, [top], columns.map((c) => c.schema), columns, seen, bodies).join('\n');
  return text.replace(new RegExp(`${LINK}(\\d+)${LINK}`, 'g'), (_m, n: string) => {
    const title = seen.get(bodies[Number(n)] as SpecBody) ?? '';
    return `see [${title}](#${anchor(title)})`;
  });
}

/** The Markdown of docs/reference/job-file.md. */
export function jobFileReference(): string {
  const columns = [{ title: 'required', schema: jobSpecSchema as unknown as Zod }];
  return [
    generatedNote("the job file's block table (spec-files JOB_BODY) and the job schema (structs jobSpecSchema)"),
    '# Job file reference\n',
    'Every block and attribute of a job file (`job "<id>" { ... }`, HCL; JSON files use the same names), as the parser reads them. A name the tables below do not list is refused with its line. Run-time values (`${NOMAD_ALLOC_DIR}`), functions and variables: see the guides in [docs/guide/](../guide/). A task\'s `config` is checked by its driver.\n',
    LEGEND,
    fileSections(JOB_BODY, 'job', columns),
  ].join('\n');
}

/** The Markdown of docs/reference/volume-file.md. */
export function volumeFileReference(): string {
  const columns = [
    { title: 'CSI volume', schema: volumeSpecSchema as unknown as Zod },
    { title: 'host volume', schema: hostVolumeSpecSchema as unknown as Zod },
  ];
  return [
    generatedNote("the volume file's table (spec-files VOLUME_BODY) and the volume schemas (structs volumeSpecSchema, hostVolumeSpecSchema)"),
    '# Volume file reference\n',
    'Every block and attribute of a volume file (`berth volume register|create <file>`, HCL or JSON), as the parser reads them. `type = "csi"` (the default) is a CSI volume; `type = "host"` a dynamic host volume. The **CSI volume** and **host volume** columns say which kind takes a field (`required` when it must be given); where the kinds differ, the type says each; the default is the first kind\'s that takes it.\n',
    LEGEND,
    fileSections(VOLUME_BODY, 'volume', columns),
  ].join('\n');
}
