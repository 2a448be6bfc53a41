import { HclSpecError } from './errors.js';
import { type CtyValue, sortedKeys } from './msgpack.js';

/** A cty type, parsed from an HCL type expression. */
export type CtyType =
  | 'string'
  | 'number'
  | 'bool'
  | 'dynamic'
  | { readonly list: CtyType }
  | { readonly set: CtyType }
  | { readonly map: CtyType }
  | { readonly object: Readonly<Record<string, CtyType>>; readonly optional?: ReadonlySet<string> }
  | { readonly tuple: readonly CtyType[] };

/** Parses `string`, `list(map(number))`, `object({a = string})`, `tuple([bool, any])`... Throws HCLSPEC_INVALID_SPEC. */
export function parseType(text: string): CtyType {
  let i = 0;
  const fail = (why: string): never => {
    throw new HclSpecError('HCLSPEC_INVALID_SPEC', `invalid type expression ${JSON.stringify(text)}: ${why}`);
  };
  const ws = (): void => {
    while (i < text.length && /\s/.test(text[i] as string)) i++;
  };
  const expect = (c: string): void => {
    ws();
    if (text[i] !== c) fail(`expected "${c}" at offset ${i}`);
    i++;
  };
  const ident = (): string => {
    ws();
    const m = /^[A-Za-z_][A-Za-z0-9_-]*/.exec(text.slice(i));
    if (!m) return fail(`expected a name at offset ${i}`);
    i += m[0].length;
    return m[0];
  };
  const type = (): CtyType => {
    const name = ident();
    switch (name) {
      case 'string':
      case 'number':
      case 'bool':
        return name;
      case 'any':
        return 'dynamic';
      case 'list':
      case 'set':
      case 'map': {
        expect('(');
        const el = type();
        expect(')');
        return name === 'list' ? { list: el } : name === 'set' ? { set: el } : { map: el };
      }
      case 'object': {
        expect('(');
        expect('{');
        const attrs: Record<string, CtyType> = {};
        const optional = new Set<string>();
        ws();
        while (text[i] !== '}') {
          const k = ident();
          ws();
          if (text[i] !== '=' && text[i] !== ':') fail(`expected "=" at offset ${i}`);
          i++;
          ws();
          if (/^optional\s*\(/.test(text.slice(i))) {
            ident();
            expect('(');
            attrs[k] = type();
            expect(')');
            optional.add(k);
          } else attrs[k] = type();
          ws();
          if (text[i] === ',') i++;
          ws();
          if (i >= text.length) fail('unterminated object type');
        }
        i++;
        expect(')');
        return optional.size > 0 ? { object: attrs, optional } : { object: attrs };
      }
      case 'tuple': {
        expect('(');
        expect('[');
        const els: CtyType[] = [];
        ws();
        while (text[i] !== ']') {
          els.push(type());
          ws();
          if (text[i] === ',') i++;
          ws();
          if (i >= text.length) fail('unterminated tuple type');
        }
        i++;
        expect(')');
        return { tuple: els };
      }
      default:
        return fail(`unknown type "${name}"`);
    }
  };
  const t = type();
  ws();
  if (i !== text.length) fail(`unexpected "${text.slice(i)}"`);
  return t;
}

/** How cty names a type in messages (`list of string`). */
export function friendlyName(t: CtyType): string {
  if (typeof t === 'string') return t === 'dynamic' ? 'any' : t;
  if ('list' in t) return `list of ${friendlyName(t.list)}`;
  if ('set' in t) return `set of ${friendlyName(t.set)}`;
  if ('map' in t) return `map of ${friendlyName(t.map)}`;
  if ('object' in t) return 'object';
  return 'tuple';
}

/** Whether the type contains `any` (hcldec then builds tuples/objects instead of lists/maps). */
export function hasDynamic(t: CtyType): boolean {
  if (typeof t === 'string') return t === 'dynamic';
  if ('list' in t) return hasDynamic(t.list);
  if ('set' in t) return hasDynamic(t.set);
  if ('map' in t) return hasDynamic(t.map);
  if ('object' in t) return Object.values(t.object).some(hasDynamic);
  return t.tuple.some(hasDynamic);
}

/** A conversion failure at `path` below the converted value (joined by the caller). */
export class ConvertError extends Error {
  constructor(
    readonly path: readonly (string | number)[],
    message: string,
  ) {
    super(message);
  }
}

const NUMBER = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * Converts a JSON value to `type` as cty's convert package does for config
 * values: numbers and bools to strings, numeric strings to numbers,
 * "true"/"false" to bools, arrays to lists/sets/tuples, objects to maps and
 * objects; null stays null. Throws ConvertError.
 */
export function convert(value: unknown, type: CtyType, path: (string | number)[] = []): CtyValue {
  if (value === null || value === undefined) return null;
  const fail = (why: string): never => {
    throw new ConvertError(path, why);
  };
  if (type === 'dynamic') return natural(value, path);
  if (type === 'string') {
    if (typeof value === 'string') return value;
    if (typeof value === 'number') return String(value);
    if (typeof value === 'boolean') return value ? 'true' : 'false';
    return fail(`a string is required, not ${jsonKind(value)}`);
  }
  if (type === 'number') {
    if (typeof value === 'number') return value;
    if (typeof value === 'string' && NUMBER.test(value.trim())) return Number(value.trim());
    return fail(`a number is required, not ${jsonKind(value)}`);
  }
  if (type === 'bool') {
    if (typeof value === 'boolean') return value;
    if (value === 'true' || value === 'false') return value === 'true';
    return fail(`a bool is required, not ${jsonKind(value)}`);
  }
  if ('list' in type || 'set' in type) {
    if (!Array.isArray(value)) return fail(`a ${friendlyName(type)} is required, not ${jsonKind(value)}`);
    const el = 'list' in type ? type.list : type.set;
    const items = value.map((v, i) => convert(v, el, [...path, i]));
    return 'list' in type ? items : toSet(items);
  }
  if ('tuple' in type) {
    if (!Array.isArray(value)) return fail(`a tuple is required, not ${jsonKind(value)}`);
    if (value.length !== type.tuple.length) return fail(`a tuple of ${type.tuple.length} elements is required, not ${value.length}`);
    return value.map((v, i) => convert(v, type.tuple[i] as CtyType, [...path, i]));
  }
  if (typeof value !== 'object' || Array.isArray(value)) return fail(`a ${friendlyName(type)} is required, not ${jsonKind(value)}`);
  const obj = value as Record<string, unknown>;
  if ('map' in type) {
    const out: Record<string, CtyValue> = {};
    for (const k of Object.keys(obj)) out[k] = convert(obj[k], type.map, [...path, k]);
    return out;
  }
  // cty's object conversion: attributes the type lacks are dropped, missing ones are an error unless optional().
  const out: Record<string, CtyValue> = {};
  for (const [k, t] of Object.entries(type.object)) {
    if (!(k in obj) && !type.optional?.has(k)) fail(`attribute "${k}" is required`);
    out[k] = convert(obj[k], t, [...path, k]);
  }
  return out;
}

/** A JSON value with its natural cty type (the `any` type): arrays are tuples, objects are objects. */
function natural(value: unknown, path: (string | number)[]): CtyValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map((v, i) => natural(v, [...path, i]));
  if (typeof value === 'object') {
    const out: Record<string, CtyValue> = {};
    for (const [k, v] of Object.entries(value)) out[k] = natural(v, [...path, k]);
    return out;
  }
  throw new ConvertError(path, `unsupported value ${String(value)}`);
}

function jsonKind(v: unknown): string {
  if (Array.isArray(v)) return 'a list';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  return `a ${typeof v}`;
}

/**
 * A cty set of `items`: duplicates removed, in cty's iteration order
 * (set_internals.go setRules.Less): strings bytewise, numbers numerically,
 * false before true, nulls last; other element types by their set hash
 * bytes (appendSetHashBytes), compared bytewise.
 */
export function toSet(items: CtyValue[]): CtyValue[] {
  const seen = new Map<string, CtyValue>();
  for (const v of items) seen.set(hashBytes(v), v);
  const uniq = [...seen.values()];
  return uniq.sort((a, b) => {
    if (a === null) return b === null ? 0 : 1;
    if (b === null) return -1;
    if (typeof a === 'string' && typeof b === 'string') return Buffer.compare(Buffer.from(a), Buffer.from(b));
    if (typeof a === 'number' && typeof b === 'number') return a - b;
    if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b);
    return Buffer.compare(Buffer.from(hashBytes(a)), Buffer.from(hashBytes(b)));
  });
}

/** cty's set hash text: `~` null, numbers as %.10g, T/F, quoted strings, `[a;b;]`, `{k:v;}`, `<a;b;>`. */
function hashBytes(v: CtyValue): string {
  if (v === null) return '~';
  if (typeof v === 'boolean') return v ? 'T' : 'F';
  if (typeof v === 'number') return goG10(v);
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map((e) => hashBytes(e) + ';').join('')}]`;
  const o = v as Record<string, CtyValue>;
  return `<${sortedKeys(Object.keys(o)).map((k) => hashBytes(o[k] ?? null) + ';').join('')}>`;
}

/** Go's big.Float String(): %.10g. */
function goG10(n: number): string {
  if (!Number.isFinite(n)) return n > 0 ? '+Inf' : '-Inf';
  if (n === 0) return '0';
  const exp = Math.floor(Math.log10(Math.abs(n)));
  if (exp < -4 || exp >= 10) {
    const [m, e] = n.toExponential(9).split('e') as [string, string];
    const mant = m.includes('.') ? m.replace(/0+$/, '').replace(/\.$/, '') : m;
    const ev = Number(e);
    return `${mant}e${ev < 0 ? '-' : '+'}${String(Math.abs(ev)).padStart(2, '0')}`;
  }
  const s = n.toPrecision(10);
  return s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s;
}
