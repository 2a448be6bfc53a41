// Go text/template's predefined functions (eq ne lt le gt ge not len index
// slice print printf println html js urlquery call; and/or are evaluated
// lazily by the executor) and a printf that follows Go's fmt verbs.

import { fn, formatNumber, formatValue, int, isMap, isTrue, typeName, type TemplateFunction } from './_values.js';

function basicKind(v: unknown): 'number' | 'string' | 'bool' | 'nil' {
  if (typeof v === 'number') return 'number';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  if (v === null || v === undefined) return 'nil';
  throw new Error(`non-comparable type ${typeName(v)}`);
}

function equal(a: unknown, b: unknown): boolean {
  const ka = basicKind(a);
  const kb = basicKind(b);
  if (ka === 'nil' || kb === 'nil') return ka === kb;
  if (ka !== kb) throw new Error('incompatible types for comparison');
  return a === b;
}

function less(a: unknown, b: unknown): boolean {
  const ka = basicKind(a);
  const kb = basicKind(b);
  if (ka === 'bool' || ka === 'nil' || kb === 'bool' || kb === 'nil') throw new Error(`invalid type for comparison`);
  if (ka !== kb) throw new Error('incompatible types for comparison');
  return (a as number | string) < (b as number | string);
}

function length(v: unknown): number {
  if (typeof v === 'string') return Buffer.byteLength(v);
  if (Array.isArray(v)) return v.length;
  if (v instanceof Map) return v.size;
  if (isMap(v)) return Object.keys(v).length;
  throw new Error(`len of type ${typeName(v)}`);
}

function index(item: unknown, keys: unknown[]): unknown {
  let v = item;
  for (const key of keys) {
    if (v === undefined || v === null) throw new Error('index of untyped nil');
    if (Array.isArray(v) || typeof v === 'string') {
      const i = int(key, 'index');
      const n = typeof v === 'string' ? Buffer.byteLength(v) : v.length;
      if (i < 0 || i >= n) throw new Error(`index out of range: ${i}`);
      v = typeof v === 'string' ? Buffer.from(v)[i] : v[i];
    } else if (v instanceof Map) {
      v = v.has(key) ? v.get(key) : null;
    } else if (isMap(v)) {
      v = Object.hasOwn(v, String(key)) ? (v as Record<string, unknown>)[String(key)] : null;
    } else throw new Error(`can't index item of type ${typeName(v)}`);
  }
  return v;
}

function slice(item: unknown, idx: unknown[]): unknown {
  if (typeof item !== 'string' && !Array.isArray(item)) throw new Error(`can't slice item of type ${typeName(item)}`);
  if (typeof item === 'string' && idx.length > 2) throw new Error('cannot 3-index slice a string');
  const bytes = typeof item === 'string' ? Buffer.from(item) : undefined;
  const n = bytes ? bytes.length : (item as unknown[]).length;
  const [lo = 0, hi = n] = idx.map((x) => int(x, 'slice index'));
  if (lo < 0 || hi < lo || hi > n) throw new Error(`index out of range: ${hi > n ? hi : lo}`);
  return bytes ? bytes.subarray(lo, hi).toString() : (item as unknown[]).slice(lo, hi);
}

/** Go's fmt.Sprint: spaces between operands when neither side is a string. */
export function sprint(args: unknown[]): string {
  let out = '';
  args.forEach((a, i) => {
    if (i > 0 && typeof a !== 'string' && typeof args[i - 1] !== 'string') out += ' ';
    out += formatValue(a);
  });
  return out;
}

function htmlEscape(s: string): string {
  return s.replace(/[&<>"'\0]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": '&#39;', '\0': '\uFFFD' })[c] as string);
}

function jsEscape(s: string): string {
  // eslint-disable-next-line no-control-regex -- Go's JSEscape escapes control characters
  return s.replace(/[\\'"<>&=\x00-\x1f]/g, (c) => {
    if (c === '\\') return '\\\\';
    if (c === "'") return "\\'";
    if (c === '"') return '\\"';
    return `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  });
}

/** Go's url.QueryEscape. */
export function queryEscape(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`).replace(/%20/g, '+');
}

/** The predefined functions of Go's text/template (and/or excepted: the executor evaluates them lazily). */
export const GO_BUILTINS: ReadonlyMap<string, TemplateFunction> = new Map<string, TemplateFunction>([
  ['and', fn(1, Infinity, () => undefined)],
  ['or', fn(1, Infinity, () => undefined)],
  ['not', fn(1, 1, ([v]) => !isTrue(v))],
  ['eq', fn(1, Infinity, ([a, ...rest]) => {
    if (rest.length === 0) throw new Error('missing argument for comparison');
    return rest.some((b) => equal(a, b));
  })],
  ['ne', fn(2, 2, ([a, b]) => !equal(a, b))],
  ['lt', fn(2, 2, ([a, b]) => less(a, b))],
  ['le', fn(2, 2, ([a, b]) => less(a, b) || equal(a, b))],
  ['gt', fn(2, 2, ([a, b]) => !less(a, b) && !equal(a, b))],
  ['ge', fn(2, 2, ([a, b]) => !less(a, b))],
  ['len', fn(1, 1, ([v]) => length(v))],
  ['index', fn(1, Infinity, ([item, ...keys]) => index(item, keys))],
  ['slice', fn(1, 4, ([item, ...idx]) => slice(item, idx))],
  ['print', fn(0, Infinity, (args) => sprint(args))],
  ['println', fn(0, Infinity, (args) => `${args.map(formatValue).join(' ')}\n`)],
  ['printf', fn(1, Infinity, ([format, ...args]) => sprintf(String(format), args))],
  ['html', fn(0, Infinity, (args) => htmlEscape(sprint(args)))],
  ['js', fn(0, Infinity, (args) => jsEscape(sprint(args)))],
  ['urlquery', fn(0, Infinity, (args) => queryEscape(sprint(args)))],
  ['call', fn(1, Infinity, ([f, ...args]) => {
    if (typeof f !== 'function') throw new Error(`non-function of type ${typeName(f)}`);
    return (f as (...a: unknown[]) => unknown)(...args);
  })],
]);

// ---- printf -------------------------------------------------------------------

const VERB = /%([-+# 0]*)(\*|\d+)?(?:\.(\*|\d*))?([a-zA-Z%])/g;

/** Go's fmt.Sprintf for the common verbs (v s q d x X o b f F e E g G t c U %). */
export function sprintf(format: string, args: unknown[]): string {
  let next = 0;
  const take = (): { ok: boolean; v: unknown } => (next < args.length ? { ok: true, v: args[next++] } : { ok: false, v: undefined });
  const out = format.replace(VERB, (_m, flags: string, width: string | undefined, prec: string | undefined, verb: string) => {
    if (verb === '%') return '%';
    const w = width === '*' ? Number(take().v) : width ? Number(width) : undefined;
    const p = prec === '*' ? Number(take().v) : prec !== undefined ? Number(prec || '0') : undefined;
    const arg = take();
    if (!arg.ok) return `%!${verb}(MISSING)`;
    const body = formatVerb(verb, arg.v, flags, p);
    if (body === undefined) return `%!${verb}(${typeName(arg.v)}=${formatValue(arg.v)})`;
    return pad(body, w, flags, typeof arg.v === 'number' && verb !== 's' && verb !== 'q');
  });
  if (next < args.length) return `${out}%!(EXTRA ${args.slice(next).map((a) => `${typeName(a)}=${formatValue(a)}`).join(', ')})`;
  return out;
}

function pad(s: string, width: number | undefined, flags: string, numeric: boolean): string {
  if (width === undefined || s.length >= width) return s;
  if (flags.includes('-')) return s.padEnd(width);
  if (flags.includes('0') && numeric) {
    const sign = /^[+-]/.test(s) ? (s[0] as string) : '';
    return sign + s.slice(sign.length).padStart(width - sign.length, '0');
  }
  return s.padStart(width);
}

function signed(s: string, v: number, flags: string): string {
  return flags.includes('+') && v >= 0 ? `+${s}` : flags.includes(' ') && v >= 0 ? ` ${s}` : s;
}

function expForm(s: string): string {
  return s.replace(/e([+-])(\d)$/, 'e$10$2');
}

function formatVerb(verb: string, v: unknown, flags: string, prec: number | undefined): string | undefined {
  switch (verb) {
    case 'v':
      return typeof v === 'number' ? signed(formatNumber(v), v, flags) : formatValue(v);
    case 's':
      if (typeof v === 'number' || typeof v === 'boolean') return undefined;
      return prec !== undefined ? [...formatValue(v)].slice(0, prec).join('') : formatValue(v);
    case 'q':
      if (typeof v === 'number' && Number.isInteger(v)) return `'${String.fromCodePoint(v)}'`;
      return typeof v === 'string' ? (flags.includes('#') && !v.includes('`') ? `\`${v}\`` : JSON.stringify(v)) : undefined;
    case 't':
      return typeof v === 'boolean' ? String(v) : undefined;
    case 'T':
      return typeName(v);
    case 'c':
      return typeof v === 'number' && Number.isInteger(v) ? String.fromCodePoint(v) : undefined;
    case 'U':
      return typeof v === 'number' && Number.isInteger(v) ? `U+${v.toString(16).toUpperCase().padStart(4, '0')}` : undefined;
    case 'd':
    case 'o':
    case 'b': {
      if (typeof v !== 'number' || !Number.isInteger(v)) return undefined;
      const radix = verb === 'd' ? 10 : verb === 'o' ? 8 : 2;
      const body = Math.abs(v).toString(radix);
      return signed(`${v < 0 ? '-' : ''}${flags.includes('#') && verb === 'o' ? '0' : ''}${body}`, v, flags);
    }
    case 'x':
    case 'X': {
      let s: string;
      if (typeof v === 'string') s = Buffer.from(v).toString('hex');
      else if (typeof v === 'number' && Number.isInteger(v)) s = `${v < 0 ? '-' : ''}${flags.includes('#') ? '0x' : ''}${Math.abs(v).toString(16)}`;
      else return undefined;
      return verb === 'X' ? s.toUpperCase().replace('0X', '0X') : s;
    }
    case 'f':
    case 'F':
      return typeof v === 'number' ? signed(v.toFixed(prec ?? 6), v, flags) : undefined;
    case 'e':
    case 'E': {
      if (typeof v !== 'number') return undefined;
      const s = expForm(v.toExponential(prec ?? 6));
      return signed(verb === 'E' ? s.toUpperCase() : s, v, flags);
    }
    case 'g':
    case 'G': {
      if (typeof v !== 'number') return undefined;
      const s = prec === undefined ? formatNumber(v) : expForm(String(Number(v.toPrecision(prec || 1))));
      return signed(verb === 'G' ? s.toUpperCase() : s, v, flags);
    }
    default:
      return undefined;
  }
}
