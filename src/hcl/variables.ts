// Nomad's jobspec2 layer over the language: `variable` blocks (type,
// default, description, validation) given values by defaults, NOMAD_VAR_* /
// BERTH_VAR_* environment variables, -var-file files and -var flags (later
// wins), then `locals` evaluated in dependency order. The result is the
// context the job body is evaluated in: `var.<name>` and `local.<name>`.

import type { Block, Body, Expr } from './ast.js';
import { error, type Diagnostic, type Range } from './diagnostics.js';
import { evaluate, EvalFailure, type EvalContext } from './evaluate.js';
import { fromPlain } from './_functions-extra.js';
import { parseConfig, parseExpression } from './_parser.js';
import { typeFromExpr } from './types.js';
import { ConversionError, convertTo, formatType, isObject, newObject, type ObjectValue, type Type, type Value } from './values.js';

/** Where variable values come from, besides the file's defaults. */
export interface VariableInputs {
  /** `-var name=value` flags, in order. */
  vars?: readonly string[];
  /** `-var-file` files already read: HCL (`name = value` lines) or JSON (`{"name": value}`). */
  varFiles?: readonly { file: string; text: string }[];
  /** The environment: NOMAD_VAR_<name> and BERTH_VAR_<name> (the latter wins). */
  env?: Readonly<Record<string, string | undefined>>;
}

interface Declared {
  name: string;
  type?: Type;
  value?: Value;
  /** Where the value came from, when from a file. */
  from?: Range;
  /** Where the value came from, when not from a file (`-var count`). */
  source?: string;
  block: Block;
  /** Its type or default was refused (already reported): say nothing more about it. */
  broken?: boolean;
  validations: { condition: Expr; message: Expr }[];
}

const VARIABLE_ATTRS = new Set(['type', 'default', 'description', 'sensitive', 'nullable']);
const undeclaredVar = (name: string): { summary: string; detail: string } => ({
  summary: 'Reference to undeclared input variable',
  detail: `An input variable with the name ${JSON.stringify(name)} has not been declared. Declare it with a variable "${name}" {} block.`,
});
const undeclaredLocal = (name: string): { summary: string; detail: string } => ({
  summary: 'Reference to undeclared local value',
  detail: `A local value with the name ${JSON.stringify(name)} has not been declared in a locals block.`,
});

/**
 * Takes the `variable`, `variables` and `locals` blocks out of `body` and
 * evaluates them. Returns the body that is left and a context with `var`
 * and `local`. Problems go to `diagnostics`. Never throws for user input.
 */
export function evaluateVariables(body: Body, base: EvalContext, inputs: VariableInputs, diagnostics: Diagnostic[]): { body: Body; ctx: EvalContext } {
  const declared = new Map<string, Declared>();
  const rest: Block[] = [];
  const localBlocks: Block[] = [];
  const plainCtx: EvalContext = { ...base, variables: {} };
  for (const block of body.blocks) {
    if (block.type === 'variable') declareVariable(block, declared, plainCtx, diagnostics);
    else if (block.type === 'variables') {
      for (const a of block.body.attributes) {
        const fake: Block = { ...block, labels: [{ value: a.name, range: a.nameRange }], body: { ...block.body, attributes: [{ ...a, name: 'default' }], blocks: [] } };
        declareVariable(fake, declared, plainCtx, diagnostics);
      }
    } else if (block.type === 'locals') localBlocks.push(block);
    else rest.push(block);
  }
  assignInputs(declared, inputs, plainCtx, diagnostics);
  const vars = newObject();
  for (const d of declared.values()) {
    if (d.value === undefined) {
      if (d.broken) continue;
      diagnostics.push(error(`Unset variable "${d.name}"`, `A used variable must be set or have a default value; give it with -var ${d.name}=..., a -var-file, or NOMAD_VAR_${d.name}.`, d.block.defRange));
      continue;
    }
    vars[d.name] = d.value;
  }
  // A variable or local whose own definition failed was reported once; references to it say nothing more.
  const failedLocals = new Set<string>();
  const undeclared = {
    ...base.undeclared,
    var: (name: string) => (declared.has(name) ? { ...undeclaredVar(name), consequence: true } : undeclaredVar(name)),
    local: (name: string) => (failedLocals.has(name) ? { ...undeclaredLocal(name), consequence: true } : undeclaredLocal(name)),
  };
  const varCtx: EvalContext = { ...base, undeclared, variables: { ...base.variables, var: vars } };
  for (const d of declared.values()) if (d.value !== undefined) validate(d, varCtx, diagnostics);
  const locals = evaluateLocals(localBlocks, varCtx, diagnostics, failedLocals);
  return { body: { ...body, blocks: rest }, ctx: { ...varCtx, variables: { ...varCtx.variables, local: locals } } };
}

function declareVariable(block: Block, declared: Map<string, Declared>, ctx: EvalContext, diagnostics: Diagnostic[]): void {
  const [label, extra] = block.labels;
  if (!label || extra) {
    diagnostics.push(error('Invalid variable block', 'A variable block takes one label, its name: variable "image" { ... }.', block.defRange));
    return;
  }
  const name = label.value;
  if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(name)) {
    diagnostics.push(error('Invalid variable name', 'A name must start with a letter or underscore and may contain only letters, digits, underscores, and dashes.', label.range));
    return;
  }
  const before = declared.get(name);
  if (before) {
    const at = before.block.defRange.start;
    diagnostics.push(error('Duplicate variable', `Duplicate ${JSON.stringify(name)} variable definition found; the first is at line ${at.line}.`, block.defRange));
    return;
  }
  const d: Declared = { name, block, validations: [] };
  declared.set(name, d);
  const attrs = new Map(block.body.attributes.map((a) => [a.name, a]));
  for (const a of block.body.attributes) {
    if (!VARIABLE_ATTRS.has(a.name)) diagnostics.push(error('Unsupported argument', `A variable block takes type, default, description and validation; not "${a.name}".`, a.nameRange));
  }
  for (const b of block.body.blocks) {
    if (b.type !== 'validation') {
      diagnostics.push(error('Unsupported block type', `A variable block holds validation blocks only, not "${b.type}".`, b.typeRange));
      continue;
    }
    const cond = b.body.attributes.find((a) => a.name === 'condition');
    const message = b.body.attributes.find((a) => a.name === 'error_message');
    if (!cond || !message) {
      diagnostics.push(error('Missing required argument', `A validation block needs ${cond ? 'error_message' : 'condition'}.`, b.defRange));
      continue;
    }
    d.validations.push({ condition: cond.expr, message: message.expr });
  }
  const type = attrs.get('type');
  if (type) {
    const t = typeFromExpr(type.expr, ctx);
    if ('diagnostic' in t) {
      diagnostics.push(t.diagnostic);
      d.broken = true;
      return;
    }
    d.type = t.type;
  }
  const def = attrs.get('default');
  if (def) {
    const v = evaluateIn(def.expr, ctx, diagnostics);
    if (v !== undefined) setValue(d, v, def.expr.range, diagnostics);
    if (d.value === undefined) d.broken = true;
  }
}

function evaluateIn(expr: Expr, ctx: EvalContext, diagnostics: Diagnostic[]): Value | undefined {
  try {
    return evaluate(expr, ctx);
  } catch (err) {
    if (!(err instanceof EvalFailure)) throw err;
    if (!err.diagnostic.consequence) diagnostics.push(err.diagnostic);
    return undefined;
  }
}

function setValue(d: Declared, v: Value, from: Range | undefined, diagnostics: Diagnostic[], source?: string): void {
  try {
    d.value = d.type ? convertTo(v, d.type) : v;
    if (from) d.from = from;
    else delete d.from;
    if (source) d.source = source;
    else delete d.source;
  } catch (err) {
    if (!(err instanceof ConversionError)) throw err;
    const what = source ? ` (from ${source})` : '';
    diagnostics.push(error('Invalid value for variable', `The value of variable "${d.name}"${what} is not a ${formatType(d.type as Type)}: ${err.message}.`, from ?? d.block.defRange));
  }
}

// A value given as text (-var, environment): a string for primitive types, an HCL expression for the others.
function fromText(d: Declared, text: string, source: string, ctx: EvalContext, diagnostics: Diagnostic[]): void {
  const complex = d.type && !['string', 'number', 'bool', 'any'].includes(d.type.k);
  if (!complex) return setValue(d, text, undefined, diagnostics, source);
  const parsed = parseExpression(source, text);
  if (!parsed.expr) {
    diagnostics.push(error('Invalid value for variable', `The value of variable "${d.name}" (from ${source}) is not a valid expression: ${parsed.diagnostics[0]?.summary ?? 'syntax error'}.`, d.block.defRange));
    return;
  }
  const v = evaluateIn(parsed.expr, ctx, diagnostics);
  if (v !== undefined) setValue(d, v, undefined, diagnostics, source);
}

function assignInputs(declared: Map<string, Declared>, inputs: VariableInputs, ctx: EvalContext, diagnostics: Diagnostic[]): void {
  for (const prefix of ['NOMAD_VAR_', 'BERTH_VAR_']) {
    for (const [k, v] of Object.entries(inputs.env ?? {})) {
      if (!k.startsWith(prefix) || v === undefined) continue;
      const d = declared.get(k.slice(prefix.length));
      if (d) fromText(d, v, `the environment variable ${k}`, ctx, diagnostics);
    }
  }
  for (const f of inputs.varFiles ?? []) {
    for (const [name, value, at] of readVarFile(f.file, f.text, ctx, diagnostics)) {
      const d = declared.get(name);
      if (!d) diagnostics.push(error('Undefined variable', `A variable "${name}" is set in this file but not declared in the job file; declare it with a variable "${name}" {} block.`, at));
      else setValue(d, value, at, diagnostics);
    }
  }
  for (const flag of inputs.vars ?? []) {
    const eq = flag.indexOf('=');
    const name = eq < 0 ? flag : flag.slice(0, eq);
    const d = declared.get(name);
    if (eq < 0) diagnostics.push(error('Invalid -var option', `The given -var option ${JSON.stringify(flag)} is not correctly specified: it must be name=value.`, undefined));
    else if (!d) diagnostics.push(error('Undefined -var variable', `A "${name}" variable was passed in but was not found in known variables. To declare variable "${name}", place this block in your job file: variable "${name}" {}`, undefined));
    else fromText(d, flag.slice(eq + 1), `-var ${name}`, ctx, diagnostics);
  }
}

// A -var-file: `name = value` lines (HCL), or a JSON object.
function readVarFile(file: string, text: string, ctx: EvalContext, diagnostics: Diagnostic[]): [string, Value, Range][] {
  if (text.trimStart().startsWith('{')) {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (err) {
      diagnostics.push(error('Invalid variables file', `${file} is not valid JSON: ${(err as Error).message}.`, undefined));
      return [];
    }
    const v = fromPlain(data);
    if (!isObject(v)) return [];
    const at: Range = { file, start: { line: 1, column: 1, byte: 0 }, end: { line: 1, column: 2, byte: 1 } };
    return Object.entries(v).map(([k, x]) => [k, x, at]);
  }
  const parsed = parseConfig(file, text);
  if (parsed.diagnostics.length) {
    diagnostics.push(...parsed.diagnostics);
    return [];
  }
  for (const b of parsed.body.blocks) diagnostics.push(error('Unexpected block', 'A variables file holds name = value lines only.', b.typeRange));
  const out: [string, Value, Range][] = [];
  for (const a of parsed.body.attributes) {
    const v = evaluateIn(a.expr, ctx, diagnostics);
    if (v !== undefined) out.push([a.name, v, a.nameRange]);
  }
  return out;
}

function validate(d: Declared, ctx: EvalContext, diagnostics: Diagnostic[]): void {
  for (const rule of d.validations) {
    const ok = evaluateIn(rule.condition, ctx, diagnostics);
    if (ok === undefined) return;
    if (ok === true || ok === 'true') continue;
    if (ok !== false && ok !== 'false') {
      diagnostics.push(error('Invalid variable validation result', 'The validation condition must be true or false.', rule.condition.range));
      return;
    }
    const message = evaluateIn(rule.message, ctx, diagnostics);
    diagnostics.push(error('Invalid value for variable', `${typeof message === 'string' ? message : 'The value is refused by its validation rule.'} (variable "${d.name}"${d.source ? `, from ${d.source}` : ''}, validation rule at line ${rule.condition.range.start.line})`, d.from ?? d.block.defRange));
    return;
  }
}

// The names `local.<name>` in an expression refers to.
function localRefs(expr: unknown, out: Set<string>): void {
  if (!expr || typeof expr !== 'object') return;
  if (Array.isArray(expr)) {
    for (const x of expr) localRefs(x, out);
    return;
  }
  const e = expr as { kind?: string; object?: { kind?: string; name?: string }; name?: string };
  if (e.kind === 'getattr' && e.object?.kind === 'variable' && e.object.name === 'local' && e.name) out.add(e.name);
  for (const [k, v] of Object.entries(expr)) if (k !== 'range' && k !== 'nameRange' && k !== 'keyRange' && k !== 'opRange') localRefs(v, out);
}

function evaluateLocals(blocks: Block[], ctx: EvalContext, diagnostics: Diagnostic[], failed: Set<string>): ObjectValue {
  const locals = newObject();
  const defs = new Map<string, { expr: Expr; at: Range; deps: Set<string> }>();
  for (const b of blocks) {
    for (const x of b.body.blocks) diagnostics.push(error('Unexpected block', 'A locals block holds name = value lines only.', x.typeRange));
    for (const a of b.body.attributes) {
      const before = defs.get(a.name);
      if (before) {
        diagnostics.push(error('Duplicate local value', `Local value "${a.name}" is already defined at line ${before.at.start.line}.`, a.nameRange));
        continue;
      }
      const deps = new Set<string>();
      localRefs(a.expr, deps);
      defs.set(a.name, { expr: a.expr, at: a.nameRange, deps });
    }
  }
  const state = new Map<string, 'visiting' | 'done' | 'failed'>();
  const scope: EvalContext = { ...ctx, variables: { ...ctx.variables, local: locals } };
  const visit = (name: string, path: string[]): boolean => {
    const s = state.get(name);
    if (s === 'done') return true;
    if (s === 'failed') return false;
    const def = defs.get(name);
    if (!def) return true; // evaluation reports the undeclared reference
    if (s === 'visiting') {
      const cycle = [...path.slice(path.indexOf(name)), name];
      diagnostics.push(error('Circular reference between local values', `The local values refer to each other in a cycle: ${cycle.map((n) => `local.${n}`).join(' -> ')}.`, def.at));
      return false;
    }
    state.set(name, 'visiting');
    for (const dep of def.deps) {
      if (!visit(dep, [...path, name])) {
        state.set(name, 'failed');
        return false;
      }
    }
    const v = evaluateIn(def.expr, scope, diagnostics);
    if (v === undefined) {
      state.set(name, 'failed');
      return false;
    }
    locals[name] = v;
    state.set(name, 'done');
    return true;
  };
  for (const name of defs.keys()) visit(name, []);
  for (const [name, s] of state) if (s !== 'done') failed.add(name);
  return locals;
}
