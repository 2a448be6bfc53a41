// Argument helpers for the function library: each converts one argument as
// cty's function specs do, or throws FunctionError naming the argument.

import { FunctionError, type HclFunction } from './evaluate.js';
import { ConversionError, isObject, toBoolValue, toNumberValue, toStringValue, typeName, type ObjectValue, type Value } from './values.js';

const as =
  <T>(f: (v: Value) => T) =>
  (args: Value[], k: number): T => {
    const v = args[k] as Value;
    if (v === null) throw new FunctionError('argument must not be null', k);
    try {
      return f(v);
    } catch (err) {
      if (err instanceof ConversionError) throw new FunctionError(err.message, k);
      throw err;
    }
  };

export const str = as(toStringValue);
export const num = as(toNumberValue);
export const bool = as(toBoolValue);
export const int = (args: Value[], k: number): number => {
  const n = num(args, k);
  if (!Number.isInteger(n)) throw new FunctionError(`a whole number is required, not ${n}`, k);
  return n;
};
export const list = (args: Value[], k: number): Value[] => {
  const v = args[k] as Value;
  if (!Array.isArray(v)) throw new FunctionError(`a list is required, not ${v === null ? 'null' : typeName(v)}`, k);
  return v;
};
export const obj = (args: Value[], k: number): ObjectValue => {
  const v = args[k] as Value;
  if (!isObject(v)) throw new FunctionError(`a map or object is required, not ${v === null ? 'null' : typeName(v)}`, k);
  return v;
};

/** A function of fixed parameters. */
export const fn = (params: string[], impl: HclFunction['impl'], more: Partial<HclFunction> = {}): HclFunction => ({ params, impl, ...more });

/** A function of one string to one value. */
export const strFn = (f: (s: string) => Value): HclFunction => fn(['str'], (a) => f(str(a, 0)));

/** Go's regexp syntax -> a JavaScript RegExp: (?P<n>...) groups and leading (?i)/(?s)/(?m) flags. */
export function goRegExp(pattern: string, global: boolean, k: number): RegExp {
  let p = pattern.replace(/\(\?P</g, '(?<');
  let flags = global ? 'gu' : 'u';
  const m = /^\(\?([ims]+)\)/.exec(p);
  if (m) {
    flags += m[1];
    p = p.slice(m[0].length);
  }
  try {
    return new RegExp(p, flags);
  } catch (err) {
    throw new FunctionError(`invalid regular expression: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`, k);
  }
}
