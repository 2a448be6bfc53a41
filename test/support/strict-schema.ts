// A src/api schema made strict all the way down, for contract tests: every
// object refuses keys it does not name, so a field Berth adds or drops
// without the schema (Nomad's shape as transcribed) fails the test. Test use only.

import { z } from 'zod';

/** `schema` with every object in it (through arrays, records, optionals, nullables, unions) strict. Pure. */
export function deepStrict<T extends z.ZodType>(schema: T): T {
  return strictOf(schema) as T;
}

function strictOf(s: z.ZodType): z.ZodType {
  if (s instanceof z.ZodObject) {
    const shape: Record<string, z.ZodType> = {};
    for (const [k, v] of Object.entries(s.shape as Record<string, z.ZodType>)) shape[k] = strictOf(v);
    return z.strictObject(shape);
  }
  if (s instanceof z.ZodArray) return z.array(strictOf(s.element as z.ZodType));
  if (s instanceof z.ZodOptional) return strictOf(s.unwrap() as z.ZodType).optional();
  if (s instanceof z.ZodNullable) return strictOf(s.unwrap() as z.ZodType).nullable();
  if (s instanceof z.ZodRecord) return z.record(s.keyType as z.ZodString, strictOf(s.valueType as z.ZodType));
  if (s instanceof z.ZodUnion) return z.union((s.options as z.ZodType[]).map(strictOf) as [z.ZodType, z.ZodType, ...z.ZodType[]]);
  return s;
}

/**
 * Parses `value` with the strict form of `schema`; throws an Error naming
 * each path that does not fit (and the value, shortened) when it does not.
 */
export function assertShape<T extends z.ZodType>(schema: T, value: unknown, what = 'answer'): z.infer<T> {
  const r = deepStrict(schema).safeParse(value);
  if (r.success) return r.data;
  const problems = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new Error(`${what} does not fit its schema: ${problems}\n${JSON.stringify(value).slice(0, 2000)}`);
}
