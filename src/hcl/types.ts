// Type constraint expressions (`string`, `list(number)`, `map(any)`,
// `object({ port = number, tags = optional(list(string), []) })`) -> Type,
// as hcl's ext/typeexpr reads them: keywords, never evaluated.

import type { Expr } from './ast.js';
import { error, type Diagnostic } from './diagnostics.js';
import { evaluate, EvalFailure, type EvalContext } from './evaluate.js';
import type { Type, Value } from './values.js';

const PRIMITIVES = new Set(['string', 'number', 'bool', 'any']);

/** Reads a type expression. Returns the type or one diagnostic. `ctx` evaluates optional() defaults. */
export function typeFromExpr(expr: Expr, ctx: EvalContext, inObject = false): { type: Type; optional?: boolean; default?: Value } | { diagnostic: Diagnostic } {
  const bad = (detail: string): { diagnostic: Diagnostic } => ({ diagnostic: error('Invalid type specification', detail, expr.range) });
  if (expr.kind === 'variable') {
    if (PRIMITIVES.has(expr.name)) return { type: { k: expr.name as 'string' } };
    if (['list', 'set', 'map', 'object', 'tuple'].includes(expr.name)) return bad(`The ${expr.name} type constructor requires one argument specifying the ${expr.name === 'object' ? 'attribute types' : 'element type'}.`);
    return bad(`The keyword ${JSON.stringify(expr.name)} is not a valid type specification.`);
  }
  if (expr.kind === 'paren') return typeFromExpr(expr.expr, ctx, inObject);
  if (expr.kind !== 'call') return bad('A type specification is either a primitive type keyword (bool, number, string) or a complex type constructor call, like list(string).');
  const [first, second] = expr.args;
  switch (expr.name) {
    case 'list':
    case 'set':
    case 'map': {
      if (expr.args.length !== 1 || !first) return bad(`The ${expr.name} type constructor requires one argument specifying the element type.`);
      const elem = typeFromExpr(first, ctx);
      if ('diagnostic' in elem) return elem;
      return { type: { k: expr.name, elem: elem.type } };
    }
    case 'tuple': {
      if (expr.args.length !== 1 || first?.kind !== 'tuple') return bad('The tuple type constructor requires one argument specifying the element types as a list.');
      const elems: Type[] = [];
      for (const e of first.items) {
        const t = typeFromExpr(e, ctx);
        if ('diagnostic' in t) return t;
        elems.push(t.type);
      }
      return { type: { k: 'tuple', elems } };
    }
    case 'object': {
      if (expr.args.length !== 1 || first?.kind !== 'object') return bad('The object type constructor requires one argument specifying the attribute types as a map.');
      const attrs: Record<string, { type: Type; optional: boolean; default?: Value }> = {};
      for (const item of first.items) {
        const name = item.key.kind === 'variable' ? item.key.name : item.key.kind === 'template' && item.key.parts.length === 1 && item.key.parts[0]?.kind === 'literal' ? String(item.key.parts[0].value) : undefined;
        if (name === undefined) return { diagnostic: error('Invalid type specification', 'Object constructor map keys must be attribute names.', item.key.range) };
        const t = typeFromExpr(item.value, ctx, true);
        if ('diagnostic' in t) return t;
        attrs[name] = { type: t.type, optional: !!t.optional, ...(t.default !== undefined ? { default: t.default } : {}) };
      }
      return { type: { k: 'object', attrs } };
    }
    case 'optional': {
      if (!inObject) return bad('Keyword "optional" is valid only as a modifier for object type attributes.');
      if (!first || expr.args.length > 2) return bad('The optional modifier takes the attribute type and, optionally, a default value.');
      const t = typeFromExpr(first, ctx);
      if ('diagnostic' in t) return t;
      if (!second) return { type: t.type, optional: true };
      try {
        return { type: t.type, optional: true, default: evaluate(second, ctx) };
      } catch (err) {
        if (err instanceof EvalFailure) return { diagnostic: err.diagnostic };
        throw err;
      }
    }
    default:
      return bad(`Keyword ${JSON.stringify(expr.name)} is not a valid type constructor.`);
  }
}
