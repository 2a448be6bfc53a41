// Values as cty has them, in plain JavaScript: string, number, boolean,
// null, arrays (lists, tuples and sets) and null-prototype objects (maps and
// objects). HCL's conversions between them (the string "5" is a number where
// a number is needed, true is "true" where a string is) live here, as do type
// constraints (`list(string)`, `object({ port = number })`).

/** An evaluated HCL value. */
export type Value = null | boolean | number | string | Value[] | { [key: string]: Value };
export type ObjectValue = { [key: string]: Value };

/** A value could not be converted; the message says what was needed ("a number is required"). */
export class ConversionError extends Error {}

export const isObject = (v: unknown): v is ObjectValue => v !== null && typeof v === 'object' && !Array.isArray(v);

/** A fresh object without a prototype (so `__proto__` is an ordinary key). */
export function newObject(entries?: Iterable<readonly [string, Value]>): ObjectValue {
  const o = Object.create(null) as ObjectValue;
  if (entries) for (const [k, v] of entries) o[k] = v;
  return o;
}

/** The type's name as HCL's messages say it. */
export function typeName(v: Value): string {
  if (v === null) return 'null';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (Array.isArray(v)) return 'tuple';
  return 'object';
}

/** A number as HCL writes it: integers without a fraction, no exponent for ordinary sizes. */
export function formatNumber(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e21) return n.toFixed(0);
  return String(n);
}

export function toStringValue(v: Value): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return formatNumber(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (v === null) throw new ConversionError('a string is required, not null');
  throw new ConversionError(`a string is required, not ${Array.isArray(v) ? 'a list' : 'an object'}`);
}

export function toNumberValue(v: Value): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'string') {
    const t = v.trim();
    if (t !== '' && /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(t)) return Number(t);
    throw new ConversionError(`a number is required, not the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v)}`);
  }
  throw new ConversionError(`a number is required, not ${describeType(v)}`);
}

export function toBoolValue(v: Value): boolean {
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new ConversionError(`a bool is required, not ${describeType(v)}`);
}

function describeType(v: Value): string {
  const t = typeName(v);
  return t === 'null' ? 'null' : t === 'tuple' ? 'a list' : t === 'object' ? 'an object' : `a ${t}`;
}

/** HCL's `==`: same type and same value, deeply. */
export function valuesEqual(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, k) => valuesEqual(x, b[k] as Value));
  if (isObject(a) && isObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && valuesEqual(a[k] as Value, b[k] as Value));
  }
  return false;
}

/** A type constraint, as `variable { type = ... }` writes it. */
export type Type =
  | { k: 'string' | 'number' | 'bool' | 'any' }
  | { k: 'list' | 'set' | 'map'; elem: Type }
  | { k: 'tuple'; elems: Type[] }
  | { k: 'object'; attrs: Record<string, { type: Type; optional: boolean; default?: Value }> };

/** `list(string)`, `object({ port = number })`... */
export function formatType(t: Type): string {
  switch (t.k) {
    case 'list':
    case 'set':
    case 'map':
      return `${t.k}(${formatType(t.elem)})`;
    case 'tuple':
      return `tuple([${t.elems.map(formatType).join(', ')}])`;
    case 'object':
      return `object({${Object.entries(t.attrs)
        .map(([k, a]) => `${k} = ${a.optional ? `optional(${formatType(a.type)})` : formatType(a.type)}`)
        .join(', ')}})`;
    default:
      return t.k;
  }
}

/**
 * Converts `v` to type `t` as HCL does (strings <-> numbers and bools,
 * tuples -> lists and sets, objects -> maps, optional object attributes
 * filled with their default or null). Throws ConversionError naming the
 * path inside the value ("element 2: a number is required").
 */
export function convertTo(v: Value, t: Type, where = ''): Value {
  const at = (msg: string): never => {
    throw new ConversionError(where ? `${where}: ${msg}` : msg);
  };
  try {
    if (v === null || t.k === 'any') return v;
    switch (t.k) {
      case 'string':
        return toStringValue(v);
      case 'number':
        return toNumberValue(v);
      case 'bool':
        return toBoolValue(v);
      case 'list':
      case 'set': {
        if (!Array.isArray(v)) return at(`a ${t.k} is required, not ${describeType(v)}`);
        const out = v.map((x, k) => convertTo(x, t.elem, `${where}[${k}]`));
        if (t.k === 'list') return out;
        const seen: Value[] = [];
        for (const x of out) if (!seen.some((s) => valuesEqual(s, x))) seen.push(x);
        return seen;
      }
      case 'map': {
        if (!isObject(v)) return at(`a map is required, not ${describeType(v)}`);
        return newObject(Object.entries(v).map(([k, x]) => [k, convertTo(x, t.elem, where ? `${where}.${k}` : k)] as const));
      }
      case 'tuple': {
        if (!Array.isArray(v)) return at(`a tuple is required, not ${describeType(v)}`);
        if (v.length !== t.elems.length) return at(`a tuple of ${t.elems.length} elements is required, not ${v.length}`);
        return v.map((x, k) => convertTo(x, t.elems[k] as Type, `${where}[${k}]`));
      }
      case 'object': {
        if (!isObject(v)) return at(`an object is required, not ${describeType(v)}`);
        const out = newObject();
        for (const [name, a] of Object.entries(t.attrs)) {
          const sub = where ? `${where}.${name}` : name;
          if (!Object.hasOwn(v, name) || v[name] === null) {
            if (!a.optional && !Object.hasOwn(v, name)) return at(`attribute "${name}" is required`);
            out[name] = a.default !== undefined ? convertTo(a.default, a.type, sub) : null;
          } else out[name] = convertTo(v[name] as Value, a.type, sub);
        }
        return out;
      }
    }
  } catch (err) {
    if (err instanceof ConversionError && where && !err.message.startsWith(where)) throw new ConversionError(`${where}: ${err.message}`);
    throw err;
  }
}
