// The whole pipeline for one file: source -> tokens -> syntax tree ->
// (variables and locals, for job files) -> evaluated body. References Nomad
// resolves at run time (`${node.unique.id}`, `${attr.kernel.name}`,
// `${NOMAD_ALLOC_DIR}`, `${CSI_ENDPOINT}`...) are any whose root is not a
// variable here: they stay as their `${...}` text, as jobspec2 keeps them.

import { dirname } from 'node:path';
import { evaluateBody, type EvaluatedBody } from './body.js';
import type { Diagnostic } from './diagnostics.js';
import type { EvalContext } from './evaluate.js';
import { jobFunctions } from './functions.js';
import { parseConfig } from './_parser.js';
import { evaluateVariables, type VariableInputs } from './variables.js';

export interface ConfigOptions extends VariableInputs {
  /** HCL v1 leniency (volume specs): one-line nested blocks, quoted names. */
  lenient?: boolean;
  /** Take `variable` and `locals` blocks (job files). */
  variables?: boolean;
  /** File functions resolve paths here; default: the file's directory. */
  baseDir?: string;
  /** Whether file functions may read the disk (default false). */
  allowFS?: boolean;
}

/**
 * Parses and evaluates `text`. Returns the evaluated body and every error
 * found (sorted by the caller when rendered); when there are diagnostics
 * the body may be partial; `syntax` says they are syntax errors (the text
 * could not be parsed at all). Pure but for file functions, which read the disk
 * only when `allowFS`.
 */
export function evaluateConfig(file: string, text: string, opts: ConfigOptions = {}): { body: EvaluatedBody; diagnostics: Diagnostic[]; syntax?: boolean } {
  const parsed = parseConfig(file, text, { lenient: !!opts.lenient });
  if (parsed.diagnostics.length) return { body: { attributes: [], blocks: [] }, diagnostics: parsed.diagnostics, syntax: true };
  const diagnostics: Diagnostic[] = [];
  const base: EvalContext = {
    variables: {},
    functions: jobFunctions({ baseDir: opts.baseDir ?? dirname(file), allowFS: !!opts.allowFS }),
    sources: { [file]: text },
    undefinedVariable: (_root, ref) => `\${${ref}}`,
  };
  let body = parsed.body;
  let ctx = base;
  if (opts.variables) ({ body, ctx } = evaluateVariables(body, base, opts, diagnostics));
  // Variable problems first: the body's errors would mostly repeat them.
  if (diagnostics.length) return { body: { attributes: [], blocks: [] }, diagnostics };
  return { body: evaluateBody(body, ctx, diagnostics), diagnostics };
}
