// The sizes Berth accepts from a user, in one place: the CLI checks them
// before it sends anything, the server again before it stores anything, so
// that a hostile or mistaken input is refused with a clear error instead of
// exhausting memory or the stack.

/**
 * The most allocations one task group may ask for. One node runs at most a
 * few hundred tasks and the server keeps every allocation in memory, so a
 * larger count is a typo or an attack (`count = 1000000000000` once ran the
 * agent out of memory); refused at validation, before anything is placed.
 */
export const MAX_GROUP_COUNT = 1000;

/** The most allocations one job may ask for, summed over its groups (see MAX_GROUP_COUNT): ten on each of a thousand nodes. */
export const MAX_JOB_COUNT = 10_000;

/**
 * The deepest nesting of objects and arrays (JSON) or blocks, objects and
 * lists (HCL) a job or volume file and an API body may have. Real specs
 * nest less than 10 deep; the limit keeps recursive code (parsers,
 * validators, the state store's serializer) far from the stack's end.
 */
export const MAX_NESTING_DEPTH = 64;

/** The largest job or volume file the CLI reads (a real one is a few KiB). */
export const MAX_SPEC_FILE_BYTES = 1024 * 1024;

/** The largest request body the HTTP API takes by default (`bodyLimit`); the CLI checks it before sending. */
export const MAX_REQUEST_BODY_BYTES = 4 * 1024 * 1024;

/** Where a text nests deeper than allowed: 1-based line and column of the opening bracket that is one too many. */
export interface NestingProblem {
  maxDepth: number;
  line: number;
  column: number;
  message: string;
}

/**
 * Scans JSON text (or HCL with `hcl`) for `{`/`[` (and HCL's `(`) nesting
 * deeper than `maxDepth`, skipping double-quoted strings and (for HCL) `#`,
 * `//` and `/* *\/` comments. Iterative, linear in the text, never throws. Returns
 * the first place it goes too deep, or undefined. Lenient on malformed
 * text: it only counts brackets, the parser reports syntax.
 */
export function nestingProblem(text: string, maxDepth: number = MAX_NESTING_DEPTH, opts: { hcl?: boolean } = {}): NestingProblem | undefined {
  let depth = 0;
  let line = 1;
  let lineStart = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 /* \n */) {
      line++;
      lineStart = i + 1;
    } else if (c === 34 /* " */) {
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === 92 /* \ */) i++;
        else if (d === 34 || d === 10) break;
      }
      if (text.charCodeAt(i) === 10) {
        line++;
        lineStart = i + 1;
      }
    } else if (opts.hcl && (c === 35 /* # */ || (c === 47 /* / */ && text.charCodeAt(i + 1) === 47))) {
      while (i + 1 < n && text.charCodeAt(i + 1) !== 10) i++;
    } else if (opts.hcl && c === 47 && text.charCodeAt(i + 1) === 42 /* * */) {
      for (i += 2; i < n && !(text.charCodeAt(i) === 42 && text.charCodeAt(i + 1) === 47); i++) {
        if (text.charCodeAt(i) === 10) {
          line++;
          lineStart = i + 1;
        }
      }
      i++;
    } else if (c === 123 /* { */ || c === 91 /* [ */ || (opts.hcl && c === 40) /* ( */) {
      depth++;
      if (depth > maxDepth) {
        const column = i - lineStart + 1;
        return { maxDepth, line, column, message: `nesting deeper than ${maxDepth} at line ${line} col ${column}` };
      }
    } else if (c === 125 || c === 93 || (opts.hcl && c === 41)) {
      depth = Math.max(0, depth - 1);
    }
  }
  return undefined;
}
