// Contract checks of the public API: an answer is parsed with its src/api
// schema made strict at every depth, so a field Berth sends that Nomad's
// shape (or a documented Berth extra) lacks fails, as does a field the shape
// has and the answer leaves out. The answers' schemas are strict objects
// already; this also holds for a shape built from lenient parts (request
// bodies' schemas, read as Go's decoder reads: unknown fields ignored).

import assert from 'node:assert/strict';
import { z } from 'zod';

const strictCache = new WeakMap<z.ZodType, z.ZodType>();

/** `schema` with every object in it strict (unknown keys refused), through optionals, nullables, arrays, records and unions. */
export function strictSchema<S extends z.ZodType>(schema: S): S {
  const done = strictCache.get(schema);
  if (done) return done as S;
  let out: z.ZodType = schema;
  if (schema instanceof z.ZodObject) {
    const shape: Record<string, z.ZodType> = {};
    for (const [k, v] of Object.entries(schema.shape as Record<string, z.ZodType>)) shape[k] = strictSchema(v);
    out = z.strictObject(shape);
  } else if (schema instanceof z.ZodOptional) out = strictSchema(schema.unwrap() as z.ZodType).optional();
  else if (schema instanceof z.ZodNullable) out = strictSchema(schema.unwrap() as z.ZodType).nullable();
  else if (schema instanceof z.ZodArray) out = z.array(strictSchema(schema.element as z.ZodType));
  else if (schema instanceof z.ZodRecord) out = z.record(schema.keyType as z.ZodString, strictSchema(schema.valueType as z.ZodType));
  else if (schema instanceof z.ZodUnion) out = z.union((schema.options as z.ZodType[]).map((o) => strictSchema(o)) as [z.ZodType, z.ZodType, ...z.ZodType[]]);
  strictCache.set(schema, out);
  return out as S;
}

/**
 * Asserts that `value` has exactly the shape of `schema` (strict at every
 * depth) and returns it typed. The failure names each offending path.
 */
export function assertShape<S extends z.ZodType>(schema: S, value: unknown, what: string): z.infer<S> {
  const parsed = strictSchema(schema).safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}${'keys' in i ? ` ${JSON.stringify(i.keys)}` : ''}`);
    assert.fail(`${what} does not match its API shape:\n${problems.join('\n')}`);
  }
  return parsed.data as z.infer<S>;
}
