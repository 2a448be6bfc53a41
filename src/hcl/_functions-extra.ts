// Encoding, hashing, UUID, network (cidr*), date and type-conversion
// functions of Nomad's job language, and try()/can().

import { createHash, randomUUID } from 'node:crypto';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { evaluate, EvalFailure, FunctionError, type EvalContext, type HclFunction } from './evaluate.js';
import { fn, int, obj, str, strFn } from './_function-args.js';
import { typeFromExpr } from './types.js';
import { convertTo, ConversionError, isObject, newObject, type Type, type Value } from './values.js';

/** Plain JSON/YAML data -> our values (null-prototype objects, numbers, no undefined). */
export function fromPlain(v: unknown): Value {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Date) return v.toISOString();
  if (Array.isArray(v)) return v.map(fromPlain);
  if (typeof v === 'object') return newObject(Object.entries(v).map(([k, x]) => [k, fromPlain(x)] as const));
  return String(v);
}

const hash = (algo: string) => strFn((s) => createHash(algo).update(s).digest('hex'));

function csvDecode(text: string): Value {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let k = 0; k < text.length; k++) {
    const c = text[k] as string;
    if (quoted) {
      if (c === '"' && text[k + 1] === '"') {
        field += '"';
        k++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && field === '') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[k + 1] === '\n') k++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (quoted) throw new FunctionError('unterminated quoted field', 0);
  if (field !== '' || row.length) {
    row.push(field);
    rows.push(row);
  }
  const [header, ...data] = rows.filter((r) => !(r.length === 1 && r[0] === ''));
  if (!header) throw new FunctionError('missing header line', 0);
  return data.map((r, n) => {
    if (r.length !== header.length) throw new FunctionError(`record ${n + 2} has ${r.length} fields, the header has ${header.length}`, 0);
    return newObject(header.map((h, j) => [h, r[j] as string] as const));
  });
}

// --- UUIDs
const NAMESPACES: Record<string, string> = {
  dns: '6ba7b810-9dad-11d1-80b4-00c04fd430c8',
  url: '6ba7b811-9dad-11d1-80b4-00c04fd430c8',
  oid: '6ba7b812-9dad-11d1-80b4-00c04fd430c8',
  x500: '6ba7b814-9dad-11d1-80b4-00c04fd430c8',
};
function uuidv5(namespace: string, name: string): string {
  const ns = NAMESPACES[namespace] ?? namespace;
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(ns)) throw new FunctionError('must be "dns", "url", "oid", "x500" or a UUID', 0);
  const bytes = createHash('sha1').update(Buffer.from(ns.replace(/-/g, ''), 'hex')).update(name).digest().subarray(0, 16);
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const h = bytes.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

// --- cidr*: addresses as bigints of 32 or 128 bits.
interface Prefix {
  addr: bigint;
  bits: 32 | 128;
  len: number;
}
function parseAddress(s: string): { addr: bigint; bits: 32 | 128 } | undefined {
  if (/^\d+\.\d+\.\d+\.\d+$/.test(s)) {
    const parts = s.split('.').map(Number);
    if (parts.some((p) => p > 255)) return undefined;
    return { addr: parts.reduce((a, p) => (a << 8n) | BigInt(p), 0n), bits: 32 };
  }
  if (!s.includes(':')) return undefined;
  const [head, tail, extra] = s.split('::');
  if (extra !== undefined) return undefined;
  const groups = (x: string | undefined): string[] => (x ? x.split(':') : []);
  const h = groups(head);
  const t = groups(tail);
  const fill = tail === undefined ? 0 : 8 - h.length - t.length;
  const all = [...h, ...Array<string>(fill).fill('0'), ...t];
  if (all.length !== 8 || all.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return undefined;
  return { addr: all.reduce((a, g) => (a << 16n) | BigInt(Number.parseInt(g, 16)), 0n), bits: 128 };
}
function parsePrefix(s: string, k: number): Prefix {
  const [a, l] = s.split('/');
  const parsed = a === undefined ? undefined : parseAddress(a);
  const len = Number(l);
  if (!parsed || l === undefined || !/^\d+$/.test(l) || len > parsed.bits) throw new FunctionError(`invalid CIDR address: ${s}`, k);
  const hostBits = BigInt(parsed.bits - len);
  return { addr: (parsed.addr >> hostBits) << hostBits, bits: parsed.bits, len };
}
function formatAddress(addr: bigint, bits: 32 | 128): string {
  if (bits === 32) return [24n, 16n, 8n, 0n].map((s) => String((addr >> s) & 255n)).join('.');
  const groups = Array.from({ length: 8 }, (_, k) => Number((addr >> BigInt(112 - k * 16)) & 0xffffn));
  let best = -1;
  let bestLen = 1;
  for (let k = 0; k < 8; ) {
    if (groups[k] !== 0) {
      k++;
      continue;
    }
    let e = k;
    while (e < 8 && groups[e] === 0) e++;
    if (e - k > bestLen) [best, bestLen] = [k, e - k];
    k = e;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}
function subnet(p: Prefix, newbits: number, netnum: number, k: number): Prefix {
  const len = p.len + newbits;
  if (newbits < 0 || len > p.bits) throw new FunctionError(`insufficient address space to extend prefix of ${p.len} by ${newbits}`, k);
  if (netnum < 0 || BigInt(netnum) >= 1n << BigInt(newbits)) throw new FunctionError(`prefix extension of ${newbits} does not accommodate a subnet numbered ${netnum}`, k + 1);
  return { addr: p.addr | (BigInt(netnum) << BigInt(p.bits - len)), bits: p.bits, len };
}
const fmtPrefix = (p: Prefix): string => `${formatAddress(p.addr, p.bits)}/${p.len}`;

// --- dates: RFC 3339 with the offset it was written in.
interface Instant {
  ms: number;
  offsetMin: number;
}
function parseTimestamp(s: string, k: number): Instant {
  const m = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/.exec(s);
  if (!m) throw new FunctionError(`not a valid RFC3339 timestamp: ${JSON.stringify(s)}`, k);
  const ms = Date.parse(s.toUpperCase());
  if (Number.isNaN(ms)) throw new FunctionError(`not a valid RFC3339 timestamp: ${JSON.stringify(s)}`, k);
  const z = m[8] as string;
  const offsetMin = z.toUpperCase() === 'Z' ? 0 : (z.startsWith('-') ? -1 : 1) * (Number(z.slice(1, 3)) * 60 + Number(z.slice(4, 6)));
  return { ms, offsetMin };
}
const pad = (n: number, w = 2): string => String(Math.abs(n)).padStart(w, '0');
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
function formatDate(spec: string, t: Instant): string {
  const d = new Date(t.ms + t.offsetMin * 60_000);
  const off = (sep: string): string => `${t.offsetMin < 0 ? '-' : '+'}${pad(Math.trunc(Math.abs(t.offsetMin) / 60))}${sep}${pad(Math.abs(t.offsetMin) % 60)}`;
  const h12 = d.getUTCHours() % 12 === 0 ? 12 : d.getUTCHours() % 12;
  const tokens: Record<string, () => string> = {
    YYYY: () => pad(d.getUTCFullYear(), 4),
    YY: () => pad(d.getUTCFullYear() % 100),
    MMMM: () => MONTHS[d.getUTCMonth()] as string,
    MMM: () => (MONTHS[d.getUTCMonth()] as string).slice(0, 3),
    MM: () => pad(d.getUTCMonth() + 1),
    M: () => String(d.getUTCMonth() + 1),
    DD: () => pad(d.getUTCDate()),
    D: () => String(d.getUTCDate()),
    EEEE: () => DAYS[d.getUTCDay()] as string,
    EEE: () => (DAYS[d.getUTCDay()] as string).slice(0, 3),
    hh: () => pad(d.getUTCHours()),
    h: () => String(d.getUTCHours()),
    HH: () => pad(h12),
    H: () => String(h12),
    AA: () => (d.getUTCHours() < 12 ? 'AM' : 'PM'),
    aa: () => (d.getUTCHours() < 12 ? 'am' : 'pm'),
    mm: () => pad(d.getUTCMinutes()),
    m: () => String(d.getUTCMinutes()),
    ss: () => pad(d.getUTCSeconds()),
    s: () => String(d.getUTCSeconds()),
    ZZZZZ: () => off(':'),
    ZZZZ: () => off(''),
    ZZZ: () => (t.offsetMin === 0 ? 'UTC' : off('')),
    Z: () => (t.offsetMin === 0 ? 'Z' : off(':')),
  };
  let out = '';
  for (let k = 0; k < spec.length; ) {
    const c = spec[k] as string;
    if (c === "'") {
      const end = spec.indexOf("'", k + 1);
      if (end < 0) throw new FunctionError('unterminated literal \'', 0);
      out += end === k + 1 ? "'" : spec.slice(k + 1, end);
      k = end + 1;
      continue;
    }
    if (/[A-Za-z]/.test(c)) {
      let e = k;
      while (spec[e] === c) e++;
      const run = spec.slice(k, e);
      const f = tokens[run];
      if (!f) throw new FunctionError(`invalid date format verb ${JSON.stringify(run)}`, 0);
      out += f();
      k = e;
      continue;
    }
    out += c;
    k++;
  }
  return out;
}
function rfc3339(t: Instant): string {
  return formatDate("YYYY-MM-DD'T'hh:mm:ssZ", t);
}
// µ as \u00b5: the agent's bundle stays ASCII, which it reads fastest (scripts/build.mjs).
const UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, '\u00b5s': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
function parseDuration(s: string, k: number): number {
  const m = /^([-+]?)((?:\d+(?:\.\d*)?(?:ns|us|\u00b5s|ms|s|m|h))+|0)$/.exec(s);
  if (!m) throw new FunctionError(`invalid duration ${JSON.stringify(s)}`, k);
  let ms = 0;
  for (const [, n, u] of (m[2] as string).matchAll(/(\d+(?:\.\d*)?)(ns|us|\u00b5s|ms|s|m|h)/g)) ms += Number(n) * (UNITS[u as string] as number);
  return m[1] === '-' ? -ms : ms;
}

const typeConversion = (type: Type, name: string): HclFunction =>
  fn(['v'], (a) => {
    try {
      return convertTo(a[0] as Value, type);
    } catch (err) {
      if (err instanceof ConversionError) throw new FunctionError(`cannot convert to ${name}: ${err.message}`, 0);
      throw err;
    }
  });

export const EXTRA_FUNCTIONS: Record<string, HclFunction> = {
  base64encode: strFn((s) => Buffer.from(s, 'utf8').toString('base64')),
  base64decode: fn(['str'], (a) => {
    const s = str(a, 0);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) throw new FunctionError('failed to decode base64 data', 0);
    const out = Buffer.from(s, 'base64');
    const text = out.toString('utf8');
    if (Buffer.from(text, 'utf8').compare(out) !== 0) throw new FunctionError('the result of decoding the provided string is not valid UTF-8', 0);
    return text;
  }),
  urlencode: strFn((s) => encodeURIComponent(s).replace(/%20/g, '+').replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)),
  jsonencode: fn(['val'], (a) => JSON.stringify(sortKeys(a[0] as Value))),
  jsondecode: fn(['str'], (a) => {
    try {
      return fromPlain(JSON.parse(str(a, 0)));
    } catch (err) {
      throw new FunctionError(`invalid JSON: ${(err as Error).message}`, 0);
    }
  }),
  yamlencode: fn(['value'], (a) => stringifyYaml(sortKeys(a[0] as Value), { lineWidth: 0 })),
  yamldecode: fn(['src'], (a) => {
    try {
      return fromPlain(parseYaml(str(a, 0)));
    } catch (err) {
      throw new FunctionError(`invalid YAML: ${(err as Error).message.split('\n')[0]}`, 0);
    }
  }),
  csvdecode: fn(['str'], (a) => csvDecode(str(a, 0))),
  md5: hash('md5'),
  sha1: hash('sha1'),
  sha256: hash('sha256'),
  sha512: hash('sha512'),
  uuidv4: fn([], () => randomUUID()),
  uuidv5: fn(['namespace', 'name'], (a) => uuidv5(str(a, 0), str(a, 1))),
  cidrhost: fn(['prefix', 'hostnum'], (a) => {
    const p = parsePrefix(str(a, 0), 0);
    const n = int(a, 1);
    const size = 1n << BigInt(p.bits - p.len);
    const host = n < 0 ? size + BigInt(n) : BigInt(n);
    if (host < 0n || host >= size) throw new FunctionError(`prefix of ${p.len} does not accommodate a host numbered ${n}`, 1);
    return formatAddress(p.addr | host, p.bits);
  }),
  cidrnetmask: fn(['prefix'], (a) => {
    const p = parsePrefix(str(a, 0), 0);
    if (p.bits !== 32) throw new FunctionError('only IPv4 networks have a netmask', 0);
    return formatAddress(((1n << 32n) - 1n) ^ ((1n << BigInt(32 - p.len)) - 1n), 32);
  }),
  cidrsubnet: fn(['prefix', 'newbits', 'netnum'], (a) => fmtPrefix(subnet(parsePrefix(str(a, 0), 0), int(a, 1), int(a, 2), 1))),
  cidrsubnets: fn(
    ['prefix'],
    (a) => {
      const base = parsePrefix(str(a, 0), 0);
      const end = base.addr + (1n << BigInt(base.bits - base.len));
      let next = base.addr;
      return a.slice(1).map((_, j) => {
        const newbits = int(a, j + 1);
        const len = base.len + newbits;
        if (newbits < 1 || len > base.bits) throw new FunctionError(`would extend prefix to ${len} bits, which is ${len > base.bits ? 'too long' : 'not longer than the base prefix'}`, j + 1);
        const size = 1n << BigInt(base.bits - len);
        const start = ((next + size - 1n) / size) * size;
        if (start + size > end) throw new FunctionError(`not enough remaining address space for a subnet with a prefix of ${len} bits`, j + 1);
        next = start + size;
        return fmtPrefix({ addr: start, bits: base.bits, len });
      });
    },
    { variadic: 'newbits' },
  ),
  formatdate: fn(['format', 'time'], (a) => formatDate(str(a, 0), parseTimestamp(str(a, 1), 1))),
  timeadd: fn(['timestamp', 'duration'], (a) => {
    const t = parseTimestamp(str(a, 0), 0);
    return rfc3339({ ms: t.ms + parseDuration(str(a, 1), 1), offsetMin: t.offsetMin });
  }),
  tostring: typeConversion({ k: 'string' }, 'string'),
  tonumber: typeConversion({ k: 'number' }, 'number'),
  tobool: typeConversion({ k: 'bool' }, 'bool'),
  tolist: typeConversion({ k: 'list', elem: { k: 'any' } }, 'list'),
  toset: typeConversion({ k: 'set', elem: { k: 'any' } }, 'set'),
  tomap: fn(['v'], (a) => newObject(Object.entries(obj(a, 0)))),
  convert: {
    params: ['value', 'type'],
    impl: () => null,
    lazy: (args, ctx) => {
      const [value, type] = args;
      if (!value || !type || args.length !== 2) throw new EvalFailure({ severity: 'error', summary: 'Invalid function argument', detail: 'convert takes a value and a type: convert(value, list(string)).', ...(args[0] ? { subject: args[0].range } : {}) });
      const t = typeFromExpr(type, ctx);
      if ('diagnostic' in t) throw new EvalFailure(t.diagnostic);
      try {
        return convertTo(evaluate(value, ctx), t.type);
      } catch (err) {
        if (err instanceof ConversionError) throw new EvalFailure({ severity: 'error', summary: 'Invalid function argument', detail: `Invalid value for "value" parameter: ${err.message}.`, subject: value.range });
        throw err;
      }
    },
  },
  try: {
    params: [],
    variadic: 'expressions',
    impl: () => null,
    lazy: (args: Parameters<NonNullable<HclFunction['lazy']>>[0], ctx: EvalContext) => {
      let last: EvalFailure | undefined;
      for (const e of args) {
        try {
          return evaluate(e, ctx);
        } catch (err) {
          if (!(err instanceof EvalFailure)) throw err;
          last = err;
        }
      }
      throw new EvalFailure({ severity: 'error', summary: 'Error in function call', detail: `Call to function "try" failed: no expression succeeded${last ? ` (the last: ${last.diagnostic.summary}; ${last.diagnostic.detail ?? ''})` : ''}.` });
    },
  },
  can: {
    params: ['expression'],
    impl: () => null,
    lazy: (args, ctx) => {
      if (args.length !== 1) throw new EvalFailure({ severity: 'error', summary: 'Invalid function argument', detail: 'can takes exactly one expression.' });
      try {
        evaluate(args[0] as Parameters<typeof evaluate>[0], ctx);
        return true;
      } catch (err) {
        if (err instanceof EvalFailure) return false;
        throw err;
      }
    },
  },
};

// jsonencode and yamlencode write object keys in cty's order (sorted).
function sortKeys(v: Value): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (isObject(v)) {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) Object.defineProperty(out, k, { value: sortKeys(v[k] as Value), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return v;
}

