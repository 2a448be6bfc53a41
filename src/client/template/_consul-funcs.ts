// consul-template's functions that need neither Consul, Vault nor Nomad's
// service catalog, with the argument orders consul-template gives them (the
// value last, so that they pipe: `{{ "a,b" | split "," }}`). `env` reads the
// task's environment, `file` the allocation directory only.

import { createHash } from 'node:crypto';
import YAML from 'yaml';
import type { ServiceLookup } from './_nomad-funcs.js';
import { fn, int, isMap, list, sortedEntries, str, typeName, type TemplateFunction } from './_values.js';

/** What the key-free functions read from outside the template. */
export interface FunctionEnv {
  /** The task's environment (`env`). */
  env: Readonly<Record<string, string>>;
  /** Reads a file for `file`; throws when it is outside the sandbox or unreadable. */
  readFile(path: string): string;
  /** Milliseconds since the epoch, for `timestamp`. */
  now(): number;
  /** Nomad's service catalog, for `nomadService`/`nomadServices`. */
  services?: ServiceLookup;
}

/** Functions that need a service Berth does not have, and what they need. */
export const UNSUPPORTED_FUNCTIONS: ReadonlyMap<string, string> = new Map([
  ...['key', 'keyExists', 'keyOrDefault', 'ls', 'safeLs', 'tree', 'safeTree', 'service', 'services', 'node', 'nodes', 'datacenters', 'connect', 'caLeaf', 'caRoot', 'byKey', 'byTag', 'byMeta', 'explode', 'explodeMap', 'exportedServices', 'partitions', 'peerings'].map(
    (n) => [n, 'reads from Consul, which Berth does not have'] as const,
  ),
  ...['secret', 'secrets', 'pkiCert'].map((n) => [n, 'reads from Vault, which Berth does not have'] as const),
  ...['nomadVar', 'nomadVarList', 'nomadVarListSafe', 'nomadVarGet', 'nomadVarExists'].map(
    (n) => [n, "reads Nomad's variables, which Berth does not have"] as const,
  ),
  ['sockaddr', 'is not supported by Berth'],
  ['toTOML', 'is not supported by Berth'],
  ['plugin', 'runs a program on the node and is denied (as in Nomad by default)'],
  ['writeToFile', 'writes outside the template and is denied (as in Nomad by default)'],
]);

function num(v: unknown, what = 'argument'): number {
  if (typeof v === 'number') return v;
  throw new Error(`wrong type for ${what}; expected a number; got ${typeName(v)}`);
}

/** consul-template's math: `{{ subtract 2 5 }}` is 5 - 2 (the piped value is the left operand). */
function math(op: (a: number, b: number) => number, integral = false): TemplateFunction {
  return fn(2, 2, ([b, a]) => {
    const x = num(a);
    const y = num(b);
    if (integral && y === 0) throw new Error('division by zero');
    const r = op(x, y);
    return integral && Number.isInteger(x) && Number.isInteger(y) ? Math.trunc(r) : r;
  });
}

function inList(haystack: unknown, needle: unknown): boolean {
  if (typeof haystack === 'string') return haystack.includes(str(needle));
  if (Array.isArray(haystack)) return haystack.includes(needle);
  if (isMap(haystack)) return Object.hasOwn(haystack, String(needle));
  throw new Error(`cannot search in type ${typeName(haystack)}`);
}

/** Go's encoding/json: map keys sorted, `<`, `>`, `&` escaped. */
function goJson(v: unknown, indent?: number): string {
  const sorted = (x: unknown): unknown => (Array.isArray(x) ? x.map(sorted) : isMap(x) ? Object.fromEntries(sortedEntries(x).map(([k, y]) => [String(k), sorted(y)])) : x);
  const text = JSON.stringify(sorted(v === undefined ? null : v), null, indent) ?? 'null';
  return text.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const TRUE_WORDS = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_WORDS = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

function indent(spaces: number, s: string): string {
  if (spaces < 0) throw new Error('indent value must be a positive integer');
  const prefix = ' '.repeat(spaces);
  return s.replace(/^(?=[^\n])/gm, prefix);
}

/** The key-free consul-template functions, reading `ctx` for env, file and time. */
export function consulTemplateFunctions(ctx: FunctionEnv): Map<string, TemplateFunction> {
  const b64 = (enc: BufferEncoding, url = false): [TemplateFunction, TemplateFunction] => [
    fn(1, 1, ([s]) => Buffer.from(str(s), url ? 'base64url' : enc).toString()),
    fn(1, 1, ([s]) => {
      const out = Buffer.from(str(s)).toString(url ? 'base64url' : enc);
      // Go's URLEncoding pads with '='; Node's base64url does not.
      return url ? out + '='.repeat((4 - (out.length % 4)) % 4) : out;
    }),
  ];
  const [b64dec, b64enc] = b64('base64');
  const [b64urlDec, b64urlEnc] = b64('base64', true);
  const trimSet = (cut: string, s: string, left: boolean, right: boolean): string => {
    const set = new Set([...cut]);
    const chars = [...s];
    let i = 0;
    let j = chars.length;
    while (left && i < j && set.has(chars[i] as string)) i++;
    while (right && j > i && set.has(chars[j - 1] as string)) j--;
    return chars.slice(i, j).join('');
  };
  return new Map<string, TemplateFunction>([
    ['env', fn(1, 1, ([name]) => ctx.env[str(name)] ?? '')],
    ['envOrDefault', fn(2, 2, ([name, def]) => ctx.env[str(name)] || str(def))],
    ['mustEnv', fn(1, 1, ([name]) => {
      const v = ctx.env[str(name)];
      if (v === undefined) throw new Error(`environment variable ${str(name)} is not set`);
      return v;
    })],
    ['file', fn(1, 1, ([path]) => ctx.readFile(str(path)))],
    ['executeTemplate', fn(1, 2, ([name, data], call) => call.executeTemplate(str(name), data))],
    ['base64Decode', b64dec],
    ['base64Encode', b64enc],
    ['base64URLDecode', b64urlDec],
    ['base64URLEncode', b64urlEnc],
    ['contains', fn(2, 2, ([needle, haystack]) => inList(haystack, needle))],
    ['in', fn(2, 2, ([haystack, needle]) => inList(haystack, needle))],
    ['containsAll', fn(2, 2, ([needles, haystack]) => list(needles).every((n) => inList(haystack, n)))],
    ['containsAny', fn(2, 2, ([needles, haystack]) => list(needles).some((n) => inList(haystack, n)))],
    ['containsNone', fn(2, 2, ([needles, haystack]) => !list(needles).some((n) => inList(haystack, n)))],
    ['containsNotAll', fn(2, 2, ([needles, haystack]) => !list(needles).every((n) => inList(haystack, n)))],
    ['indent', fn(2, 2, ([n, s]) => indent(int(n), str(s)))],
    ['join', fn(2, 2, ([sep, items]) => list(items).map((x) => str(x, 'list element')).join(str(sep)))],
    ['split', fn(2, 2, ([sep, s]) => (str(s).trim() === '' ? [] : str(s).split(str(sep))))],
    ['replaceAll', fn(3, 3, ([from, to, s]) => str(s).replaceAll(str(from), str(to)))],
    ['regexReplaceAll', fn(3, 3, ([re, to, s]) => str(s).replace(new RegExp(str(re), 'g'), str(to).replace(/\$\{(\w+)\}/g, '$$<$1>').replace(/\$<(\d+)>/g, '$$$1')))],
    ['regexMatch', fn(2, 2, ([re, s]) => new RegExp(str(re)).test(str(s)))],
    ['trimSpace', fn(1, 1, ([s]) => str(s).trim())],
    ['trim', fn(2, 2, ([cut, s]) => trimSet(str(cut), str(s), true, true))],
    ['trimPrefix', fn(2, 2, ([p, s]) => (str(s).startsWith(str(p)) ? str(s).slice(str(p).length) : str(s)))],
    ['trimSuffix', fn(2, 2, ([p, s]) => (str(p) && str(s).endsWith(str(p)) ? str(s).slice(0, -str(p).length) : str(s)))],
    ['toLower', fn(1, 1, ([s]) => str(s).toLowerCase())],
    ['toUpper', fn(1, 1, ([s]) => str(s).toUpperCase())],
    ['toTitle', fn(1, 1, ([s]) => str(s).replace(/(^|[^\p{L}\p{N}_'])(\p{L})/gu, (_m, pre: string, c: string) => pre + c.toUpperCase()))],
    ['parseBool', fn(1, 1, ([s]) => {
      if (TRUE_WORDS.has(str(s))) return true;
      if (FALSE_WORDS.has(str(s)) || str(s) === '') return false;
      throw new Error(`parsing "${str(s)}": invalid syntax`);
    })],
    ['parseFloat', fn(1, 1, ([s]) => {
      const v = str(s) === '' ? 0 : Number(str(s));
      if (Number.isNaN(v) && str(s) !== 'NaN') throw new Error(`parsing "${str(s)}": invalid syntax`);
      return v;
    })],
    ['parseInt', fn(1, 1, ([s]) => parseInteger(str(s), true))],
    ['parseUint', fn(1, 1, ([s]) => parseInteger(str(s), false))],
    ['parseJSON', fn(1, 1, ([s]) => (str(s) === '' ? {} : (JSON.parse(str(s)) as unknown)))],
    ['parseYAML', fn(1, 1, ([s]) => (str(s) === '' ? {} : (YAML.parse(str(s)) as unknown)))],
    ['toJSON', fn(1, 1, ([v]) => goJson(v))],
    ['toJSONPretty', fn(1, 1, ([v]) => goJson(v, 2))],
    ['toYAML', fn(1, 1, ([v]) => YAML.stringify(v ?? null, { sortMapEntries: true, indentSeq: false }).replace(/\n$/, ''))],
    ['timestamp', fn(0, 1, ([layout]) => {
      const now = new Date(ctx.now());
      if (layout === undefined) return formatGoTime(now, '2006-01-02T15:04:05Z07:00');
      return str(layout) === 'unix' ? String(Math.floor(now.getTime() / 1000)) : formatGoTime(now, str(layout));
    })],
    ['sha256Hex', fn(1, 1, ([s]) => createHash('sha256').update(str(s)).digest('hex'))],
    ['md5sum', fn(1, 1, ([s]) => createHash('md5').update(str(s)).digest('hex'))],
    ['loop', fn(1, 2, (args) => {
      const [from, to] = args.length === 1 ? [0, int(args[0])] : [int(args[0]), int(args[1])];
      if (to - from > 1_000_000) throw new Error('loop of more than 1000000 items');
      return Array.from({ length: Math.max(0, to - from) }, (_x, i) => from + i);
    })],
    ['add', math((a, b) => a + b)],
    ['subtract', math((a, b) => a - b)],
    ['multiply', math((a, b) => a * b)],
    ['divide', math((a, b) => a / b, true)],
    ['modulo', math((a, b) => a % b, true)],
    ['minimum', math((a, b) => Math.min(a, b))],
    ['maximum', math((a, b) => Math.max(a, b))],
  ]);
}

function parseInteger(s: string, signed: boolean): number {
  if (s === '') return 0;
  if (!(signed ? /^[+-]?\d+$/ : /^\+?\d+$/).test(s)) throw new Error(`parsing "${s}": invalid syntax`);
  return Number(s);
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const LAYOUT = /January|Jan|Monday|Mon|2006|06|01|_2|02|002|15|03|04|05|PM|pm|MST|Z07:00|Z0700|-07:00|-0700|\.0+|\.9+|1|2|3|4|5/g;

/** Formats `d` (in UTC) by a Go time layout ("2006-01-02T15:04:05Z07:00"). */
export function formatGoTime(d: Date, layout: string): string {
  const p2 = (n: number): string => String(n).padStart(2, '0');
  const hour12 = d.getUTCHours() % 12 || 12;
  return layout.replace(LAYOUT, (tok) => {
    if (tok.startsWith('.')) {
      const ms = String(d.getUTCMilliseconds()).padStart(3, '0').padEnd(9, '0').slice(0, tok.length - 1);
      return tok[1] === '9' ? (ms.replace(/0+$/, '') ? `.${ms.replace(/0+$/, '')}` : '') : `.${ms}`;
    }
    switch (tok) {
      case 'January': return MONTHS[d.getUTCMonth()] as string;
      case 'Jan': return (MONTHS[d.getUTCMonth()] as string).slice(0, 3);
      case 'Monday': return DAYS[d.getUTCDay()] as string;
      case 'Mon': return (DAYS[d.getUTCDay()] as string).slice(0, 3);
      case '2006': return String(d.getUTCFullYear());
      case '06': return p2(d.getUTCFullYear() % 100);
      case '01': return p2(d.getUTCMonth() + 1);
      case '1': return String(d.getUTCMonth() + 1);
      case '02': return p2(d.getUTCDate());
      case '_2': return String(d.getUTCDate()).padStart(2, ' ');
      case '2': return String(d.getUTCDate());
      case '002': return String(Math.floor((d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1).padStart(3, '0');
      case '15': return p2(d.getUTCHours());
      case '03': return p2(hour12);
      case '3': return String(hour12);
      case '04': return p2(d.getUTCMinutes());
      case '4': return String(d.getUTCMinutes());
      case '05': return p2(d.getUTCSeconds());
      case '5': return String(d.getUTCSeconds());
      case 'PM': return d.getUTCHours() >= 12 ? 'PM' : 'AM';
      case 'pm': return d.getUTCHours() >= 12 ? 'pm' : 'am';
      case 'MST': return 'UTC';
      case 'Z07:00':
      case 'Z0700': return 'Z';
      case '-07:00': return '+00:00';
      case '-0700': return '+0000';
      default: return tok;
    }
  });
}
