// The lexer of Go's text/template language: the template text cut into text
// runs and the tokens of each action, with trim markers (`{{- ` / ` -}}`)
// applied and comments dropped. Positions are offsets into the source.

import { TemplateSyntaxError } from './_errors.js';

export type TokenType =
  | 'text'
  | 'left'
  | 'right'
  | 'space'
  | 'ident'
  | 'keyword'
  | 'field'
  | 'variable'
  | 'dot'
  | 'string'
  | 'number'
  | 'bool'
  | 'nil'
  | 'pipe'
  | 'lparen'
  | 'rparen'
  | 'comma'
  | 'declare'
  | 'assign'
  | 'eof';

export interface Token {
  type: TokenType;
  /** The token's text as written (for a string: its value, escapes resolved; for text: after trimming). */
  value: string;
  pos: number;
}

const KEYWORDS = new Set(['if', 'else', 'end', 'range', 'with', 'define', 'template', 'block', 'break', 'continue']);
const SPACE = /[ \t\r\n]/;
const IDENT_CHAR = /[\p{L}\p{N}_]/u;

export interface Delimiters {
  left: string;
  right: string;
}

/** Cuts `src` into tokens. Throws TemplateSyntaxError (with the offset) on malformed input. */
export function lex(src: string, delims: Delimiters, name: string): Token[] {
  const out: Token[] = [];
  const { left, right } = delims;
  let pos = 0;
  let trimNext = false;
  const fail = (at: number, msg: string): never => {
    throw new TemplateSyntaxError(name, src, at, msg);
  };
  while (pos <= src.length) {
    const start = src.indexOf(left, pos);
    let text = start < 0 ? src.slice(pos) : src.slice(pos, start);
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, '');
    trimNext = false;
    if (start < 0) {
      if (text) out.push({ type: 'text', value: text, pos });
      break;
    }
    let at = start + left.length;
    const trimLeft = src[at] === '-' && SPACE.test(src[at + 1] ?? '');
    if (trimLeft) {
      text = text.replace(/[ \t\r\n]+$/, '');
      at += 2;
    }
    if (text) out.push({ type: 'text', value: text, pos });
    // A comment: {{/* ... */}}, with optional trim markers around it.
    const afterSpace = trimLeft ? at + (src.slice(at).match(/^[ \t\r\n]*/)?.[0].length ?? 0) : at;
    if (src.startsWith('/*', afterSpace)) {
      const close = src.indexOf('*/', afterSpace + 2);
      if (close < 0) fail(start, 'unclosed comment');
      let end = close + 2;
      const trimRight = /^[ \t\r\n]-/.test(src.slice(end, end + 2)) && src.startsWith(right, end + 2);
      if (trimRight) end += 2;
      if (!src.startsWith(right, end)) fail(end, 'comment ends before closing delimiter');
      trimNext = trimRight;
      pos = end + right.length;
      continue;
    }
    out.push({ type: 'left', value: left, pos: start });
    const action = lexAction(src, at, right, name, out);
    trimNext = action.trimRight;
    pos = action.end;
  }
  out.push({ type: 'eof', value: '', pos: src.length });
  return out;
}

/** Lexes one action from `at` to its closing delimiter; returns where the text resumes. */
function lexAction(src: string, at: number, right: string, name: string, out: Token[]): { end: number; trimRight: boolean } {
  let pos = at;
  let parens = 0;
  const fail = (where: number, msg: string): never => {
    throw new TemplateSyntaxError(name, src, where, msg);
  };
  for (;;) {
    if (pos >= src.length) fail(at, 'unclosed action');
    const ch = src[pos] as string;
    // ` -}}`: a trim marker before the closing delimiter.
    if (SPACE.test(ch) && src[pos + 1] === '-' && src.startsWith(right, pos + 2)) {
      if (parens > 0) fail(pos, 'unclosed left paren');
      out.push({ type: 'right', value: right, pos: pos + 2 });
      return { end: pos + 2 + right.length, trimRight: true };
    }
    if (src.startsWith(right, pos)) {
      if (parens > 0) fail(pos, 'unclosed left paren');
      out.push({ type: 'right', value: right, pos });
      return { end: pos + right.length, trimRight: false };
    }
    if (SPACE.test(ch)) {
      const m = /^[ \t\r\n]+/.exec(src.slice(pos)) as RegExpExecArray;
      out.push({ type: 'space', value: m[0], pos });
      pos += m[0].length;
      continue;
    }
    const rest = src.slice(pos, pos + 200);
    if (ch === '|') {
      out.push({ type: 'pipe', value: ch, pos: pos++ });
    } else if (ch === '(') {
      parens += 1;
      out.push({ type: 'lparen', value: ch, pos: pos++ });
    } else if (ch === ')') {
      parens -= 1;
      if (parens < 0) fail(pos, 'unexpected right paren');
      out.push({ type: 'rparen', value: ch, pos: pos++ });
    } else if (ch === ',') {
      out.push({ type: 'comma', value: ch, pos: pos++ });
    } else if (rest.startsWith(':=')) {
      out.push({ type: 'declare', value: ':=', pos });
      pos += 2;
    } else if (ch === '=') {
      out.push({ type: 'assign', value: ch, pos: pos++ });
    } else if (ch === '"') {
      const end = findStringEnd(src, pos, '"');
      if (end < 0) fail(pos, 'unterminated quoted string');
      out.push({ type: 'string', value: unquote(src.slice(pos + 1, end), () => fail(pos, 'invalid escape in quoted string')), pos });
      pos = end + 1;
    } else if (ch === '`') {
      const end = src.indexOf('`', pos + 1);
      if (end < 0) fail(pos, 'unterminated raw quoted string');
      out.push({ type: 'string', value: src.slice(pos + 1, end), pos });
      pos = end + 1;
    } else if (ch === "'") {
      const end = findStringEnd(src, pos, "'");
      if (end < 0) fail(pos, 'unterminated character constant');
      const chars = [...unquote(src.slice(pos + 1, end), () => fail(pos, 'invalid character constant'))];
      if (chars.length !== 1) fail(pos, 'invalid character constant');
      out.push({ type: 'number', value: String((chars[0] as string).codePointAt(0)), pos });
      pos = end + 1;
    } else if (ch === '$') {
      let end = pos + 1;
      while (end < src.length && IDENT_CHAR.test(src[end] as string)) end += 1;
      out.push({ type: 'variable', value: src.slice(pos, end), pos });
      pos = end;
    } else if (ch === '.' && !/[0-9]/.test(src[pos + 1] ?? '')) {
      let end = pos + 1;
      while (end < src.length && IDENT_CHAR.test(src[end] as string)) end += 1;
      out.push(end === pos + 1 ? { type: 'dot', value: '.', pos } : { type: 'field', value: src.slice(pos + 1, end), pos });
      pos = end;
    } else if (/[0-9+\-.]/.test(ch)) {
      const m = /^[+-]?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(\d[\d_]*)?\.?\d*([eE][+-]?\d+)?)/.exec(rest);
      const text = m?.[0] ?? '';
      if (!text || !/\d/.test(text) || IDENT_CHAR.test(src[pos + text.length] ?? '')) fail(pos, `bad number syntax: "${rest.split(/[\s)}|]/)[0]}"`);
      out.push({ type: 'number', value: text, pos });
      pos += text.length;
    } else if (IDENT_CHAR.test(ch)) {
      let end = pos;
      while (end < src.length && IDENT_CHAR.test(src[end] as string)) end += 1;
      const word = src.slice(pos, end);
      const type: TokenType = KEYWORDS.has(word) ? 'keyword' : word === 'true' || word === 'false' ? 'bool' : word === 'nil' ? 'nil' : 'ident';
      out.push({ type, value: word, pos });
      pos = end;
    } else {
      fail(pos, `unexpected "${ch}" in action`);
    }
  }
}

function findStringEnd(src: string, start: number, quote: string): number {
  for (let i = start + 1; i < src.length; i++) {
    const c = src[i];
    if (c === '\\') i += 1;
    else if (c === '\n') return -1;
    else if (c === quote) return i;
  }
  return -1;
}

const ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'", a: '\x07', b: '\b', f: '\f', v: '\v', '0': '\0' };

/** Resolves Go's escapes in a quoted string's body. */
function unquote(body: string, bad: () => never): string {
  return body.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)/g, (_m, esc: string) => {
    if (/^[xuU]/.test(esc)) return String.fromCodePoint(parseInt(esc.slice(1), 16));
    if (/^[0-7]{3}$/.test(esc)) return String.fromCharCode(parseInt(esc, 8));
    const r = ESCAPES[esc];
    return r === undefined ? bad() : r;
  });
}

/** Parses a Go number literal (underscores, 0x/0o/0b prefixes). */
export function parseNumber(text: string): number {
  const t = text.replaceAll('_', '');
  const sign = t.startsWith('-') ? -1 : 1;
  const body = t.replace(/^[+-]/, '');
  if (/^0[xX]/.test(body)) return sign * parseInt(body.slice(2), 16);
  if (/^0[bB]/.test(body)) return sign * parseInt(body.slice(2), 2);
  if (/^0[oO]/.test(body)) return sign * parseInt(body.slice(2), 8);
  if (/^0[0-7]+$/.test(body)) return sign * parseInt(body.slice(1), 8);
  return sign * Number(body);
}
