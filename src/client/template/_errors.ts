// Errors of the template engine, with the template's name and the line:col
// of the offending action, worded as Go's text/template words them.

import { BerthError } from '../../lib/index.js';

export type TemplateErrorCode = 'TASK_TEMPLATE_SYNTAX' | 'TASK_TEMPLATE_EXEC' | 'TASK_TEMPLATE_FAILED';

/** A template engine or template hook error. */
export class TemplateError extends BerthError<TemplateErrorCode> {}

/** `line:col` (1-based) of offset `pos` in `src`. */
export function lineCol(src: string, pos: number): string {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < pos && i < src.length; i++) {
    if (src.charCodeAt(i) === 10) {
      line += 1;
      lineStart = i + 1;
    }
  }
  return `${line}:${pos - lineStart + 1}`;
}

/** The template text cannot be parsed: `template: <name>:<line>:<col>: <what>`. */
export class TemplateSyntaxError extends TemplateError {
  constructor(name: string, src: string, pos: number, detail: string) {
    super('TASK_TEMPLATE_SYNTAX', `template: ${name}:${lineCol(src, pos)}: ${detail}`);
  }
}

/** Executing the template failed: `template: <name>:<line>:<col>: executing at <action>: <what>`. */
export class TemplateExecError extends TemplateError {
  constructor(name: string, src: string, pos: number, context: string, detail: string, options?: { cause?: unknown }) {
    super('TASK_TEMPLATE_EXEC', `template: ${name}:${lineCol(src, pos)}: executing at <${context}>: ${detail}`, options);
  }
}
