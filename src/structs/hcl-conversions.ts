// HCL's type conversions (go-cty's `convert` package, which Nomad's job
// parser applies to every attribute): where a schema wants a number, a bool
// or a string and the file gave another primitive that converts, the value
// is converted rather than refused. `cpu = "500"`, `unlimited = "true"`,
// `to = "8080"` and `name = 42` are all valid Nomad job files.
//
// The conversions are driven by the schema's own type errors: parse, convert
// the values at the paths where a primitive of another type was expected,
// parse again. A value that does not convert ("two" for a number) is left,
// so the error the user sees is the schema's, at the field they wrote.

import type { z } from 'zod';

/** cty's number syntax for a string (big.Float, base 10): sign, digits, fraction, exponent. No spaces, no hex, no underscores. */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/** No value: the primitive does not convert. */
const NONE = Symbol('none');

/** `value` as cty converts it to the `expected` primitive, or NONE. */
export function convertPrimitive(value: unknown, expected: string): unknown {
  if ((expected === 'number' || expected === 'int') && typeof value === 'string' && NUMBER.test(value)) {
    const n = Number(value);
    return Number.isFinite(n) && (expected === 'number' || Number.isInteger(n)) ? n : NONE;
  }
  if (expected === 'boolean' && typeof value === 'string') {
    // cty takes "1" and "0" too; "True" is not converted (it says to use lowercase).
    if (value === 'true' || value === '1') return true;
    if (value === 'false' || value === '0') return false;
    return NONE;
  }
  if (expected === 'string') {
    if (typeof value === 'boolean') return String(value);
    // cty writes numbers in full, never in exponent form (1e21 -> "1000000000000000000000").
    if (typeof value === 'number' && Number.isFinite(value)) return Number.isInteger(value) ? BigInt(value).toString() : plainDecimal(value);
  }
  return NONE;
}

function plainDecimal(n: number): string {
  const s = String(n);
  if (!/e/i.test(s)) return s;
  return n.toFixed(20).replace(/0+$/, '').replace(/\.$/, '');
}

interface TypeIssue {
  path: PropertyKey[];
  expected: string;
}

// The invalid_type issues of a parse, those inside union alternatives included (their paths made absolute).
function typeIssues(issues: readonly z.core.$ZodIssue[], prefix: PropertyKey[] = []): TypeIssue[] {
  const out: TypeIssue[] = [];
  for (const issue of issues) {
    const path = [...prefix, ...issue.path];
    if (issue.code === 'invalid_type') out.push({ path, expected: issue.expected });
    else if (issue.code === 'invalid_union') for (const alt of issue.errors) out.push(...typeIssues(alt, path));
  }
  return out;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const k of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[k];
  }
  return v;
}

/** A copy of `root` with `value` at `path`; only the containers on the path are copied. */
function withValueAt(root: unknown, path: readonly PropertyKey[], value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [PropertyKey, ...PropertyKey[]];
  if (Array.isArray(root)) {
    const copy = [...root];
    copy[head as number] = withValueAt(root[head as number], rest, value);
    return copy;
  }
  const obj = root as Record<PropertyKey, unknown>;
  return { ...obj, [head]: withValueAt(obj[head], rest, value) };
}

/** Bounds the rounds of parse-convert-parse: a conversion can reveal another only one level down at a time (a union's branch). */
const MAX_ROUNDS = 8;

/**
 * Parses `input` with `schema`, converting primitives as HCL does where the
 * schema expects another primitive type. Returns the last parse's result
 * (issues, if any, are about the converted input) and the input it parsed.
 * Never throws; `input` is not changed.
 */
export function parseWithHclConversions<T>(schema: z.ZodType<T>, input: unknown): { result: z.ZodSafeParseResult<T>; input: unknown } {
  let current = input;
  for (let round = 0; ; round++) {
    const result = schema.safeParse(current);
    if (result.success || round === MAX_ROUNDS) return { result, input: current };
    let changed = false;
    for (const issue of typeIssues(result.error.issues)) {
      const converted = convertPrimitive(valueAt(current, issue.path), issue.expected);
      if (converted === NONE) continue;
      current = withValueAt(current, issue.path, converted);
      changed = true;
    }
    if (!changed) return { result, input: current };
  }
}
