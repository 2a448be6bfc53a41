// How Go's fmt and text/template see JS values: truth, printing (%v) and the
// type names used in error messages. A missing map key is `undefined` (Go's
// "no value"); JSON null and `nil` are `null`.

/** A function a template can call: its arity and its body (throws Error to fail the template). */
export interface TemplateFunction {
  /** Fewest arguments. */
  min: number;
  /** Most arguments (Infinity for variadic). */
  max: number;
  call(args: unknown[], ctx: CallContext): unknown;
}

/** What a function may ask of the template being executed. */
export interface CallContext {
  /** Executes a named template of the same set with `data` as its dot (consul-template's executeTemplate). */
  executeTemplate(name: string, data: unknown): string;
}

export const fn = (min: number, max: number, call: TemplateFunction['call']): TemplateFunction => ({ min, max, call });

export function isMap(v: unknown): v is Map<unknown, unknown> | Record<string, unknown> {
  return v instanceof Map || (!!v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array));
}

/** Entries of a map-like value, keys sorted as Go sorts basic keys. */
export function sortedEntries(v: Map<unknown, unknown> | Record<string, unknown>): [unknown, unknown][] {
  const entries: [unknown, unknown][] = v instanceof Map ? [...v.entries()] : Object.entries(v);
  return entries.sort((a, b) => compareKeys(a[0], b[0]));
}

function compareKeys(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Go's truth: false, 0, "", nil, no value and empty lists and maps are false. */
export function isTrue(v: unknown): boolean {
  if (v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (v instanceof Map) return v.size > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

/** The Go-ish type name of a value, for error messages. */
export function typeName(v: unknown): string {
  if (v === undefined || v === null) return 'nil';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float64';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'function') return 'func';
  if (Array.isArray(v)) return '[]interface {}';
  return 'map[string]interface {}';
}

/**
 * A number as Go's %v prints it. JS cannot tell Go's ints from float64s:
 * integral values print as ints (a JSON 1000000 prints "1000000" where Go
 * prints "1e+06"); fractional ones as Go's shortest %g.
 */
export function formatNumber(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  if (Number.isInteger(v) && Math.abs(v) < 1e21) return v.toFixed(0);
  const [mant, exp] = v.toExponential().split('e') as [string, string];
  const e = Number(exp);
  if (e < -4 || e >= 21 || (!Number.isInteger(v) && e >= 6)) return `${mant}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  return String(v);
}

/** fmt's %v of a value (Sprint). */
export function formatValue(v: unknown): string {
  if (v === undefined || v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return formatNumber(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'function') return '<func>';
  if (Array.isArray(v)) return `[${v.map(formatValue).join(' ')}]`;
  if (isMap(v)) return `map[${sortedEntries(v).map(([k, x]) => `${formatValue(k)}:${formatValue(x)}`).join(' ')}]`;
  return String(v);
}

/** What `{{ x }}` writes: as %v, but a missing key is "<no value>". */
export function printValue(v: unknown): string {
  return v === undefined ? '<no value>' : formatValue(v);
}

/** A string argument, or a type error worded as Go's. */
export function str(v: unknown, what = 'argument'): string {
  if (typeof v === 'string') return v;
  throw new Error(`wrong type for ${what}; expected string; got ${typeName(v)}`);
}

/** An integral argument. */
export function int(v: unknown, what = 'argument'): number {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  throw new Error(`wrong type for ${what}; expected int; got ${typeName(v)}`);
}

/** A list argument (arrays, and for Go's []string a list of strings). */
export function list(v: unknown, what = 'argument'): unknown[] {
  if (Array.isArray(v)) return v;
  throw new Error(`wrong type for ${what}; expected a list; got ${typeName(v)}`);
}
