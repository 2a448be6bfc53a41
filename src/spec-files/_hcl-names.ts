// Canonical paths -> the names an HCL file wrote, built from the same table
// that maps HCL to canonical JSON (_hcl-convert.ts), so that every field
// added there is named right in errors without more work: the problem at
// `groups[0].tasks[0].resources.memoryMb` is `resources.memory`; at
// `groups[1].name`, `group "web"`. Messages are said in HCL's words too.

import type { Body, Field, PathSteps } from './_hcl-convert.js';

interface Part {
  name: string;
  label?: string;
  index?: number;
  /** A repeated block (its first is shown without [0]). */
  block?: boolean;
}

const SEGMENT = /([^.[\]]+)|\[(\d+)\]/g;

/** `groups[0].tasks` -> ['groups', 0, 'tasks']. */
export function pathSegments(path: string): (string | number)[] {
  return [...path.matchAll(SEGMENT)].map((m) => (m[2] !== undefined ? Number(m[2]) : (m[1] as string)));
}

const snake = (s: string): string => s.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

// The HCL name a canonical key came from: the one the file used, else the table's first.
function entryFor(body: Body, to: string, written: string | undefined): [string, Field] | undefined {
  const entries = Object.entries(body).filter(([, f]) => f.to === to);
  return entries.find(([name]) => name === written) ?? entries[0];
}

/** The HCL parts a canonical path leads through (`group "web"`, `task "srv"`, `resources`, `memory`). */
export function hclParts(path: string, spec: Body, input: unknown, paths: PathSteps): Part[] {
  const segs = pathSegments(path);
  const parts: Part[] = [];
  let body: Body | undefined = spec;
  let value: unknown = input;
  let prefix = '';
  const descend = (seg: string | number): void => {
    prefix = typeof seg === 'number' ? `${prefix}[${seg}]` : prefix ? `${prefix}.${seg}` : seg;
    value = isObject(value) || Array.isArray(value) ? (value as Record<string, unknown>)[seg as string] : undefined;
  };
  for (let k = 0; k < segs.length; k++) {
    const seg = segs[k] as string | number;
    if (typeof seg === 'number' || !body) {
      if (typeof seg === 'number' && parts.length) (parts[parts.length - 1] as Part).index = seg;
      else parts.push({ name: String(seg) });
      descend(seg);
      continue;
    }
    const here = prefix ? `${prefix}.${seg}` : seg;
    const steps = paths.get(here);
    const entry = entryFor(body, seg, steps?.[steps.length - 1]?.name);
    if (!entry) {
      parts.push({ name: steps?.[steps.length - 1]?.name ?? snake(seg) });
      body = undefined;
      descend(seg);
      continue;
    }
    const [name, field] = entry;
    descend(seg);
    switch (field.t) {
      case 'attr':
      case 'map':
        parts.push({ name });
        body = undefined;
        break;
      case 'block':
        parts.push({ name });
        body = field.body;
        break;
      case 'blocks': {
        const next = segs[k + 1];
        parts.push({ name, block: true, ...(typeof next === 'number' ? { index: next } : {}) });
        if (typeof next === 'number') {
          descend(next);
          k++;
        }
        body = field.body;
        break;
      }
      case 'labeled':
      case 'labeledMap': {
        const next = segs[k + 1];
        if (next === undefined) {
          parts.push({ name });
          break;
        }
        descend(next);
        k++;
        const label = field.t === 'labeled' ? (isObject(value) && typeof value[field.labelAs] === 'string' ? (value[field.labelAs] as string) : String(next)) : String(next);
        parts.push({ name, label });
        body = field.body;
        // `groups[1].name` is the label itself.
        if (field.t === 'labeled' && segs[k + 1] === field.labelAs && k + 2 === segs.length) return parts;
        break;
      }
      default:
        // A kind of field this file does not know yet: its name, and the rest as written.
        parts.push({ name });
        body = 'body' in field ? (field as { body: Body }).body : undefined;
    }
  }
  return parts;
}

/**
 * How a problem's field is shown: the parts after the innermost labelled
 * block (`resources.memory`, `csi_plugin.mount_dir`), or that block itself
 * when the problem is about it (`group "web"`).
 */
export function formatHclField(parts: readonly Part[]): string {
  let last = -1;
  parts.forEach((p, k) => {
    if (p.label !== undefined) last = k;
  });
  const show = (p: Part): string => (p.label !== undefined ? `${p.name} "${p.label}"` : p.index !== undefined && (p.index > 0 || !p.block) ? `${p.name}[${p.index}]` : p.name);
  const tail = parts.slice(last + 1);
  if (!tail.length) return last >= 0 ? show(parts[last] as Part) : '';
  return tail.map(show).join('.');
}

/** Every HCL name of the table, by canonical key (for rewording messages that name fields). */
export function hclNamesByKey(spec: Body, out = new Map<string, string>()): Map<string, string> {
  for (const [name, f] of Object.entries(spec)) {
    if (!out.has(f.to)) out.set(f.to, name);
    if ('body' in f) hclNamesByKey(f.body, out);
  }
  return out;
}

/** HCL names a body takes (for "did you mean"). */
export function namesIn(spec: Body, path: string): string[] {
  let body: Body | undefined = spec;
  for (const seg of pathSegments(path)) {
    if (typeof seg === 'number' || !body) continue;
    const entry: Field | undefined = Object.values(body).find((f) => f.to === seg);
    body = entry && 'body' in entry ? entry.body : undefined;
    if (!body) return [];
  }
  return body ? Object.keys(body) : [];
}

function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) (d[0] as number[])[j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = d[i] as number[];
      const up = d[i - 1] as number[];
      row[j] = Math.min((up[j] as number) + 1, (row[j - 1] as number) + 1, (up[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return (d[a.length] as number[])[b.length] as number;
}

/** The closest of `names` to `name`, when close enough to be a typo. */
export function suggest(name: string, names: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = Math.max(1, Math.floor(name.length / 3)) + 1;
  for (const n of names) {
    const d = distance(name, n);
    if (d < bestD) [best, bestD] = [n, d];
  }
  return best;
}

/** Examples for required fields, by HCL name, shown as `required, e.g. "/csi"`. */
const EXAMPLES: Record<string, string> = {
  driver: '"raw_exec"',
  command: '"/bin/sh"',
  mount_dir: '"/csi"',
  plugin_id: '"hostpath"',
  external_id: '"vol-0123"',
  destination: '"/data"',
  volume: '"data"',
  source: '"my-volume"',
  type: '"csi"',
  access_mode: '"single-node-writer"',
  attachment_mode: '"file-system"',
  id: '"hostpath"',
  name: '"data"',
  image: '"redis:7"',
  group: 'group "app" { task "server" { ... } }',
  task: 'task "server" { driver = "raw_exec" ... }',
  capability: 'capability { access_mode = "single-node-writer", attachment_mode = "file-system" }',
};

/**
 * A schema message in the words of an HCL file: `required, e.g. "/csi"` for
 * a missing field, `must be at least 1` for zod's "Too small", camelCase
 * field names replaced by the file's names.
 */
export function hclMessage(message: string, missing: boolean, field: string, names: ReadonlyMap<string, string>): string {
  const last = field.split('.').pop()?.replace(/\[\d+\]$/, '') ?? '';
  if (missing && /^(expected |needs at least 1 )/.test(message)) return EXAMPLES[last] ? `required, e.g. ${EXAMPLES[last]}` : 'required';
  const typed: Record<string, string> = { number: 'a number', string: 'a string', boolean: 'true or false', array: 'a list', object: 'a block or a map', record: 'a map', int: 'a whole number' };
  const m = /^expected (\w+)$/.exec(message);
  if (m) return `expected ${typed[m[1] as string] ?? m[1]}`;
  const small = /^Too small: expected (\w+) to (?:be|have) (>=?)(\d+(?:\.\d+)?)(?: (\w+))?/.exec(message);
  if (small) {
    const [, kind, op, n, unit] = small;
    if (kind === 'number') return op === '>=' ? `must be at least ${n}` : `must be greater than ${n}`;
    if (kind === 'string' && n === '1') return 'must not be empty';
    return `needs at least ${n} ${unit === 'characters' ? 'characters' : 'items'}`;
  }
  const big = /^Too big: expected (\w+) to (?:be|have) (<=?)(\d+(?:\.\d+)?)(?: (\w+))?/.exec(message);
  if (big) {
    const [, kind, op, n, unit] = big;
    if (kind === 'number') return op === '<=' ? `must be at most ${n}` : `must be less than ${n}`;
    return `takes at most ${n} ${unit === 'characters' ? 'characters' : 'items'}`;
  }
  if (/^Invalid input/.test(message)) return 'has an unexpected form';
  return message.replace(/\b([a-z]+(?:[A-Z][a-z0-9]*)+)\b/g, (w) => names.get(w) ?? w).replace(/: true\b/, ' = true');
}
