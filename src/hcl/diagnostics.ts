// What hashicorp/hcl's hcl.Diagnostic carries: a severity, a one-line
// summary, a detail sentence and the subject's range in the source. Every
// stage returns these as values; they are rendered once, at the edge
// (formatDiagnostic), in the user's words.

import { BerthError } from '../lib/index.js';

/** A position in a source text; line and column are 1-based, byte is the 0-based UTF-16 offset. */
export interface Pos {
  line: number;
  column: number;
  byte: number;
}

/** A span of a source text: from `start` (inclusive) to `end` (exclusive). */
export interface Range {
  file: string;
  start: Pos;
  end: Pos;
}

export interface Diagnostic {
  severity: 'error' | 'warning';
  /** A short phrase ("Unsupported attribute"). */
  summary: string;
  /** A sentence or two saying what was expected. */
  detail?: string;
  /** Where the problem is. */
  subject?: Range;
  /** Follows from an error already reported (a reference to a local that failed): never shown. */
  consequence?: boolean;
}

/**
 * A source that cannot be evaluated. Code HCL_INVALID; `diagnostics` holds
 * every error, sorted by position; the message renders them one a line.
 */
export class HclError extends BerthError<'HCL_INVALID'> {
  readonly diagnostics: Diagnostic[];

  constructor(diagnostics: Diagnostic[]) {
    const sorted = sortDiagnostics(diagnostics);
    super('HCL_INVALID', sorted.map(formatDiagnostic).join('\n'));
    this.diagnostics = sorted;
  }
}

/** `a.hcl:3:11: Unsupported attribute; This object does not have an attribute named "x".` */
export function formatDiagnostic(d: Diagnostic): string {
  const where = d.subject ? `${d.subject.file}:${d.subject.start.line}:${d.subject.start.column}: ` : '';
  return `${where}${d.summary}${d.detail ? `; ${d.detail}` : ''}`;
}

/** Diagnostics by file, line and column (those without a subject first). Returns a new array. */
export function sortDiagnostics(list: readonly Diagnostic[]): Diagnostic[] {
  return [...list].sort((a, b) => {
    const fa = a.subject?.file ?? '';
    const fb = b.subject?.file ?? '';
    if (fa !== fb) return fa < fb ? -1 : 1;
    return (a.subject?.start.byte ?? -1) - (b.subject?.start.byte ?? -1);
  });
}

/** An error diagnostic. */
export const error = (summary: string, detail: string | undefined, subject: Range | undefined): Diagnostic => ({ severity: 'error', summary, ...(detail ? { detail } : {}), ...(subject ? { subject } : {}) });

/** The range from the start of `a` to the end of `b`. */
export const spanning = (a: Range, b: Range): Range => ({ file: a.file, start: a.start, end: b.end });
