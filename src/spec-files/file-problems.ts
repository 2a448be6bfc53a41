// A problem in a job, volume or agent file as spec-files reports it: the
// FileProblem (file, line, column, field, message), the SpecFileError that
// carries them, their one-line form, and the file's format.

import type { VariableInputs } from '../hcl/index.js';
import { BerthError } from '../lib/index.js';
import type { TextPosition } from './_json-positions.js';

/**
 * How a job file is evaluated (Nomad's `-var`, `-var-file`, NOMAD_VAR_*):
 * values for its `variable` blocks, and whether file functions (file(),
 * templatefile()...) may read the disk, relative to `baseDir` (default: the
 * file's directory).
 */
export interface JobFileOptions extends VariableInputs {
  allowFS?: boolean;
  /** Read the file as this format whatever its name (Nomad's `job run -json`); default: fileFormat's guess. */
  format?: FileFormat;
  baseDir?: string;
}

/** One problem in a file: where, which field (canonical path, may be empty), and what. */
export interface FileProblem {
  file: string;
  /** 1-based; 0 when the position is unknown. */
  line: number;
  column: number;
  field: string;
  message: string;
}

/**
 * A job or volume file that cannot be used: malformed HCL or JSON, or a spec
 * the schema refuses. Code FILE_INVALID. `problems` lists each with its
 * position; the message has one `file:line:col: field: message` line per
 * problem. Never quotes a submitted value (files may carry secrets).
 */
export class SpecFileError extends BerthError {
  readonly problems: FileProblem[];

  constructor(problems: FileProblem[]) {
    super('FILE_INVALID', problems.map(formatFileProblem).join('\n'));
    this.problems = problems;
  }
}

/** `writer.hcl:12:7: groups[0].count: expected number`. */
export function formatFileProblem(p: FileProblem): string {
  const where = p.line > 0 ? `${p.file}:${p.line}:${p.column}` : p.file;
  return `${where}: ${p.field ? `${p.field}: ` : ''}${p.message}`;
}

export type FileFormat = 'hcl' | 'json';

/** The file's format: by extension (.hcl/.nomad, .json), else by content (JSON starts with `{`). */
export function fileFormat(file: string, text: string): FileFormat {
  if (/\.(hcl|nomad)$/i.test(file)) return 'hcl';
  if (/\.json$/i.test(file)) return 'json';
  return text.trimStart().startsWith('{') ? 'json' : 'hcl';
}

export interface Located {
  input: unknown;
  /** Position of a canonical path, or of its nearest ancestor. */
  locate(path: string): TextPosition | undefined;
  notes?: string[];
  /** HCL files: a problem at a canonical path in the file's own words. */
  describe?(path: string, message: string): FileProblem;
}

/** Problems in file order. */
export function sortProblems(list: FileProblem[]): FileProblem[] {
  return [...list].sort((a, b) => (a.file === b.file ? a.line - b.line || a.column - b.column : a.file < b.file ? -1 : 1));
}
