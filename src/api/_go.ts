// How Go's encoding/json writes the types of Nomad's `api` package, as zod
// building blocks for the shapes beside this file. A field without
// `omitempty` is always present: a pointer, slice or map as null when nil
// (hence `.nullable()`, not `.optional()`), a value type as its zero value.
// A field with `omitempty` is `.optional()` (left out when empty).

import { z } from 'zod';
import { lazySchema } from './lazy-schema.js';

/** Go's int, int8, int64... */
export const int = lazySchema(() => z.number().int());
/** Go's uint8, uint64...: not negative. */
export const uint = lazySchema(() => z.number().int().nonnegative());
/**
 * Go's int64 where values pass 2^53: nanoseconds since the epoch
 * (1.7e18 today) and long durations. Any whole number: JSON carries the
 * digits, a JavaScript number the nearest double (ns times lose their last
 * digits, never their millisecond).
 */
export const int64 = lazySchema(() => z.number().refine(Number.isInteger, 'expected a whole number'));
/** A time.Duration: nanoseconds, as Go encodes it. */
export const nanos = int64;
/** A time.Time: RFC 3339 with nanoseconds (GO_ZERO_TIME when zero). */
export const time = lazySchema(() => z.string());
/** Go's zero time.Time as encoding/json writes it: "no time". */
export const GO_ZERO_TIME = '0001-01-01T00:00:00Z';
/** A []byte: base64 text, null when nil. */
export const bytes = lazySchema(() => z.string().nullable());

/** `*T`: present, null when nil. */
export const ptr = <T extends z.ZodType>(t: T): z.ZodNullable<T> => t.nullable();
/** `[]T`: present, null when nil. */
export const list = <T extends z.ZodType>(t: T): z.ZodNullable<z.ZodArray<T>> => z.array(t).nullable();
/** `map[string]T`: present, null when nil. */
export const map = <T extends z.ZodType>(t: T): z.ZodNullable<z.ZodRecord<z.ZodString, T>> => z.record(z.string(), t).nullable();
/** `map[string]string`, null when nil. */
export const stringMap = lazySchema(() => map(z.string()));
/** `map[string]any` (`interface{}`), null when nil. */
export const anyMap = lazySchema(() => map(z.unknown()));
