// A template in Go's text/template language as consul-template renders it:
// Go's own functions plus consul-template's key-free ones. Parsing is done
// once; rendering reads the task's environment, files and clock through the
// FunctionEnv it is given.

import { GO_BUILTINS } from './_builtins.js';
import { consulTemplateFunctions, UNSUPPORTED_FUNCTIONS, type FunctionEnv } from './_consul-funcs.js';
import { execute } from './_exec.js';
import { nomadServiceFunctions } from './_nomad-funcs.js';
import { parse, type ParsedTemplate } from './_parser.js';
import type { TemplateFunction } from './_values.js';

export interface GoTemplateOptions {
  /** Named in every error (`template: <name>:3:7: ...`); the hook uses the destination. */
  name: string;
  /** Action delimiters; default `{{` and `}}`. */
  leftDelimiter?: string;
  rightDelimiter?: string;
  /** Fail on a missing map key instead of printing "<no value>" (Nomad's error_on_missing_key). */
  errorOnMissingKey?: boolean;
}

const FUNCTION_NAMES = new Set([...GO_BUILTINS.keys(), ...consulTemplateFunctions({ env: {}, readFile: () => '', now: () => 0 }).keys(), ...nomadServiceFunctions(undefined).keys()]);

function checkFunction(name: string): string | undefined {
  if (FUNCTION_NAMES.has(name)) return undefined;
  if (name.startsWith('sprig_')) return `function "${name}": the sprig library is not supported by Berth`;
  const why = UNSUPPORTED_FUNCTIONS.get(name);
  return why ? `function "${name}" ${why}` : `function "${name}" not defined`;
}

/** The names of every function a template may call, sorted (for docs and help). */
export function supportedFunctions(): string[] {
  return [...FUNCTION_NAMES].sort();
}

/** A parsed template, ready to render any number of times. */
export class GoTemplate {
  readonly name: string;
  readonly #parsed: ParsedTemplate;
  readonly #missingKey: 'default' | 'error';

  private constructor(parsed: ParsedTemplate, missingKey: 'default' | 'error') {
    this.name = parsed.name;
    this.#parsed = parsed;
    this.#missingKey = missingKey;
  }

  /** Parses `src`. Pure; throws TemplateSyntaxError (code TASK_TEMPLATE_SYNTAX) naming the line and column. */
  static parse(src: string, opts: GoTemplateOptions): GoTemplate {
    const left = opts.leftDelimiter || '{{';
    const right = opts.rightDelimiter || '}}';
    const parsed = parse(src, { name: opts.name, delims: { left, right }, checkFunction });
    return new GoTemplate(parsed, opts.errorOnMissingKey ? 'error' : 'default');
  }

  /**
   * Renders with `data` as dot (consul-template gives none). Synchronous;
   * reads only through `env`. Throws TemplateExecError (code TASK_TEMPLATE_EXEC).
   */
  render(env: FunctionEnv, data: unknown = undefined): string {
    const funcs = new Map<string, TemplateFunction>([...GO_BUILTINS, ...consulTemplateFunctions(env), ...nomadServiceFunctions(env.services)]);
    return execute(this.#parsed, data, { funcs, missingKey: this.#missingKey });
  }
}
