// A JSON parser that remembers where every value is: each member's key and
// each array element gets a line and column under its path
// (`groups[0].tasks[1].name`), and a syntax error names its own position.

import { formatPath, MAX_NESTING_DEPTH } from '../structs/index.js';

export interface TextPosition {
  /** 1-based. */
  line: number;
  column: number;
}

/** Malformed JSON at a position. */
export class JsonSyntaxError extends Error {
  readonly position: TextPosition;

  constructor(message: string, position: TextPosition) {
    super(message);
    this.position = position;
  }
}

/**
 * Parses `text` as JSON. Returns the value and the position of every path in
 * it (the empty path is the document). Throws JsonSyntaxError, also for
 * objects and arrays nested deeper than `maxDepth` ("nesting deeper than
 * 64 at line L col C"), so that the recursion stays far from the stack's
 * end. A `__proto__` key is kept as an ordinary own key (never a
 * prototype), so the schema refuses it like any other unknown field. Pure.
 */
export function parseJsonWithPositions(text: string, maxDepth: number = MAX_NESTING_DEPTH): { value: unknown; positions: Map<string, TextPosition> } {
  const positions = new Map<string, TextPosition>();
  let i = 0;
  let line = 1;
  let lineStart = 0;
  const here = (): TextPosition => ({ line, column: i - lineStart + 1 });
  const fail = (what: string): never => {
    throw new JsonSyntaxError(i >= text.length ? `unexpected end of input, ${what}` : `unexpected ${JSON.stringify(text[i])}, ${what}`, here());
  };
  const space = (): void => {
    while (i < text.length) {
      const c = text[i];
      if (c === '\n') {
        i++;
        line++;
        lineStart = i;
      } else if (c === ' ' || c === '\t' || c === '\r') i++;
      else break;
    }
  };
  const string = (): string => {
    const start = i;
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === '\n') fail('strings cannot span lines');
      i += text[i] === '\\' ? 2 : 1;
    }
    if (i >= text.length) fail('expected the end of a string');
    i++;
    try {
      return JSON.parse(text.slice(start, i)) as string;
    } catch {
      i = start;
      return fail('expected a valid string');
    }
  };
  const value = (path: PropertyKey[]): unknown => {
    space();
    const c = text[i];
    if ((c === '{' || c === '[') && path.length >= maxDepth) {
      const at = here();
      throw new JsonSyntaxError(`nesting deeper than ${maxDepth} at line ${at.line} col ${at.column}`, at);
    }
    if (c === '{') {
      i++;
      const obj: Record<string, unknown> = {};
      space();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        space();
        if (text[i] !== '"') fail('expected a property name in double quotes');
        const at = here();
        const key = string();
        positions.set(formatPath([...path, key]), at);
        space();
        if (text[i] !== ':') fail(`expected ":" after "${key}"`);
        i++;
        Object.defineProperty(obj, key, { value: value([...path, key]), enumerable: true, writable: true, configurable: true });
        space();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === '}') {
          i++;
          return obj;
        }
        fail('expected "," or "}"');
      }
    }
    if (c === '[') {
      i++;
      const arr: unknown[] = [];
      space();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        space();
        positions.set(formatPath([...path, arr.length]), here());
        arr.push(value([...path, arr.length]));
        space();
        if (text[i] === ',') {
          i++;
          continue;
        }
        if (text[i] === ']') {
          i++;
          return arr;
        }
        fail('expected "," or "]"');
      }
    }
    if (c === '"') return string();
    const m = /^(-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 400));
    if (!m) return fail('expected a value');
    i += m[0].length;
    return JSON.parse(m[0]) as unknown;
  };
  space();
  positions.set('', here());
  const result = value([]);
  space();
  if (i < text.length) fail('expected the end of the document');
  return { value: result, positions };
}
