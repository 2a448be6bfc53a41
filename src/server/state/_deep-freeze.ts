// Freezing a row and everything under it. Private to src/server/state.

/**
 * Freezes `value` and every object under it (rows are plain JSON data: own
 * enumerable properties). Each row the store builds or reads goes through
 * it, so it walks without building arrays of values and recurses only into
 * objects: about a third of the cost of freezing with Object.values, as much
 * as parsing the row's JSON costs.
 */
export function deepFreeze<T>(value: T): T {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return value;
  Object.freeze(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (typeof v === 'object' && v !== null) deepFreeze(v);
    }
  } else {
    for (const k in value) {
      if (!Object.hasOwn(value, k)) continue;
      const v: unknown = (value as Record<string, unknown>)[k];
      if (typeof v === 'object' && v !== null) deepFreeze(v);
    }
  }
  return value;
}
