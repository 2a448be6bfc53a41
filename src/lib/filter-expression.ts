// Filter expressions as Nomad's API takes them in `?filter=` (the go-bexpr
// language): `Status == "running" and Meta.zone in ["a", "b"]`-style boolean
// expressions over the fields of each answer's rows, as the client sees them.
//
//   expr     := or
//   or       := and ("or" and)*
//   and      := not ("and" not)*
//   not      := "not" not | "(" expr ")" | match
//   match    := selector ("==" | "!=") value
//             | selector "is" ["not"] "empty"
//             | value ["not"] "in" selector
//             | selector ["not"] ("contains" | "matches") value
//   selector := name ("." name | "[" string "]")*
//   value    := "string" | `raw string` | number | true | false | bare word
//
// Comparisons follow the field's type (a number field compares numbers, a
// bool field bools); `in`/`contains` look in a list's elements, a map's keys
// or a string's text; a selector that names nothing matches neither `==` nor
// `contains` (and so matches their negations) and is empty.

import { compileRe2, type Re2 } from './re2.js';

/** A compiled filter: true when the row matches. Never throws. */
export type RowFilter = (row: unknown) => boolean;

/** A filter that does not parse. `message` says where and what was expected. */
export class FilterSyntaxError extends Error {
  override readonly name = 'FilterSyntaxError';
}

type Token = { kind: 'word' | 'string' | 'op' | 'punct'; text: string; at: number };

const KEYWORDS = new Set(['and', 'or', 'not', 'in', 'is', 'empty', 'contains', 'matches']);

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      let text = '';
      while (j < src.length && src[j] !== '"') {
        if (src[j] === '\\' && j + 1 < src.length) {
          const n = src[j + 1] as string;
          text += n === 'n' ? '\n' : n === 't' ? '\t' : n;
          j += 2;
        } else text += src[j++];
      }
      if (j >= src.length) throw new FilterSyntaxError(`unterminated string starting at column ${i + 1}`);
      out.push({ kind: 'string', text, at: i });
      i = j + 1;
      continue;
    }
    if (c === '`') {
      const j = src.indexOf('`', i + 1);
      if (j < 0) throw new FilterSyntaxError(`unterminated raw string starting at column ${i + 1}`);
      out.push({ kind: 'string', text: src.slice(i + 1, j), at: i });
      i = j + 1;
      continue;
    }
    if (src.startsWith('==', i) || src.startsWith('!=', i)) {
      out.push({ kind: 'op', text: src.slice(i, i + 2), at: i });
      i += 2;
      continue;
    }
    if ('()[].,'.includes(c)) {
      out.push({ kind: 'punct', text: c, at: i });
      i++;
      continue;
    }
    const m = /^[A-Za-z0-9_\-/:+@]+/.exec(src.slice(i));
    if (!m) throw new FilterSyntaxError(`unexpected "${c}" at column ${i + 1}`);
    out.push({ kind: 'word', text: m[0], at: i });
    i += m[0].length;
  }
  return out;
}

type Node =
  | { t: 'or' | 'and'; l: Node; r: Node }
  | { t: 'not'; e: Node }
  | { t: 'eq' | 'ne'; sel: string[]; v: string }
  | { t: 'empty'; sel: string[]; neg: boolean }
  | { t: 'in' | 'contains' | 'matches'; sel: string[]; v: string; neg: boolean; re?: Re2 };

class Parser {
  #i = 0;
  constructor(readonly toks: Token[]) {}

  parse(): Node {
    if (this.toks.length === 0) throw new FilterSyntaxError('the expression is empty');
    const n = this.or();
    const rest = this.toks[this.#i];
    if (rest) throw new FilterSyntaxError(`unexpected "${rest.text}" at column ${rest.at + 1}`);
    return n;
  }

  #peek(k = 0): Token | undefined {
    return this.toks[this.#i + k];
  }
  #isWord(t: Token | undefined, w: string): boolean {
    return t?.kind === 'word' && t.text === w;
  }
  #expect(what: string, ok: (t: Token) => boolean): Token {
    const t = this.toks[this.#i];
    if (!t) throw new FilterSyntaxError(`expected ${what} at the end of the expression`);
    if (!ok(t)) throw new FilterSyntaxError(`expected ${what} at column ${t.at + 1}, found "${t.text}"`);
    this.#i++;
    return t;
  }

  or(): Node {
    let l = this.and();
    while (this.#isWord(this.#peek(), 'or')) {
      this.#i++;
      l = { t: 'or', l, r: this.and() };
    }
    return l;
  }
  and(): Node {
    let l = this.not();
    while (this.#isWord(this.#peek(), 'and')) {
      this.#i++;
      l = { t: 'and', l, r: this.not() };
    }
    return l;
  }
  not(): Node {
    const t = this.#peek();
    if (this.#isWord(t, 'not')) {
      this.#i++;
      return { t: 'not', e: this.not() };
    }
    if (t?.kind === 'punct' && t.text === '(') {
      this.#i++;
      const e = this.or();
      this.#expect('")"', (x) => x.kind === 'punct' && x.text === ')');
      return e;
    }
    return this.match();
  }
  match(): Node {
    // `value [not] in selector` starts with a value: a string, or a word followed by `in` / `not in`.
    const first = this.#peek();
    const second = this.#peek(1);
    const valueFirst =
      first?.kind === 'string' ||
      (first?.kind === 'word' && (this.#isWord(second, 'in') || (this.#isWord(second, 'not') && this.#isWord(this.#peek(2), 'in'))));
    if (valueFirst) {
      const v = this.value();
      const neg = this.#isWord(this.#peek(), 'not');
      if (neg) this.#i++;
      this.#expect('"in"', (x) => this.#isWord(x, 'in'));
      return { t: 'in', v, sel: this.selector(), neg };
    }
    const sel = this.selector();
    const op = this.#peek();
    if (op?.kind === 'op') {
      this.#i++;
      return { t: op.text === '==' ? 'eq' : 'ne', sel, v: this.value() };
    }
    if (this.#isWord(op, 'is')) {
      this.#i++;
      const neg = this.#isWord(this.#peek(), 'not');
      if (neg) this.#i++;
      this.#expect('"empty"', (x) => this.#isWord(x, 'empty'));
      return { t: 'empty', sel, neg };
    }
    const neg = this.#isWord(op, 'not');
    if (neg) this.#i++;
    const kw = this.#expect('an operator (==, !=, is empty, contains, matches, in)', (x) => this.#isWord(x, 'contains') || this.#isWord(x, 'matches'));
    const v = this.value();
    if (kw.text === 'matches') {
      let re: Re2;
      try {
        re = compileRe2(v);
      } catch (err) {
        throw new FilterSyntaxError(`invalid regular expression "${v}": ${(err as Error).message}`);
      }
      return { t: 'matches', sel, v, neg, re };
    }
    return { t: 'contains', sel, v, neg };
  }
  selector(): string[] {
    const parts = [this.#expect('a field name', (x) => x.kind === 'word' && !KEYWORDS.has(x.text)).text];
    for (;;) {
      const t = this.#peek();
      if (t?.kind === 'punct' && t.text === '.') {
        this.#i++;
        parts.push(this.#expect('a field name after "."', (x) => x.kind === 'word').text);
      } else if (t?.kind === 'punct' && t.text === '[') {
        this.#i++;
        parts.push(this.#expect('a quoted key', (x) => x.kind === 'string').text);
        this.#expect('"]"', (x) => x.kind === 'punct' && x.text === ']');
      } else return parts;
    }
  }
  value(): string {
    return this.#expect('a value', (x) => x.kind === 'string' || (x.kind === 'word' && !KEYWORDS.has(x.text))).text;
  }
}

const MISSING = Symbol('missing');

function lookup(row: unknown, sel: readonly string[]): unknown {
  let cur: unknown = row;
  for (const part of sel) {
    if (cur === null || typeof cur !== 'object') return MISSING;
    if (Array.isArray(cur)) {
      const n = Number(part);
      if (!Number.isInteger(n) || n < 0 || n >= cur.length) return MISSING;
      cur = cur[n];
    } else {
      if (!Object.prototype.hasOwnProperty.call(cur, part)) return MISSING;
      cur = (cur as Record<string, unknown>)[part];
    }
  }
  return cur;
}

function equals(field: unknown, v: string): boolean {
  if (typeof field === 'number') return v.trim() !== '' && Number(v) === field;
  if (typeof field === 'boolean') return v === String(field);
  if (typeof field === 'string') return field === v;
  if (field === null || field === undefined) return v === '' || v === 'null';
  return false;
}

function contains(field: unknown, v: string): boolean {
  if (typeof field === 'string') return field.includes(v);
  if (Array.isArray(field)) return field.some((e) => equals(e, v));
  if (field !== null && typeof field === 'object') return Object.prototype.hasOwnProperty.call(field, v);
  return false;
}

function isEmpty(field: unknown): boolean {
  if (field === MISSING || field === null || field === undefined || field === '') return true;
  if (Array.isArray(field)) return field.length === 0;
  if (typeof field === 'object') return Object.keys(field).length === 0;
  return false;
}

function evaluate(n: Node, row: unknown): boolean {
  switch (n.t) {
    case 'or':
      return evaluate(n.l, row) || evaluate(n.r, row);
    case 'and':
      return evaluate(n.l, row) && evaluate(n.r, row);
    case 'not':
      return !evaluate(n.e, row);
    case 'eq':
    case 'ne': {
      const f = lookup(row, n.sel);
      const eq = f !== MISSING && equals(f, n.v);
      return n.t === 'eq' ? eq : !eq;
    }
    case 'empty':
      return isEmpty(lookup(row, n.sel)) !== n.neg;
    case 'in':
    case 'contains': {
      const f = lookup(row, n.sel);
      return (f !== MISSING && contains(f, n.v)) !== n.neg;
    }
    case 'matches': {
      const f = lookup(row, n.sel);
      return (typeof f === 'string' && (n.re as Re2).test(f)) !== n.neg;
    }
  }
}

/**
 * Compiles a filter expression. Throws FilterSyntaxError (with the column)
 * for one that does not parse; the function it returns never throws.
 */
export function compileFilter(expression: string): RowFilter {
  const tree = new Parser(tokenize(expression)).parse();
  return (row) => evaluate(tree, row);
}
