// HCL's native syntax (hashicorp/hcl hclsyntax) and Nomad's job language on
// top of it (jobspec2: variables, locals, dynamic blocks, its functions),
// as a pipeline of pure stages: source -> tokens -> syntax tree with ranges
// -> evaluated values. Diagnostics are values; render them at the edge.
export { type Diagnostic, type Pos, type Range, HclError, formatDiagnostic, sortDiagnostics } from './diagnostics.js';
export type { Attribute, Block, Body, Expr, TemplatePart } from './ast.js';
export { scan, type Token } from './_scanner.js';
export { parseConfig, parseExpression, parseTemplate, type ParseOptions } from './_parser.js';
export { evaluate, EvalFailure, FunctionError, type EvalContext, type HclFunction } from './evaluate.js';
export { type Value, type ObjectValue, type Type, convertTo, formatType, typeName } from './values.js';
export { typeFromExpr } from './types.js';
export { jobFunctions, FUNCTION_NAMES, type FunctionOptions } from './functions.js';
export { evaluateBody, outlineOf, toJsonShape, type EvaluatedAttribute, type EvaluatedBlock, type EvaluatedBody, type OutlineNode } from './body.js';
export { evaluateVariables, type VariableInputs } from './variables.js';
export { evaluateConfig, type ConfigOptions } from './evaluate-config.js';
