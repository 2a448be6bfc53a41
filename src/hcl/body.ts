// Syntax tree bodies -> evaluated bodies: every attribute's value computed,
// `dynamic "x" { for_each, iterator, labels, content }` blocks expanded into
// the blocks they generate (as hcl's ext/dynblock does). Each evaluated node
// keeps its source range, so that later stages can point at it.

import type { Block, Body, Expr } from './ast.js';
import { error, type Diagnostic, type Range } from './diagnostics.js';
import { evaluate, EvalFailure, sortedEntries, withVariables, type EvalContext } from './evaluate.js';
import { isObject, newObject, toStringValue, type Value } from './values.js';

export interface EvaluatedAttribute {
  name: string;
  value: Value;
  nameRange: Range;
  expr: Expr;
}

export interface EvaluatedBlock {
  type: string;
  labels: string[];
  /** The block's type (for a dynamic block's output: the dynamic block's label). */
  typeRange: Range;
  body: EvaluatedBody;
}

export interface EvaluatedBody {
  attributes: EvaluatedAttribute[];
  blocks: EvaluatedBlock[];
}

const DYNAMIC_ATTRS = new Set(['for_each', 'iterator', 'labels']);

/** Evaluates every attribute of `body` and its blocks. Problems go to `diagnostics`; a bad attribute is left out. Never throws for user input. */
export function evaluateBody(body: Body, ctx: EvalContext, diagnostics: Diagnostic[]): EvaluatedBody {
  const out: EvaluatedBody = { attributes: [], blocks: [] };
  const seen = new Map<string, Range>();
  for (const attr of body.attributes) {
    const before = seen.get(attr.name);
    if (before) {
      diagnostics.push(error('Attribute redefined', `The argument "${attr.name}" was already set at ${before.file}:${before.start.line}:${before.start.column}. Each argument may be set only once.`, attr.nameRange));
      continue;
    }
    seen.set(attr.name, attr.nameRange);
    try {
      out.attributes.push({ name: attr.name, value: evaluate(attr.expr, ctx), nameRange: attr.nameRange, expr: attr.expr });
    } catch (err) {
      if (!(err instanceof EvalFailure)) throw err;
      if (!err.diagnostic.consequence) diagnostics.push(err.diagnostic);
    }
  }
  for (const block of body.blocks) {
    if (block.type === 'dynamic') out.blocks.push(...expandDynamic(block, ctx, diagnostics));
    else out.blocks.push({ type: block.type, labels: block.labels.map((l) => l.value), typeRange: block.typeRange, body: evaluateBody(block.body, ctx, diagnostics) });
  }
  return out;
}

function expandDynamic(block: Block, ctx: EvalContext, diagnostics: Diagnostic[]): EvaluatedBlock[] {
  const problem = (summary: string, detail: string, at: Range): EvaluatedBlock[] => {
    diagnostics.push(error(summary, detail, at));
    return [];
  };
  const [label, extra] = block.labels;
  if (!label || extra) return problem('Invalid dynamic block', 'A dynamic block takes one label: the type of the blocks it generates (dynamic "port" { ... }).', block.defRange);
  const attrs = new Map(block.body.attributes.map((a) => [a.name, a]));
  for (const a of block.body.attributes) {
    if (!DYNAMIC_ATTRS.has(a.name)) return problem('Unsupported argument', `A dynamic block takes for_each, iterator and labels, and a content block; not "${a.name}".`, a.nameRange);
  }
  const contents = block.body.blocks.filter((b) => b.type === 'content');
  const other = block.body.blocks.find((b) => b.type !== 'content');
  if (other) return problem('Unsupported block type', `A dynamic block holds one content block, not "${other.type}".`, other.typeRange);
  if (contents.length !== 1) return problem(contents.length ? 'Duplicate content block' : 'Missing content block', 'A dynamic block needs exactly one content { ... } block: the body of each block it generates.', (contents[1] ?? block).defRange ?? block.defRange);
  const forEach = attrs.get('for_each');
  if (!forEach) return problem('Missing required argument', 'A dynamic block needs for_each: the collection to generate one block per element of.', block.defRange);
  let iterator = label.value;
  const it = attrs.get('iterator');
  if (it) {
    if (it.expr.kind !== 'variable') return problem('Invalid dynamic iterator name', 'The iterator must be a single name, such as iterator = port.', it.expr.range);
    iterator = it.expr.name;
  }
  let collection: Value;
  try {
    collection = evaluate(forEach.expr, ctx);
  } catch (err) {
    if (!(err instanceof EvalFailure)) throw err;
    if (!err.diagnostic.consequence) diagnostics.push(err.diagnostic);
    return [];
  }
  let pairs: [Value, Value][];
  if (Array.isArray(collection)) pairs = collection.map((v, k) => [k, v]);
  else if (isObject(collection)) pairs = sortedEntries(collection);
  else return problem('Invalid dynamic for_each value', `Cannot use a ${collection === null ? 'null value' : typeof collection} in for_each: a list, set or map is required.`, forEach.expr.range);
  const out: EvaluatedBlock[] = [];
  const content = contents[0] as Block;
  for (const [key, value] of pairs) {
    const scope = withVariables(ctx, { [iterator]: newObject([['key', key], ['value', value]]) });
    let labels: string[] = [];
    const labelsAttr = attrs.get('labels');
    if (labelsAttr) {
      try {
        const v = evaluate(labelsAttr.expr, scope);
        if (!Array.isArray(v)) return problem('Invalid dynamic block labels', 'labels must be a list of strings.', labelsAttr.expr.range);
        labels = v.map((x) => toStringValue(x));
      } catch (err) {
        if (!(err instanceof EvalFailure)) throw err;
        if (!err.diagnostic.consequence) diagnostics.push(err.diagnostic);
        return out;
      }
    }
    out.push({ type: label.value, labels, typeRange: label.range, body: evaluateBody(content.body, scope, diagnostics) });
  }
  return out;
}

/** An outline node (where a block or attribute is), as spec-files locates fields. */
export interface OutlineNode {
  kind: 'block' | 'attr';
  name: string;
  labels: string[];
  line: number;
  column: number;
  children: OutlineNode[];
}

/** The outline of an evaluated body: blocks (generated ones too) and attributes in source order, with object-constructor keys as children. */
export function outlineOf(body: EvaluatedBody): OutlineNode[] {
  const nodes: OutlineNode[] = [
    ...body.attributes.map((a): OutlineNode => ({ kind: 'attr', name: a.name, labels: [], line: a.nameRange.start.line, column: a.nameRange.start.column, children: objectKeys(a.expr) })),
    ...body.blocks.map((b): OutlineNode => ({ kind: 'block', name: b.type, labels: b.labels, line: b.typeRange.start.line, column: b.typeRange.start.column, children: outlineOf(b.body) })),
  ];
  return nodes.sort((a, b) => a.line - b.line || a.column - b.column);
}

function objectKeys(expr: Expr): OutlineNode[] {
  if (expr.kind !== 'object') return [];
  const out: OutlineNode[] = [];
  for (const item of expr.items) {
    const k = item.key;
    const name = k.kind === 'variable' ? k.name : k.kind === 'template' && k.parts.length === 1 && k.parts[0]?.kind === 'literal' ? String(k.parts[0].value) : k.kind === 'template' && k.parts.length === 0 ? '' : undefined;
    if (name !== undefined) out.push({ kind: 'attr', name, labels: [], line: k.range.start.line, column: k.range.start.column, children: objectKeys(item.value) });
  }
  return out;
}

/**
 * An evaluated body in the shape hcl2json gives (and Berth's converters
 * read): attributes as values, each block type as a list of bodies, labelled
 * blocks nested by label (`{ job: { web: [ {...} ] } }`). Plain objects.
 */
export function toJsonShape(body: EvaluatedBody): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const set = (o: Record<string, unknown>, k: string, v: unknown): void => {
    Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  };
  for (const a of body.attributes) set(out, a.name, plain(a.value));
  for (const b of body.blocks) {
    let at = out;
    const keys = [b.type, ...b.labels];
    keys.forEach((k, n) => {
      const last = n === keys.length - 1;
      const existing = Object.hasOwn(at, k) ? at[k] : undefined;
      if (last) {
        if (Array.isArray(existing)) existing.push(toJsonShape(b.body));
        else set(at, k, [toJsonShape(b.body)]);
      } else {
        if (!existing || typeof existing !== 'object' || Array.isArray(existing)) set(at, k, {});
        at = at[k] as Record<string, unknown>;
      }
    });
  }
  return out;
}

function plain(v: Value): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (isObject(v)) {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v)) Object.defineProperty(o, k, { value: plain(v[k] as Value), enumerable: true, writable: true, configurable: true });
    return o;
  }
  return v;
}
