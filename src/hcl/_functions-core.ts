// The string, collection and numeric functions of Nomad's job language
// (jobspec2/functions.go over cty's stdlib), written for our values.

import { FunctionError, sortedEntries, type HclFunction } from './evaluate.js';
import { bool, fn, goRegExp, int, list, num, obj, str, strFn } from './_function-args.js';
import { formatNumber, isObject, newObject, toStringValue, typeName, valuesEqual, type Value } from './values.js';

const distinct = (items: Value[]): Value[] => {
  const out: Value[] = [];
  for (const x of items) if (!out.some((o) => valuesEqual(o, x))) out.push(x);
  return out;
};

const lengthOf = (v: Value, k: number): number => {
  if (typeof v === 'string') return [...new Intl.Segmenter().segment(v)].length;
  if (Array.isArray(v)) return v.length;
  if (isObject(v)) return Object.keys(v).length;
  throw new FunctionError(`a string, list or map is required, not ${v === null ? 'null' : typeName(v)}`, k);
};

const indentLines = (n: number, s: string): string => s.replace(/\n/g, `\n${' '.repeat(n)}`);

// Go's %v of a value, as cty's format prints it.
const goValue = (v: Value, json: boolean): string => {
  if (typeof v === 'string' && !json) return v;
  if (typeof v === 'number') return formatNumber(v);
  return JSON.stringify(v);
};

function format(spec: string, args: Value[], start: number): string {
  let k = start;
  return spec.replace(/%([-+# 0]*)(\d+)?(?:\.(\d+))?([a-zA-Z%])/g, (whole, flags: string, width: string | undefined, prec: string | undefined, verb: string) => {
    if (verb === '%') return '%';
    if (k >= args.length) throw new FunctionError(`not enough arguments for ${JSON.stringify(whole)} in the format string`);
    const v = args[k++] as Value;
    let out: string;
    switch (verb) {
      case 'v':
        out = v === null ? 'null' : goValue(v, flags.includes('#'));
        break;
      case 's':
        out = toStringValue(v);
        if (prec !== undefined) out = out.slice(0, Number(prec));
        break;
      case 'q':
        out = JSON.stringify(toStringValue(v));
        break;
      case 'd':
        out = Math.trunc(num([v], 0)).toFixed(0);
        if (flags.includes('+') && !out.startsWith('-')) out = `+${out}`;
        break;
      case 'f':
      case 'F':
        out = num([v], 0).toFixed(prec === undefined ? 6 : Number(prec));
        if (flags.includes('+') && !out.startsWith('-')) out = `+${out}`;
        break;
      case 'e':
      case 'E':
        out = num([v], 0).toExponential(prec === undefined ? 6 : Number(prec)).replace(/e([+-])(\d)$/, 'e$10$2');
        if (verb === 'E') out = out.toUpperCase();
        break;
      case 'g':
        out = formatNumber(num([v], 0));
        break;
      case 't':
        out = String(bool([v], 0));
        break;
      case 'b':
        out = Math.trunc(num([v], 0)).toString(2);
        break;
      case 'o':
        out = Math.trunc(num([v], 0)).toString(8);
        break;
      case 'x':
      case 'X':
        out = typeof v === 'string' ? Buffer.from(v).toString('hex') : Math.trunc(num([v], 0)).toString(16);
        if (verb === 'X') out = out.toUpperCase();
        break;
      default:
        throw new FunctionError(`unsupported format verb %${verb}`);
    }
    if (width !== undefined && out.length < Number(width)) {
      const pad = Number(width) - out.length;
      if (flags.includes('-')) out += ' '.repeat(pad);
      else if (flags.includes('0') && /[dfFeEbxXo]/.test(verb)) out = out.startsWith('-') ? `-${'0'.repeat(pad)}${out.slice(1)}` : '0'.repeat(pad) + out;
      else out = ' '.repeat(pad) + out;
    }
    return out;
  });
}

const flatten = (v: Value[]): Value[] => v.flatMap((x) => (Array.isArray(x) ? flatten(x) : [x]));

const sorted = (v: Value[]): Value[] => v.map((_x, k) => str(v, k)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

export const CORE_FUNCTIONS: Record<string, HclFunction> = {
  // numeric
  abs: fn(['num'], (a) => Math.abs(num(a, 0))),
  ceil: fn(['num'], (a) => Math.ceil(num(a, 0))),
  floor: fn(['num'], (a) => Math.floor(num(a, 0))),
  log: fn(['num', 'base'], (a) => Math.log(num(a, 0)) / Math.log(num(a, 1))),
  pow: fn(['num', 'power'], (a) => num(a, 0) ** num(a, 1)),
  signum: fn(['num'], (a) => Math.sign(num(a, 0))),
  max: fn([], (a) => (a.length ? Math.max(...a.map((_, k) => num(a, k))) : failNoArgs('max')), { variadic: 'numbers' }),
  min: fn([], (a) => (a.length ? Math.min(...a.map((_, k) => num(a, k))) : failNoArgs('min')), { variadic: 'numbers' }),
  sum: fn(['list'], (a) => list(a, 0).reduce<number>((s, _x, k) => s + num(list(a, 0), k), 0)),
  parseint: fn(['number', 'base'], (a) => {
    const base = int(a, 1);
    if (base < 2 || base > 62) throw new FunctionError('base must be a whole number between 2 and 62 inclusive', 1);
    const s = str(a, 0);
    const digits = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'.slice(0, base);
    const body = s.replace(/^[-+]/, '');
    const alphabet = base <= 36 ? digits.toLowerCase() : digits;
    const text = base <= 36 ? body.toLowerCase() : body;
    if (!body || [...text].some((c) => !alphabet.includes(c))) throw new FunctionError(`cannot parse ${JSON.stringify(s)} as a base ${base} integer`, 0);
    const n = [...text].reduce((acc, c) => acc * base + alphabet.indexOf(c), 0);
    return s.startsWith('-') ? -n : n;
  }),
  // string
  chomp: strFn((s) => s.replace(/(\r\n|\n|\r)+$/, '')),
  format: fn(['format'], (a) => format(str(a, 0), a, 1), { variadic: 'args' }),
  formatlist: fn(
    ['format'],
    (a) => {
      const lists = a.slice(1).filter(Array.isArray);
      const n = lists.length ? (lists[0] as Value[]).length : 1;
      if (lists.some((l) => (l as Value[]).length !== n)) throw new FunctionError('all list arguments must have the same length');
      return Array.from({ length: n }, (_, k) => format(str(a, 0), a.map((x) => (Array.isArray(x) ? (x[k] as Value) : x)), 1));
    },
    { variadic: 'args' },
  ),
  indent: fn(['spaces', 'str'], (a) => indentLines(int(a, 0), str(a, 1))),
  join: fn(['separator'], (a) => a.slice(1).flatMap((_, k) => list(a, k + 1).map((x, j) => str(list(a, k + 1), j) && toStringValue(x))).join(str(a, 0)), { variadic: 'lists' }),
  lower: strFn((s) => s.toLowerCase()),
  upper: strFn((s) => s.toUpperCase()),
  title: strFn((s) => s.replace(/(^|[^\p{L}\p{N}'])(\p{L})/gu, (_m, pre: string, c: string) => pre + c.toUpperCase())),
  replace: fn(['str', 'substr', 'replace'], (a) => {
    const [s, sub, rep] = [str(a, 0), str(a, 1), str(a, 2)];
    if (sub.length > 1 && sub.startsWith('/') && sub.endsWith('/')) return s.replace(goRegExp(sub.slice(1, -1), true, 1), rep.replace(/\$\{(\w+)\}/g, '$$<$1>'));
    return s.split(sub).join(rep);
  }),
  regex_replace: fn(['str', 'pattern', 'replace'], (a) => str(a, 0).replace(goRegExp(str(a, 1), true, 1), str(a, 2).replace(/\$\{(\w+)\}/g, '$$<$1>'))),
  regex: fn(['pattern', 'string'], (a) => {
    const m = goRegExp(str(a, 0), false, 0).exec(str(a, 1));
    if (!m) throw new FunctionError('pattern did not match any part of the given string');
    return captures(m);
  }),
  regexall: fn(['pattern', 'string'], (a) => [...str(a, 1).matchAll(goRegExp(str(a, 0), true, 0))].map(captures)),
  split: fn(['separator', 'str'], (a) => str(a, 1).split(str(a, 0))),
  strlen: fn(['str'], (a) => lengthOf(str(a, 0), 0)),
  strrev: strFn((s) => [...new Intl.Segmenter().segment(s)].map((x) => x.segment).reverse().join('')),
  substr: fn(['str', 'offset', 'length'], (a) => {
    const chars = [...new Intl.Segmenter().segment(str(a, 0))].map((x) => x.segment);
    let off = int(a, 1);
    const len = int(a, 2);
    if (off < 0) off = Math.max(chars.length + off, 0);
    return chars.slice(off, len < 0 ? undefined : off + len).join('');
  }),
  trim: fn(['str', 'cutset'], (a) => {
    const cut = new Set(str(a, 1));
    const chars = [...str(a, 0)];
    let s = 0;
    let e = chars.length;
    while (s < e && cut.has(chars[s] as string)) s++;
    while (e > s && cut.has(chars[e - 1] as string)) e--;
    return chars.slice(s, e).join('');
  }),
  trimprefix: fn(['str', 'prefix'], (a) => (str(a, 0).startsWith(str(a, 1)) ? str(a, 0).slice(str(a, 1).length) : str(a, 0))),
  trimsuffix: fn(['str', 'suffix'], (a) => (str(a, 1) && str(a, 0).endsWith(str(a, 1)) ? str(a, 0).slice(0, -str(a, 1).length) : str(a, 0))),
  trimspace: strFn((s) => s.trim()),
  startswith: fn(['str', 'prefix'], (a) => str(a, 0).startsWith(str(a, 1))),
  endswith: fn(['str', 'suffix'], (a) => str(a, 0).endsWith(str(a, 1))),
  strcontains: fn(['str', 'substr'], (a) => str(a, 0).includes(str(a, 1))),
  // collections
  chunklist: fn(['list', 'size'], (a) => {
    const l = list(a, 0);
    const size = int(a, 1);
    if (size < 0) throw new FunctionError('the size argument must be positive', 1);
    if (size === 0) return [l];
    const out: Value[] = [];
    for (let k = 0; k < l.length; k += size) out.push(l.slice(k, k + size));
    return out;
  }),
  coalesce: fn([], (a) => {
    const found = a.find((x) => x !== null && x !== '');
    if (found === undefined) throw new FunctionError('no non-null, non-empty-string arguments');
    return found;
  }, { variadic: 'vals' }),
  coalescelist: fn([], (a) => a.find((_x, k) => list(a, k).length > 0) ?? [], { variadic: 'vals' }),
  compact: fn(['list'], (a) => list(a, 0).filter((x) => x !== null && x !== '')),
  concat: fn([], (a) => a.flatMap((_, k) => list(a, k)), { variadic: 'seqs' }),
  contains: fn(['list', 'value'], (a) => list(a, 0).some((x) => valuesEqual(x, a[1] as Value))),
  distinct: fn(['list'], (a) => distinct(list(a, 0))),
  element: fn(['list', 'index'], (a) => {
    const l = list(a, 0);
    const k = int(a, 1);
    if (!l.length) throw new FunctionError('cannot use element function with an empty list', 0);
    if (k < 0) throw new FunctionError('cannot use element function with a negative index', 1);
    return l[k % l.length] as Value;
  }),
  flatten: fn(['list'], (a) => flatten(list(a, 0))),
  index: fn(['list', 'value'], (a) => {
    const k = list(a, 0).findIndex((x) => valuesEqual(x, a[1] as Value));
    if (k < 0) throw new FunctionError('item not found');
    return k;
  }),
  keys: fn(['inputMap'], (a) => Object.keys(obj(a, 0)).sort()),
  values: fn(['mapping'], (a) => sortedEntries(obj(a, 0)).map(([, v]) => v)),
  length: fn(['value'], (a) => lengthOf(a[0] as Value, 0)),
  lookup: fn(['inputMap', 'key'], (a) => {
    const m = obj(a, 0);
    const k = str(a, 1);
    if (Object.hasOwn(m, k)) return m[k] as Value;
    if (a.length > 2) return a[2] as Value;
    throw new FunctionError(`the given key ${JSON.stringify(k)} is not in the map, and no default was given`, 1);
  }, { optional: ['default'] }),
  merge: fn([], (a) => newObject(a.flatMap((x, k) => (x === null ? [] : Object.entries(obj(a, k))))), { variadic: 'maps' }),
  range: fn(['start'], (a) => {
    const [start, limit] = a.length === 1 ? [0, num(a, 0)] : [num(a, 0), num(a, 1)];
    let step = a.length > 2 ? num(a, 2) : 1;
    if (a.length === 2 && limit < start) step = -1;
    if (step === 0) throw new FunctionError('step must not be zero', 2);
    const out: number[] = [];
    for (let x = start; step > 0 ? x < limit : x > limit; x += step) {
      out.push(x);
      if (out.length > 1024) throw new FunctionError('more than 1024 values were generated; either decrease the difference between start and end or use a smaller step');
    }
    return out;
  }, { optional: ['limit', 'step'] }),
  reverse: fn(['list'], (a) => [...list(a, 0)].reverse()),
  setintersection: fn(['first_set'], (a) => distinct(list(a, 0)).filter((x) => a.slice(1).every((_, k) => list(a, k + 1).some((y) => valuesEqual(x, y)))), { variadic: 'other_sets' }),
  setunion: fn(['first_set'], (a) => distinct(a.flatMap((_, k) => list(a, k))), { variadic: 'other_sets' }),
  setproduct: fn([], (a) => a.reduce<Value[][]>((acc, _x, k) => acc.flatMap((p) => list(a, k).map((y) => [...p, y])), [[]]), { variadic: 'sets' }),
  slice: fn(['list', 'start_index', 'end_index'], (a) => {
    const l = list(a, 0);
    const [s, e] = [int(a, 1), int(a, 2)];
    if (s < 0 || e > l.length || s > e) throw new FunctionError(`the indices must satisfy 0 <= start (${s}) <= end (${e}) <= length (${l.length})`);
    return l.slice(s, e);
  }),
  sort: fn(['list'], (a) => sorted(list(a, 0))),
  zipmap: fn(['keys', 'values'], (a) => {
    const [k, v] = [list(a, 0), list(a, 1)];
    if (k.length !== v.length) throw new FunctionError(`number of keys (${k.length}) does not match number of values (${v.length})`);
    return newObject(k.map((x, j) => [toStringValue(x), v[j] as Value] as const));
  }),
  alltrue: fn(['list'], (a) => list(a, 0).every((_, k) => bool(list(a, 0), k))),
  anytrue: fn(['list'], (a) => list(a, 0).some((_, k) => bool(list(a, 0), k))),
  one: fn(['list'], (a) => {
    const l = list(a, 0);
    if (l.length > 1) throw new FunctionError(`must be a list, set, or tuple value with either zero or one elements, not ${l.length}`, 0);
    return l.length ? (l[0] as Value) : null;
  }),
};

function failNoArgs(name: string): never {
  throw new FunctionError(`${name} needs at least one number`);
}

// A match -> its captures: a list, or an object when the groups are named.
function captures(m: RegExpMatchArray): Value {
  if (m.groups) return newObject(Object.entries(m.groups).map(([k, v]) => [k, v ?? null] as const));
  if (m.length === 1) return m[0];
  return m.slice(1).map((x) => x ?? null);
}
