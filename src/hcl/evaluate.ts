// Syntax tree -> values, as hclsyntax's Expression.Value: operators with
// HCL's conversions, conditionals, `for` expressions, splats, function calls
// (with `...` expansion) and templates. A problem throws EvalFailure with one
// diagnostic, so that one bad expression yields exactly one.

import type { Expr, TemplatePart } from './ast.js';
import { error, type Diagnostic, type Range } from './diagnostics.js';
import { ConversionError, formatNumber, isObject, newObject, toBoolValue, toNumberValue, toStringValue, typeName, valuesEqual, type ObjectValue, type Value } from './values.js';

/** A function callable from expressions. Impl throws FunctionError (or ConversionError) for bad arguments. */
export interface HclFunction {
  /** Parameter names, for messages; the count is the required arity. */
  params: readonly string[];
  /** Optional trailing parameters after `params`. */
  optional?: readonly string[];
  /** Takes any number of arguments after `params`, named so. */
  variadic?: string;
  impl(args: Value[], call: { range: Range }): Value;
  /** For try() and can(): gets the argument expressions unevaluated. */
  lazy?: (args: Expr[], ctx: EvalContext) => Value;
}

/** A function refused its arguments; `arg` is the index of the one at fault, when known. */
export class FunctionError extends Error {
  constructor(
    message: string,
    readonly arg?: number,
  ) {
    super(message);
  }
}

/** An expression that cannot be evaluated; carries its one diagnostic. */
export class EvalFailure extends Error {
  constructor(readonly diagnostic: Diagnostic) {
    super(diagnostic.summary);
  }
}

/** What an expression can see. Build one per scope; child scopes copy it with more variables. */
export interface EvalContext {
  variables: Record<string, Value>;
  functions: Readonly<Record<string, HclFunction>>;
  /**
   * A reference whose root is not a variable: its value (Nomad keeps
   * run-time references as their `${...}` text), or undefined for an
   * "Unknown variable" error. `text` is the reference as written.
   */
  undefinedVariable?: (root: string, text: string) => Value | undefined;
  /** The source text of each file, for undefinedVariable's `text`. */
  sources?: Readonly<Record<string, string>>;
  /** Messages for an attribute a root object lacks (`var.x`, `local.y`). */
  undeclared?: Readonly<Record<string, (name: string) => { summary: string; detail: string; consequence?: boolean }>>;
  /** The element a splat's `each` applies to. */
  splat?: Value;
}

const fail = (summary: string, detail: string, at: Range): never => {
  throw new EvalFailure(error(summary, detail, at));
};

/** A scope with more variables. */
export function withVariables(ctx: EvalContext, more: Record<string, Value>): EvalContext {
  return { ...ctx, variables: { ...ctx.variables, ...more } };
}

/** Object entries in cty's order (by key). */
export function sortedEntries(o: ObjectValue): [string, Value][] {
  return Object.keys(o)
    .sort()
    .map((k) => [k, o[k] as Value]);
}

// `node.unique.name`, `env["X"]`: a traversal from a root with literal steps -> the root's name.
function traversalRoot(expr: Expr): string | undefined {
  let e = expr;
  for (;;) {
    if (e.kind === 'variable') return e.name;
    if (e.kind === 'getattr') e = e.object;
    else if (e.kind === 'index' && (e.key.kind === 'literal' || (e.key.kind === 'template' && e.key.parts.every((p) => p.kind === 'literal')))) e = e.collection;
    else return undefined;
  }
}

function convert<T>(f: (v: Value) => T, v: Value, at: Range, summary: string, what: string): T {
  try {
    return f(v);
  } catch (err) {
    if (err instanceof ConversionError) return fail(summary, `${what}: ${err.message}.`, at);
    throw err;
  }
}

/** Evaluates `expr`. Throws EvalFailure with one diagnostic. */
export function evaluate(expr: Expr, ctx: EvalContext): Value {
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'paren':
      return evaluate(expr.expr, ctx);
    case 'wrap':
      return evaluate(expr.expr, ctx);
    case 'template':
      return templateValue(expr.parts, ctx);
    case 'variable':
    case 'getattr':
    case 'index': {
      const root = traversalRoot(expr);
      if (root !== undefined && !Object.hasOwn(ctx.variables, root)) {
        const text = ctx.sources?.[expr.range.file]?.slice(expr.range.start.byte, expr.range.end.byte) ?? root;
        const kept = ctx.undefinedVariable?.(root, text);
        if (kept !== undefined) return kept;
        const at = expr.kind === 'variable' ? expr.range : { ...expr.range, end: { ...expr.range.start, column: expr.range.start.column + root.length, byte: expr.range.start.byte + root.length } };
        return fail('Unknown variable', `There is no variable named ${JSON.stringify(root)}.`, at);
      }
      if (expr.kind === 'variable') return ctx.variables[expr.name] as Value;
      if (expr.kind === 'getattr') return getAttr(evaluate(expr.object, ctx), expr, ctx);
      return index(evaluate(expr.collection, ctx), evaluate(expr.key, ctx), expr.keyRange, expr.range);
    }
    case 'splatItem':
      return ctx.splat ?? null;
    case 'splat': {
      const source = evaluate(expr.source, ctx);
      if (source === null) return [];
      const items = Array.isArray(source) ? source : [source];
      return items.map((item) => evaluate(expr.each, { ...ctx, splat: item }));
    }
    case 'call':
      return call(expr, ctx);
    case 'tuple':
      return expr.items.map((e) => evaluate(e, ctx));
    case 'object': {
      const out = newObject();
      for (const item of expr.items) {
        let key: string;
        if (item.identKey && item.key.kind === 'variable') key = item.key.name;
        else {
          const k = evaluate(item.key, ctx);
          if (k === null) fail('Invalid object key', 'An object key cannot be null.', item.key.range);
          key = convert(toStringValue, k, item.key.range, 'Incorrect key type', 'An object key must be a string');
        }
        out[key] = evaluate(item.value, ctx);
      }
      return out;
    }
    case 'unary': {
      const v = evaluate(expr.operand, ctx);
      if (expr.op === '!') return !convert(toBoolValue, v, expr.operand.range, 'Invalid operand', 'Unsuitable value for unary operand');
      return -convert(toNumberValue, v, expr.operand.range, 'Invalid operand', 'Unsuitable value for unary operand');
    }
    case 'binary':
      return binary(expr, ctx);
    case 'conditional': {
      const c = evaluate(expr.condition, ctx);
      if (c === null) fail('Null condition', 'The condition value is null. Conditions must either be true or false.', expr.condition.range);
      const yes = convert(toBoolValue, c, expr.condition.range, 'Incorrect condition type', 'The condition expression must be of type bool');
      return evaluate(yes ? expr.then : expr.else, ctx);
    }
    case 'for':
      return forExpression(expr, ctx);
  }
}

function getAttr(object: Value, expr: Expr & { kind: 'getattr' }, ctx: EvalContext): Value {
  if (object === null) fail('Attempt to get attribute from null value', 'This value is null, so it does not have any attributes.', expr.nameRange);
  if (isObject(object)) {
    if (Object.hasOwn(object, expr.name)) return object[expr.name] as Value;
    const root = expr.object.kind === 'variable' ? ctx.undeclared?.[expr.object.name] : undefined;
    if (root) {
      const m = root(expr.name);
      throw new EvalFailure({ ...error(m.summary, m.detail, expr.range), ...(m.consequence ? { consequence: true } : {}) });
    }
    return fail('Unsupported attribute', `This object does not have an attribute named ${JSON.stringify(expr.name)}.`, expr.nameRange);
  }
  if (Array.isArray(object)) return fail('Unsupported attribute', `This value is a list, which has no attributes; to take "${expr.name}" from each element, use a splat: [*].${expr.name}.`, expr.nameRange);
  return fail('Unsupported attribute', `Can't access attributes on a primitive-typed value (${typeName(object)}).`, expr.nameRange);
}

function index(collection: Value, key: Value, keyRange: Range, range: Range): Value {
  if (collection === null) fail('Attempt to index null value', 'This value is null, so it does not have any indices.', range);
  if (key === null) fail('Invalid index', 'Can\'t use a null value as an indexing key.', keyRange);
  if (Array.isArray(collection)) {
    const n = convert(toNumberValue, key, keyRange, 'Invalid index', 'The given key does not identify an element in this collection value');
    if (!Number.isInteger(n) || n < 0 || n >= collection.length) {
      return fail('Invalid index', `The given key does not identify an element in this collection value: the list has ${collection.length} element${collection.length === 1 ? '' : 's'}.`, keyRange);
    }
    return collection[n] as Value;
  }
  if (isObject(collection)) {
    const k = convert(toStringValue, key, keyRange, 'Invalid index', 'An object is indexed by a string');
    if (!Object.hasOwn(collection, k)) return fail('Invalid index', `The given key does not identify an element in this collection value: there is no ${JSON.stringify(k)}.`, keyRange);
    return collection[k] as Value;
  }
  return fail('Invalid index', `This value does not have any indices (it is a ${typeName(collection)}).`, range);
}

function binary(expr: Expr & { kind: 'binary' }, ctx: EvalContext): Value {
  const { op } = expr;
  const left = evaluate(expr.left, ctx);
  if (op === '==' || op === '!=') {
    const same = valuesEqual(left, evaluate(expr.right, ctx));
    return op === '==' ? same : !same;
  }
  if (op === '&&' || op === '||') {
    const l = convert(toBoolValue, left === null ? 'null' : left, expr.left.range, 'Invalid operand', 'Unsuitable value for left operand');
    if (op === '&&' && !l) return false;
    if (op === '||' && l) return true;
    const r = evaluate(expr.right, ctx);
    return convert(toBoolValue, r === null ? 'null' : r, expr.right.range, 'Invalid operand', 'Unsuitable value for right operand');
  }
  const number = (v: Value, side: Expr, which: string): number => {
    if (v === null) fail('Invalid operand', `Unsuitable value for ${which} operand: a number is required, not null.`, side.range);
    return convert(toNumberValue, v, side.range, 'Invalid operand', `Unsuitable value for ${which} operand`);
  };
  const a = number(left, expr.left, 'left');
  const b = number(evaluate(expr.right, ctx), expr.right, 'right');
  switch (op) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    case '/':
      if (b === 0) fail('Division by zero', 'The right operand of "/" is zero.', expr.right.range);
      return a / b;
    case '%':
      if (b === 0) fail('Division by zero', 'The right operand of "%" is zero.', expr.right.range);
      return a % b;
    case '<':
      return a < b;
    case '>':
      return a > b;
    case '<=':
      return a <= b;
    default:
      return a >= b;
  }
}

// The (key, value) pairs a `for` iterates: list index and element, or object key (sorted) and value.
function iterate(collection: Value, at: Range): [Value, Value][] {
  if (Array.isArray(collection)) return collection.map((v, k) => [k, v]);
  if (isObject(collection)) return sortedEntries(collection);
  if (collection === null) return fail('Iteration over null value', 'A null value cannot be used as the collection in a "for" expression.', at);
  return fail('Iteration over non-iterable value', `A value of type ${typeName(collection)} cannot be used as the collection in a "for" expression.`, at);
}

function forExpression(expr: Expr & { kind: 'for' }, ctx: EvalContext): Value {
  const pairs = iterate(evaluate(expr.collection, ctx), expr.collection.range);
  const list: Value[] = [];
  const obj = newObject();
  const groups = new Map<string, Value[]>();
  for (const [k, v] of pairs) {
    const scope = withVariables(ctx, { [expr.valueVar]: v, ...(expr.keyVar !== undefined ? { [expr.keyVar]: k } : {}) });
    if (expr.condition) {
      const c = evaluate(expr.condition, scope);
      if (!convert(toBoolValue, c === null ? 'null' : c, expr.condition.range, 'Invalid "for" condition', 'The condition must be a bool')) continue;
    }
    if (!expr.keyExpr) {
      list.push(evaluate(expr.valueExpr, scope));
      continue;
    }
    const kv = evaluate(expr.keyExpr, scope);
    if (kv === null) fail('Invalid object key', 'Key expression in "for" expression must not produce a null value.', expr.keyExpr.range);
    const key = convert(toStringValue, kv, expr.keyExpr.range, 'Invalid object key', 'The key expression produced an invalid result');
    const value = evaluate(expr.valueExpr, scope);
    if (expr.group) {
      const g = groups.get(key);
      if (g) g.push(value);
      else groups.set(key, [value]);
    } else {
      if (Object.hasOwn(obj, key)) {
        fail('Duplicate object key', `Two different items produced the key ${JSON.stringify(key)} in this "for" expression. If duplicates are expected, use the ellipsis (...) after the value expression to group them by key.`, expr.keyExpr.range);
      }
      obj[key] = value;
    }
  }
  if (!expr.keyExpr) return list;
  if (expr.group) return newObject(groups);
  return obj;
}

function call(expr: Expr & { kind: 'call' }, ctx: EvalContext): Value {
  const fn = Object.hasOwn(ctx.functions, expr.name) ? ctx.functions[expr.name] : undefined;
  if (!fn) {
    return fail('Call to unknown function', `There is no function named ${JSON.stringify(expr.name)}${expr.name.includes('::') ? '' : ' (see "Coming from Nomad" in the README for the functions Berth provides)'}.`, expr.nameRange);
  }
  if (fn.lazy) return fn.lazy(expr.args, ctx);
  let args = expr.args.map((a) => evaluate(a, ctx));
  const argRanges = expr.args.map((a) => a.range);
  if (expr.expandFinal) {
    const last = args[args.length - 1] as Value;
    if (!Array.isArray(last)) fail('Invalid expanding argument value', 'The expanding argument (indicated by ...) must be of a tuple, list, or set type.', argRanges[argRanges.length - 1] as Range);
    const lastRange = argRanges.pop() as Range;
    args = [...args.slice(0, -1), ...(last as Value[])];
    for (let k = argRanges.length; k < args.length; k++) argRanges.push(lastRange);
  }
  const max = fn.variadic ? Infinity : fn.params.length + (fn.optional?.length ?? 0);
  if (args.length < fn.params.length) {
    fail('Not enough function arguments', `Function ${JSON.stringify(expr.name)} expects ${fn.params.length}${fn.variadic || fn.optional?.length ? ' or more' : ''} argument(s); missing: ${fn.params.slice(args.length).join(', ')}.`, expr.range);
  }
  if (args.length > max) fail('Too many function arguments', `Function ${JSON.stringify(expr.name)} expects only ${max} argument(s).`, argRanges[max] ?? expr.range);
  try {
    return fn.impl(args, { range: expr.range });
  } catch (err) {
    if (err instanceof FunctionError || err instanceof ConversionError) {
      const k = err instanceof FunctionError ? err.arg : undefined;
      if (k !== undefined && argRanges[k]) {
        const name = fn.params[k] ?? fn.optional?.[k - fn.params.length] ?? fn.variadic ?? `#${k + 1}`;
        return fail('Invalid function argument', `Invalid value for "${name}" parameter: ${err.message}.`, argRanges[k] as Range);
      }
      return fail('Error in function call', `Call to function ${JSON.stringify(expr.name)} failed: ${err.message}.`, expr.range);
    }
    if (err instanceof EvalFailure) throw err;
    throw err;
  }
}

function templateValue(parts: readonly TemplatePart[], ctx: EvalContext): string {
  let out = '';
  for (const part of parts) {
    if (part.kind === 'literal' && typeof part.value === 'string') out += part.value;
    else if (part.kind === 'tif') {
      const c = evaluate(part.condition, ctx);
      if (c === null) fail('Invalid template if directive', 'The condition value is null. Conditions must either be true or false.', part.condition.range);
      const yes = convert(toBoolValue, c, part.condition.range, 'Invalid template if directive', 'The condition must be a bool');
      out += templateValue(yes ? part.then : part.else, ctx);
    } else if (part.kind === 'tfor') {
      for (const [k, v] of iterate(evaluate(part.collection, ctx), part.collection.range)) {
        out += templateValue(part.body, withVariables(ctx, { [part.valueVar]: v, ...(part.keyVar !== undefined ? { [part.keyVar]: k } : {}) }));
      }
    } else {
      const v = evaluate(part, ctx);
      if (v === null) fail('Invalid template interpolation value', 'The expression result is null. Cannot include a null value in a string template.', part.range);
      if (typeof v === 'number') out += formatNumber(v);
      else if (typeof v === 'object') fail('Invalid template interpolation value', `Cannot include the given value in a string template: string required, not ${Array.isArray(v) ? 'a list' : 'an object'}.`, part.range);
      else out += toStringValue(v);
    }
  }
  return out;
}
