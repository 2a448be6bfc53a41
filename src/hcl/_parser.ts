// Tokens -> syntax tree, as hclsyntax's parser: a body of attributes and
// blocks; expressions by HCL's operator precedence (|| < && < == != <
// comparisons < + - < * / %, unary ! and - above them, ?: lowest);
// templates with their %{if}/%{for} directives, `~` strip markers and `<<-`
// indentation stripping applied at parse time, so the evaluator sees plain parts.
// The first syntax error ends the parse: it is the one the user must fix.
// A recursive-descent parser of one grammar, each production calling the
// next; templates are read by _template-parser.ts (hclsyntax's
// parser_template.go), the scanner and template text are apart too.

import type { Attribute, Block, Body, Expr } from './ast.js';
import { error, spanning, type Diagnostic, type Range } from './diagnostics.js';
import { scan, type Token } from './_scanner.js';
import { template, type TemplateCursor } from './_template-parser.js';

/** Parse options. `lenient` takes what HCL v1 took (Nomad reads volume specs so): blocks on one line, quoted names, `key { }` and `key = { }` alike. */
export interface ParseOptions {
  lenient?: boolean;
}

class SyntaxFailure extends Error {
  constructor(readonly diagnostic: Diagnostic) {
    super(diagnostic.summary);
  }
}

const BINARY_LEVELS: readonly (readonly string[])[] = [['||'], ['&&'], ['==', '!='], ['<', '>', '<=', '>='], ['+', '-'], ['*', '/', '%']];
const MAX_DEPTH = 200;

/** Parses a whole file into its top-level body. Pure; never throws: syntax errors come back as diagnostics (with the body read so far). */
export function parseConfig(file: string, text: string, opts: ParseOptions = {}): { body: Body; diagnostics: Diagnostic[] } {
  const scanned = scan(file, text);
  if (scanned.diagnostics.length) {
    const empty = scanned.tokens[scanned.tokens.length - 1] as Token;
    return { body: { attributes: [], blocks: [], range: empty.range }, diagnostics: scanned.diagnostics.slice(0, 1) };
  }
  const p = new Parser(scanned.tokens, opts);
  try {
    const body = p.body(true);
    return { body, diagnostics: [] };
  } catch (err) {
    if (err instanceof SyntaxFailure) return { body: { attributes: [], blocks: [], range: (scanned.tokens[0] as Token).range }, diagnostics: [err.diagnostic] };
    throw err;
  }
}

/** Parses one expression (a -var value, a type). Throws nothing; diagnostics as parseConfig. */
export function parseExpression(file: string, text: string): { expr?: Expr; diagnostics: Diagnostic[] } {
  const scanned = scan(file, text);
  if (scanned.diagnostics.length) return { diagnostics: scanned.diagnostics.slice(0, 1) };
  const p = new Parser(scanned.tokens, {});
  try {
    const expr = p.expression(false);
    p.skipNewlines();
    p.expect('eof', 'Extra characters after expression', 'An expression was successfully parsed, but extra characters were found after it.');
    return { expr, diagnostics: [] };
  } catch (err) {
    if (err instanceof SyntaxFailure) return { diagnostics: [err.diagnostic] };
    throw err;
  }
}

/** Parses a bare template (a templatefile's text: literal text with ${...} and %{...}). Diagnostics as parseConfig. */
export function parseTemplate(file: string, text: string): { expr?: Expr; diagnostics: Diagnostic[] } {
  const scanned = scan(file, text, { template: true });
  if (scanned.diagnostics.length) return { diagnostics: scanned.diagnostics.slice(0, 1) };
  const p = new Parser(scanned.tokens, {});
  const start = scanned.tokens[0] as Token;
  try {
    return { expr: p.templateBody({ ...start, kind: 'oheredoc', flush: false }), diagnostics: [] };
  } catch (err) {
    if (err instanceof SyntaxFailure) return { diagnostics: [err.diagnostic] };
    throw err;
  }
}

class Parser implements TemplateCursor {
  private i = 0;
  private depth = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly opts: ParseOptions,
  ) {}

  peek(newlines: boolean): Token {
    if (!newlines) while (this.tokens[this.i]?.kind === 'newline') this.i++;
    return this.tokens[this.i] as Token;
  }

  next(newlines: boolean): Token {
    const t = this.peek(newlines);
    if (t.kind !== 'eof') this.i++;
    return t;
  }

  /** Steps back over the token just read (TemplateCursor). */
  unread(): void {
    this.i--;
  }

  skipNewlines(): void {
    while (this.tokens[this.i]?.kind === 'newline') this.i++;
  }

  fail(summary: string, detail: string, at: Range): never {
    throw new SyntaxFailure(error(summary, detail, at));
  }

  expect(kind: string, summary: string, detail: string, newlines = false): Token {
    const t = this.peek(newlines);
    if (t.kind !== kind) this.fail(summary, detail, t.range);
    return this.next(newlines);
  }

  private describe(t: Token): string {
    if (t.kind === 'eof') return 'the end of the file';
    if (t.kind === 'newline') return 'a newline';
    return JSON.stringify(t.text);
  }

  body(top: boolean): Body {
    const attributes: Attribute[] = [];
    const blocks: Block[] = [];
    const start = this.peek(true).range;
    for (;;) {
      const t = this.peek(false);
      if (t.kind === 'eof') {
        if (!top) this.fail('Unclosed configuration block', 'There is no closing brace for this block before the end of the file.', t.range);
        break;
      }
      if (t.kind === '}') {
        if (top) this.fail('Argument or block definition required', 'An argument or block definition is required here; this closing brace has no opening one.', t.range);
        break;
      }
      this.item(attributes, blocks, false);
    }
    return { attributes, blocks, range: spanning(start, this.peek(true).range) };
  }

  // One attribute or block; `oneLine` inside a single-line block.
  private item(attributes: Attribute[], blocks: Block[], oneLine: boolean): void {
    const t = this.next(true);
    let name: string;
    if (t.kind === 'ident') name = t.text;
    else if (this.opts.lenient && t.kind === 'oquote') name = this.stringLiteral(t).value;
    else this.fail('Argument or block definition required', `An argument or block definition is required here, not ${this.describe(t)}.`, t.range);
    const after = this.peek(true);
    if (after.kind === '=' || (this.opts.lenient && after.kind === ':')) {
      this.next(true);
      const expr = this.expression(true);
      attributes.push({ name, nameRange: t.range, expr, range: spanning(t.range, expr.range) });
      this.endOfItem(oneLine, 'argument');
      return;
    }
    const labels: { value: string; range: Range }[] = [];
    for (;;) {
      const l = this.peek(true);
      if (l.kind === 'oquote') {
        this.next(true);
        labels.push(this.stringLiteral(l));
      } else if (l.kind === 'ident') {
        this.next(true);
        labels.push({ value: l.text, range: l.range });
      } else break;
    }
    const open = this.peek(true);
    if (open.kind !== '{') {
      const what = labels.length ? 'a block definition' : `an equals sign ("=") to mark an argument, or a block`;
      this.fail(labels.length ? 'Invalid block definition' : 'Argument or block definition required', `Expected ${what} here: ${JSON.stringify(name)} is followed by ${this.describe(open)}.`, open.range);
    }
    this.next(true);
    if (++this.depth > MAX_DEPTH) this.fail('Nesting too deep', `Blocks and expressions nest at most ${MAX_DEPTH} deep.`, open.range);
    const defRange = spanning(t.range, open.range);
    let body: Body;
    if (this.peek(true).kind === 'newline') {
      body = this.body(false);
      this.next(false);
    } else if (this.peek(true).kind === '}') {
      body = { attributes: [], blocks: [], range: open.range };
      this.next(true);
    } else body = this.oneLineBody(open.range);
    this.depth--;
    blocks.push({ type: name, typeRange: t.range, labels, body, defRange });
    this.endOfItem(oneLine, 'block');
  }

  // `name { a = 1 }`: HCL takes one argument; HCL v1 (lenient) took anything up to the brace.
  private oneLineBody(open: Range): Body {
    const attributes: Attribute[] = [];
    const blocks: Block[] = [];
    if (!this.opts.lenient) {
      const t = this.peek(true);
      if (t.kind !== 'ident' || this.tokens[this.i + 1]?.kind !== '=') {
        this.fail('Invalid single-argument block definition', 'A single-line block holds at most one argument (name = value); put nested blocks on lines of their own.', t.range);
      }
      this.item(attributes, blocks, true);
      const close = this.peek(true);
      if (close.kind !== '}') this.fail('Invalid single-argument block definition', 'A single-line block definition must end with a closing brace immediately after its single argument definition.', close.range);
      this.next(true);
      return { attributes, blocks, range: spanning(open, close.range) };
    }
    for (;;) {
      const t = this.peek(false);
      if (t.kind === '}') {
        this.next(false);
        return { attributes, blocks, range: spanning(open, t.range) };
      }
      if (t.kind === 'eof') this.fail('Unclosed configuration block', 'There is no closing brace for this block before the end of the file.', t.range);
      if (t.kind === ',') {
        this.next(false);
        continue;
      }
      this.item(attributes, blocks, true);
    }
  }

  private endOfItem(oneLine: boolean, what: string): void {
    const t = this.peek(true);
    if (t.kind === 'newline' || t.kind === 'eof') return;
    if (oneLine && (t.kind === '}' || (this.opts.lenient && t.kind === ','))) return;
    if (oneLine && !this.opts.lenient) {
      this.fail('Invalid single-argument block definition', 'A single-line block definition must end with a closing brace immediately after its single argument definition.', t.range);
    }
    if (this.opts.lenient && t.kind === '}') return;
    this.fail(`Missing newline after ${what}`, `An ${what === 'argument' ? 'argument definition' : 'block definition'} must end with a newline; found ${this.describe(t)}.`, t.range);
  }

  // A quoted string that must be literal (a block label).
  private stringLiteral(open: Token): { value: string; range: Range } {
    let value = '';
    for (;;) {
      const t = this.next(true);
      if (t.kind === 'lit') value += t.text;
      else if (t.kind === 'cquote') return { value, range: spanning(open.range, t.range) };
      else this.fail('Invalid string literal', 'Template sequences are not allowed in this string; to include a literal "$", double it ("$${").', t.range);
    }
  }

  expression(newlines: boolean): Expr {
    if (++this.depth > MAX_DEPTH) this.fail('Nesting too deep', `Expressions nest at most ${MAX_DEPTH} deep.`, this.peek(newlines).range);
    const cond = this.binary(0, newlines);
    let out = cond;
    if (this.peek(newlines).kind === '?') {
      this.next(newlines);
      const then = this.expression(newlines);
      this.expect(':', 'Missing false expression in conditional', 'The conditional operator (...?...:...) requires a false expression, delimited by a colon.', newlines);
      const otherwise = this.expression(newlines);
      out = { kind: 'conditional', condition: cond, then, else: otherwise, range: spanning(cond.range, otherwise.range) };
    }
    this.depth--;
    return out;
  }

  private binary(level: number, newlines: boolean): Expr {
    if (level >= BINARY_LEVELS.length) return this.unary(newlines);
    const ops = BINARY_LEVELS[level] as readonly string[];
    let left = this.binary(level + 1, newlines);
    for (;;) {
      const t = this.peek(newlines);
      if (!ops.includes(t.kind)) return left;
      this.next(newlines);
      const right = this.binary(level + 1, newlines);
      left = { kind: 'binary', op: t.kind, left, right, range: spanning(left.range, right.range), opRange: t.range };
    }
  }

  private unary(newlines: boolean): Expr {
    const t = this.peek(newlines);
    if (t.kind === '!' || t.kind === '-') {
      this.next(newlines);
      const operand = this.unary(newlines);
      return { kind: 'unary', op: t.kind, operand, range: spanning(t.range, operand.range) };
    }
    return this.postfix(this.primary(newlines), newlines);
  }

  private postfix(expr: Expr, newlines: boolean): Expr {
    for (;;) {
      const t = this.peek(newlines);
      if (t.kind === '.') {
        const save = this.i;
        this.next(newlines);
        const n = this.next(true);
        if (n.kind === 'ident') expr = { kind: 'getattr', object: expr, name: n.text, range: spanning(expr.range, n.range), nameRange: n.range };
        else if (n.kind === 'number') {
          const key: Expr = { kind: 'literal', value: Number(n.text), range: n.range };
          expr = { kind: 'index', collection: expr, key, range: spanning(expr.range, n.range), keyRange: n.range };
        } else if (n.kind === '*') expr = this.splat(expr, n.range, false, newlines);
        else {
          this.i = save;
          this.fail('Invalid attribute name', 'An attribute name is required after a dot.', n.range);
        }
      } else if (t.kind === '[') {
        this.next(newlines);
        if (this.peek(false).kind === '*' && this.tokens[this.i + 1]?.kind === ']') {
          this.next(false);
          const close = this.next(false);
          expr = this.splat(expr, close.range, true, newlines);
          continue;
        }
        const key = this.expression(false);
        const close = this.expect(']', 'Missing close bracket on index', 'The index operator must end with a closing bracket ("]").');
        expr = { kind: 'index', collection: expr, key, range: spanning(expr.range, close.range), keyRange: key.range };
      } else return expr;
    }
  }

  // `.*` takes the attribute steps after it; `[*]` takes attributes and indexes.
  private splat(source: Expr, at: Range, full: boolean, newlines: boolean): Expr {
    let each: Expr = { kind: 'splatItem', range: at };
    for (;;) {
      const t = this.peek(newlines);
      if (t.kind === '.' && this.tokens[this.i + 1]?.kind === 'ident') {
        this.next(newlines);
        const n = this.next(true);
        each = { kind: 'getattr', object: each, name: n.text, range: spanning(each.range, n.range), nameRange: n.range };
      } else if (full && t.kind === '[' && !(this.tokens[this.i + 1]?.kind === '*')) {
        this.next(newlines);
        const key = this.expression(false);
        const close = this.expect(']', 'Missing close bracket on index', 'The index operator must end with a closing bracket ("]").');
        each = { kind: 'index', collection: each, key, range: spanning(each.range, close.range), keyRange: key.range };
      } else break;
    }
    return { kind: 'splat', source, each, range: spanning(source.range, each.range) };
  }

  private primary(newlines: boolean): Expr {
    const t = this.next(newlines);
    switch (t.kind) {
      case 'number':
        return { kind: 'literal', value: Number(t.text), range: t.range };
      case 'ident': {
        if (t.text === 'true' || t.text === 'false') return { kind: 'literal', value: t.text === 'true', range: t.range };
        if (t.text === 'null') return { kind: 'literal', value: null, range: t.range };
        if (this.peek(true).kind === '(') return this.call(t);
        return { kind: 'variable', name: t.text, range: t.range };
      }
      case '(': {
        const expr = this.expression(false);
        const close = this.expect(')', 'Unbalanced parentheses', 'Expected a closing parenthesis to terminate the expression.');
        return { kind: 'paren', expr, range: spanning(t.range, close.range) };
      }
      case 'oquote':
        return template(this, t, 'cquote');
      case 'oheredoc':
        return template(this, t, 'cheredoc');
      case '[':
        return this.tuple(t);
      case '{':
        return this.object(t);
      default:
        return this.fail('Invalid expression', `Expected the start of an expression, but found ${this.describe(t)}.`, t.range);
    }
  }

  private call(name: Token): Expr {
    this.next(true);
    const args: Expr[] = [];
    let expandFinal = false;
    for (;;) {
      const t = this.peek(false);
      if (t.kind === ')') break;
      if (expandFinal) this.fail('Missing closing parenthesis', 'An expanded function argument (with "...") must be the last argument.', t.range);
      args.push(this.expression(false));
      const sep = this.peek(false);
      if (sep.kind === '...') {
        this.next(false);
        expandFinal = true;
      }
      const after = this.peek(false);
      if (after.kind === ',') this.next(false);
      else if (after.kind !== ')') this.fail('Missing argument separator', 'A comma is required to separate each function argument from the next.', after.range);
    }
    const close = this.next(false);
    return { kind: 'call', name: name.text, nameRange: name.range, args, expandFinal, range: spanning(name.range, close.range) };
  }

  private isFor(): boolean {
    const t = this.peek(false);
    return t.kind === 'ident' && t.text === 'for' && this.tokens[this.i + 1]?.kind === 'ident';
  }

  // `for k, v in coll :` -> the names and the collection.
  forIntro(): { keyVar?: string; valueVar: string; collection: Expr } {
    this.next(false);
    const first = this.expect('ident', 'Invalid "for" expression', 'A "for" needs a name for its value: for v in ...');
    let keyVar: string | undefined;
    let valueVar = first.text;
    if (this.peek(false).kind === ',') {
      this.next(false);
      keyVar = first.text;
      valueVar = this.expect('ident', 'Invalid "for" expression', 'Expected a second name after the comma: for k, v in ...').text;
    }
    const kw = this.next(false);
    if (kw.kind !== 'ident' || kw.text !== 'in') this.fail('Invalid "for" expression', 'The "in" keyword must follow the names: for k, v in ...', kw.range);
    const collection = this.expression(false);
    return { ...(keyVar !== undefined ? { keyVar } : {}), valueVar, collection };
  }

  private tuple(open: Token): Expr {
    if (this.isFor()) {
      const intro = this.forIntro();
      this.expect(':', 'Invalid "for" expression', 'A colon must follow the collection: [for v in coll : expr]');
      const valueExpr = this.expression(false);
      const condition = this.forCondition();
      const close = this.expect(']', 'Invalid "for" expression', 'A "for" expression in brackets ends with "]".');
      return { kind: 'for', ...intro, valueExpr, ...(condition ? { condition } : {}), group: false, range: spanning(open.range, close.range) };
    }
    const items: Expr[] = [];
    for (;;) {
      if (this.peek(false).kind === ']') break;
      items.push(this.expression(false));
      const sep = this.peek(false);
      if (sep.kind === ',') this.next(false);
      else if (sep.kind !== ']') this.fail('Missing item separator', 'Expected a comma to mark the beginning of the next item.', sep.range);
    }
    const close = this.next(false);
    return { kind: 'tuple', items, range: spanning(open.range, close.range) };
  }

  private forCondition(): Expr | undefined {
    const t = this.peek(false);
    if (t.kind === 'ident' && t.text === 'if') {
      this.next(false);
      return this.expression(false);
    }
    return undefined;
  }

  private object(open: Token): Expr {
    if (this.isFor()) {
      const intro = this.forIntro();
      this.expect(':', 'Invalid "for" expression', 'A colon must follow the collection: {for k, v in coll : key => value}');
      const keyExpr = this.expression(false);
      this.expect('=>', 'Invalid "for" expression', 'An object "for" needs a key and a value: {for k, v in coll : key => value}');
      const valueExpr = this.expression(false);
      let group = false;
      if (this.peek(false).kind === '...') {
        this.next(false);
        group = true;
      }
      const condition = this.forCondition();
      const close = this.expect('}', 'Invalid "for" expression', 'A "for" expression in braces ends with "}".');
      return { kind: 'for', ...intro, keyExpr, valueExpr, ...(condition ? { condition } : {}), group, range: spanning(open.range, close.range) };
    }
    const items: { key: Expr; value: Expr; identKey: boolean }[] = [];
    for (;;) {
      const t = this.peek(false);
      if (t.kind === '}') break;
      const key = this.expression(true);
      const identKey = key.kind === 'variable';
      const eq = this.peek(true);
      if (eq.kind !== '=' && eq.kind !== ':') this.fail('Missing key/value separator', 'Expected an equals sign ("=") to mark the beginning of the attribute value.', eq.range);
      this.next(true);
      const value = this.expression(true);
      items.push({ key, value, identKey });
      const sep = this.peek(true);
      if (sep.kind === ',' || sep.kind === 'newline') this.next(true);
      else if (sep.kind !== '}') this.fail('Missing attribute separator', 'Expected a newline or comma to mark the beginning of the next attribute.', sep.range);
    }
    const close = this.next(false);
    return { kind: 'object', items, range: spanning(open.range, close.range) };
  }

  templateBody(open: Token): Expr {
    return template(this, open, 'cheredoc');
  }
}
