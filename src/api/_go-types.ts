// How Go's encoding/json writes the time types of Nomad's structs, as
// schemas the shapes share.

import { z } from 'zod';

/** Go's zero time.Time as encoding/json writes it: "no time". */
export const GO_ZERO_TIME = '0001-01-01T00:00:00Z';

/**
 * An int64 of Unix nanoseconds (CreateTime, ModifyTime). Today's are near
 * 1.7e18, past JavaScript's safe integers (2^53): a whole number in the
 * JSON, read as the nearest double (exact to the microsecond or so), so the
 * schema is a number, not z.int().
 */
export const UnixNanos = z.number();

/** A time.Duration: an int64 of nanoseconds (a number, as UnixNanos, for the same reason). */
export const GoDuration = z.number();

/** A time.Time: RFC 3339 with fractional seconds, GO_ZERO_TIME when unset. */
export const GoTime = z.string();
