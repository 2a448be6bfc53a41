// Source text -> tokens, as hclsyntax's scanner: a stack of modes (bare
// expressions, quoted templates, heredocs), so that `"a ${b} c"` comes out as
// oquote, lit, interp, ident, }, lit, cquote. Literal text in quoted
// templates is already unescaped (\n, \u00e9, $${ -> ${); heredoc text is
// kept as written, one lit token per line part, `lineStart` marking those
// that begin a line (for `<<-` indentation stripping).

import { error, type Diagnostic, type Pos, type Range } from './diagnostics.js';

export interface Token {
  /** Punctuation is its own text (`{`, `==`, `...`); else ident, number, oquote, cquote, oheredoc, cheredoc, lit, interp, control, newline, eof, invalid. */
  kind: string;
  /** Identifier name, number text, literal value, heredoc marker. */
  text: string;
  range: Range;
  /** A heredoc literal that starts a line. */
  lineStart?: boolean;
  /** `<<-` heredoc. */
  flush?: boolean;
}

type Frame = { mode: 'normal'; braces: number } | { mode: 'quoted' } | { mode: 'heredoc'; marker: string | null; atLineStart: boolean };

const PUNCT3 = new Set(['...']);
const PUNCT2 = new Set(['==', '!=', '<=', '>=', '&&', '||', '=>']);
const MULTI_START = new Set(['.', '=', '!', '<', '>', '&', '|']);
const PUNCT1 = new Set(['{', '}', '[', ']', '(', ')', ',', '.', '=', '<', '>', '+', '-', '*', '/', '%', '!', '?', ':', '~']);
const isIdentStart = (c: number): boolean => (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95 || c > 127;
const isIdentPart = (c: number): boolean => isIdentStart(c) || (c >= 48 && c <= 57) || c === 45;
const isDigit = (c: number): boolean => c >= 48 && c <= 57;

/** Maps offsets of `text` to line and column. */
export function positionsOf(text: string): (byte: number) => Pos {
  const starts = [0];
  for (let k = text.indexOf('\n'); k >= 0; k = text.indexOf('\n', k + 1)) starts.push(k + 1);
  let last = 0;
  return (byte) => {
    let lo = 0;
    let hi = starts.length - 1;
    // Most look-ups move forward a little: try the last line first.
    if ((starts[last] as number) <= byte && (last + 1 >= starts.length || (starts[last + 1] as number) > byte)) lo = hi = last;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] as number) <= byte) lo = mid;
      else hi = mid - 1;
    }
    last = lo;
    return { line: lo + 1, column: byte - (starts[lo] as number) + 1, byte };
  };
}

/** Splits `text` into tokens. Pure; problems (an unterminated string, a bad escape) are returned, never thrown. */
export function scan(file: string, text: string, opts: { template?: boolean } = {}): { tokens: Token[]; diagnostics: Diagnostic[] } {
  const pos = positionsOf(text);
  const tokens: Token[] = [];
  const diagnostics: Diagnostic[] = [];
  // A bare template (templatefile) reads as a heredoc without an end marker.
  const stack: Frame[] = [{ mode: 'normal', braces: 0 }, ...(opts.template ? [{ mode: 'heredoc' as const, marker: null, atLineStart: true }] : [])];
  const range = (a: number, b: number): Range => ({ file, start: pos(a), end: pos(b) });
  const push = (kind: string, a: number, b: number, value?: string, extra?: Partial<Token>): void => {
    tokens.push({ kind, text: value ?? text.slice(a, b), range: range(a, b), ...extra });
  };
  let i = 0;
  const n = text.length;

  const normal = (frame: { mode: 'normal'; braces: number }): void => {
    const c = text.charCodeAt(i);
    const ch = text[i] as string;
    if (ch === ' ' || ch === '\t' || ch === '\r' || c === 0xfeff) {
      i++;
      while (i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === '\r')) i++;
      return;
    }
    if (ch === '\n') {
      push('newline', i, i + 1);
      i++;
      return;
    }
    if (ch === '#' || (ch === '/' && text[i + 1] === '/')) {
      while (i < n && text[i] !== '\n') i++;
      return;
    }
    if (ch === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) {
        diagnostics.push(error('Unterminated comment', 'A /* comment needs its closing */.', range(i, i + 2)));
        i = n;
      } else i = end + 2;
      return;
    }
    if (isIdentStart(c)) {
      const a = i;
      while (i < n && isIdentPart(text.charCodeAt(i))) i++;
      push('ident', a, i);
      return;
    }
    if (isDigit(c)) {
      const a = i;
      while (i < n && isDigit(text.charCodeAt(i))) i++;
      // After a `.` the digits are a legacy index (a.0.b), never a fraction.
      const afterDot = tokens.length > 0 && tokens[tokens.length - 1]?.kind === '.';
      if (!afterDot && text[i] === '.' && isDigit(text.charCodeAt(i + 1))) {
        i++;
        while (i < n && isDigit(text.charCodeAt(i))) i++;
      }
      if (!afterDot && (text[i] === 'e' || text[i] === 'E')) {
        let k = i + 1;
        if (text[k] === '+' || text[k] === '-') k++;
        if (isDigit(text.charCodeAt(k))) {
          i = k;
          while (i < n && isDigit(text.charCodeAt(i))) i++;
        }
      }
      push('number', a, i);
      return;
    }
    if (ch === '"') {
      push('oquote', i, i + 1);
      i++;
      stack.push({ mode: 'quoted' });
      return;
    }
    if (ch === '<' && text[i + 1] === '<') {
      const m = /^<<(-?)([A-Za-z_][A-Za-z0-9_-]*)[ \t]*\r?\n/.exec(text.slice(i, i + 260));
      if (m) {
        push('oheredoc', i, i + m[0].length, m[2], { flush: m[1] === '-' });
        i += m[0].length;
        stack.push({ mode: 'heredoc', marker: m[2] as string, atLineStart: true });
        return;
      }
    }
    if (ch === '}' && frame.braces === 0 && stack.length > 1) {
      push('}', i, i + 1);
      i++;
      stack.pop();
      return;
    }
    const three = MULTI_START.has(ch) ? text.slice(i, i + 3) : '';
    const two = three.slice(0, 2);
    if (PUNCT3.has(three)) {
      push(three, i, i + 3);
      i += 3;
      return;
    }
    if (PUNCT2.has(two)) {
      push(two, i, i + 2);
      i += 2;
      return;
    }
    if (PUNCT1.has(ch)) {
      if (ch === '{') frame.braces++;
      else if (ch === '}') frame.braces--;
      push(ch, i, i + 1);
      i++;
      return;
    }
    const width = c >= 0xd800 && c <= 0xdbff ? 2 : 1;
    push('invalid', i, i + width);
    diagnostics.push(error('Invalid character', `This character is not used within the language: ${JSON.stringify(text.slice(i, i + width))}.`, range(i, i + width)));
    i += width;
  };

  // `${` or `%{` at i: the opener, an optional strip marker, then a bare-expression frame.
  const opener = (): void => {
    push(text[i] === '$' ? 'interp' : 'control', i, i + 2);
    i += 2;
    if (text[i] === '~') {
      push('~', i, i + 1);
      i++;
    }
    stack.push({ mode: 'normal', braces: 0 });
  };

  const quoted = (): void => {
    const a = i;
    let value = '';
    let from = i;
    const flush = (): void => {
      value += text.slice(from, i);
    };
    while (i < n) {
      const ch = text[i];
      if (ch === '"' || ch === '\n') break;
      if ((ch === '$' || ch === '%') && text[i + 1] === '{') break;
      if ((ch === '$' || ch === '%') && text[i + 1] === ch && text[i + 2] === '{') {
        flush();
        value += `${ch}{`;
        i += 3;
        from = i;
        continue;
      }
      if (ch === '\\') {
        flush();
        const e = text[i + 1];
        const simple: Record<string, string> = { n: '\n', r: '\r', t: '\t', '"': '"', '\\': '\\' };
        if (e !== undefined && simple[e] !== undefined) {
          value += simple[e];
          i += 2;
        } else if (e === 'u' || e === 'U') {
          const len = e === 'u' ? 4 : 8;
          const hex = text.slice(i + 2, i + 2 + len);
          if (/^[0-9A-Fa-f]+$/.test(hex) && hex.length === len && Number.parseInt(hex, 16) <= 0x10ffff) {
            value += String.fromCodePoint(Number.parseInt(hex, 16));
            i += 2 + len;
          } else {
            diagnostics.push(error('Invalid escape sequence', `\\${e} must be followed by ${len} hexadecimal digits.`, range(i, i + 2)));
            i += 2;
          }
        } else {
          diagnostics.push(error('Invalid escape sequence', `The symbol ${JSON.stringify(e ?? '')} is not a valid escape sequence selector.`, range(i, i + 2)));
          i += 2;
        }
        from = i;
        continue;
      }
      i++;
    }
    flush();
    // HCL normalises string literals to NFC.
    if (i > a) push('lit', a, i, value.normalize('NFC'));
    if (i >= n || text[i] === '\n') {
      diagnostics.push(error('Unterminated template string', 'No closing marker was found for the string.', range(a - 1 < 0 ? 0 : a - 1, i)));
      stack.pop();
      // Close it so the parser can go on to the next line.
      push('cquote', i, i, '"');
      return;
    }
    if (text[i] === '"') {
      push('cquote', i, i + 1);
      i++;
      stack.pop();
      return;
    }
    opener();
  };

  const heredoc = (frame: { mode: 'heredoc'; marker: string | null; atLineStart: boolean }): void => {
    if (frame.atLineStart) {
      const end = text.indexOf('\n', i);
      const line = text.slice(i, end < 0 ? n : end).replace(/\r$/, '');
      if (frame.marker !== null && line.trim() === frame.marker) {
        const a = i + line.indexOf(frame.marker);
        push('cheredoc', a, a + frame.marker.length);
        i = a + frame.marker.length;
        stack.pop();
        return;
      }
      if (i >= n) {
        if (frame.marker !== null) diagnostics.push(error('Unterminated template string', `No closing marker "${frame.marker}" was found for this heredoc.`, range(i, i)));
        push('cheredoc', i, i, frame.marker ?? '');
        stack.pop();
        return;
      }
    }
    const a = i;
    let value = '';
    let from = i;
    const lineStart = frame.atLineStart;
    frame.atLineStart = false;
    while (i < n) {
      const ch = text[i];
      if (ch === '\n') {
        i++;
        frame.atLineStart = true;
        break;
      }
      if ((ch === '$' || ch === '%') && text[i + 1] === '{') break;
      if ((ch === '$' || ch === '%') && text[i + 1] === ch && text[i + 2] === '{') {
        value += text.slice(from, i) + `${ch}{`;
        i += 3;
        from = i;
        continue;
      }
      i++;
    }
    value += text.slice(from, i);
    if (i > a) push('lit', a, i, value.normalize('NFC'), { lineStart });
    if (!frame.atLineStart && i < n) opener();
  };

  while (i < n) {
    const frame = stack[stack.length - 1] as Frame;
    if (frame.mode === 'normal') normal(frame);
    else if (frame.mode === 'quoted') quoted();
    else heredoc(frame);
  }
  const top = stack[stack.length - 1] as Frame;
  if (top.mode === 'heredoc') {
    top.atLineStart = true;
    heredoc(top);
  }
  push('eof', n, n);
  return { tokens, diagnostics };
}
