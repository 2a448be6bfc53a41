// Templates of HCL's native syntax (hclsyntax's parser_template.go): a quoted
// string or heredoc is read as a flat run of literals, interpolations and
// %{if}/%{for} directives, `<<-` indentation and `~` strip markers are
// applied to it (_template-text.ts), and it is folded into a tree of
// template parts. The expressions inside come from the parser (_parser.ts)
// through TemplateCursor; the first syntax error ends the parse, as there.

import type { Expr, TemplatePart } from './ast.js';
import { spanning, type Range } from './diagnostics.js';
import type { Token } from './_scanner.js';
import { applyStrips, flushIndent, type Flat } from './_template-text.js';

/** What the template productions need of the parser: its cursor over the tokens, and its expressions. */
export interface TemplateCursor {
  peek(newlines: boolean): Token;
  next(newlines: boolean): Token;
  expect(kind: string, summary: string, detail: string, newlines?: boolean): Token;
  /** Throws the parse's syntax failure. */
  fail(summary: string, detail: string, at: Range): never;
  /** Steps back over the token just read (a directive's `for`, which forIntro reads again). */
  unread(): void;
  expression(newlines: boolean): Expr;
  forIntro(): { keyVar?: string; valueVar: string; collection: Expr };
}

/** A template from its opening token to `closeKind`: a tree of parts, or the one interpolation it wraps. Throws the parser's syntax failure. */
export function template(p: TemplateCursor, open: Token, closeKind: 'cquote' | 'cheredoc'): Expr {
  const flat: Flat[] = [];
  let close: Token;
  for (;;) {
    const t = p.next(true);
    if (t.kind === closeKind) {
      close = t;
      break;
    }
    if (t.kind === 'lit') flat.push({ t: 'lit', value: t.text, range: t.range, lineStart: !!t.lineStart });
    else if (t.kind === 'interp') {
      const stripL = strip(p);
      const expr = p.expression(false);
      const stripR = strip(p);
      const end = p.expect('}', 'Unclosed template interpolation', 'Expected a closing brace to end the interpolation expression.');
      flat.push({ t: 'interp', expr, stripL, stripR, range: spanning(t.range, end.range) });
    } else if (t.kind === 'control') flat.push(directive(p, t));
    else p.fail('Unterminated template string', 'No closing marker was found for the string.', t.range);
  }
  if (open.flush) flushIndent(flat);
  applyStrips(flat);
  const range = spanning(open.range, close.range);
  let k = 0;
  const parts = templateParts(p, flat, () => k, (v) => (k = v), undefined);
  if (parts.length === 1 && flat.length === 1 && flat[0]?.t === 'interp') return { kind: 'wrap', expr: parts[0] as Expr, range };
  return { kind: 'template', parts, range, ...(closeKind === 'cheredoc' ? { heredoc: true } : {}) };
}

function strip(p: TemplateCursor): boolean {
  if (p.peek(false).kind === '~') {
    p.next(false);
    return true;
  }
  return false;
}

function directive(p: TemplateCursor, open: Token): Flat {
  const stripL = strip(p);
  const word = p.next(false);
  const base = { stripL, range: open.range };
  const finish = (f: Omit<Flat & { t: 'ctl' }, 'stripR' | 'stripL' | 'range' | 't'>): Flat => {
    const stripR = strip(p);
    const end = p.expect('}', 'Unclosed template directive', 'Expected a closing brace to end the directive.');
    return { t: 'ctl', ...f, ...base, stripR, range: spanning(open.range, end.range) };
  };
  if (word.kind === 'ident') {
    switch (word.text) {
      case 'if':
        return finish({ word: 'if', expr: p.expression(false) });
      case 'else':
        return finish({ word: 'else' });
      case 'endif':
        return finish({ word: 'endif' });
      case 'endfor':
        return finish({ word: 'endfor' });
      case 'for': {
        p.unread();
        const intro = p.forIntro();
        return finish({ word: 'for', expr: intro.collection, ...(intro.keyVar !== undefined ? { keyVar: intro.keyVar } : {}), valueVar: intro.valueVar });
      }
    }
  }
  return p.fail('Invalid template directive', 'A template directive keyword ("if", "for", etc) is expected at the beginning of a %{ sequence.', word.range);
}

// Flat parts -> a tree, up to `until` (else/endif or endfor).
function templateParts(p: TemplateCursor, flat: Flat[], at: () => number, set: (k: number) => void, until: 'if' | 'for' | undefined): TemplatePart[] {
  const out: TemplatePart[] = [];
  while (at() < flat.length) {
    const f = flat[at()] as Flat;
    if (f.t === 'lit') {
      if (f.value) out.push({ kind: 'literal', value: f.value, range: f.range });
      set(at() + 1);
    } else if (f.t === 'interp') {
      out.push(f.expr);
      set(at() + 1);
    } else if (f.word === 'if') {
      set(at() + 1);
      const then = templateParts(p, flat, at, set, 'if');
      let otherwise: TemplatePart[] = [];
      if ((flat[at()] as Flat & { word?: string })?.word === 'else') {
        set(at() + 1);
        otherwise = templateParts(p, flat, at, set, 'if');
        if ((flat[at()] as Flat & { word?: string })?.word === 'else') p.fail('Unexpected "else" directive', 'An "if" takes one "else".', (flat[at()] as Flat).range);
      }
      const end = flat[at()] as Flat | undefined;
      if (!end || end.t !== 'ctl' || end.word !== 'endif') p.fail('Unterminated template directive', 'This "if" has no matching %{ endif }.', f.range);
      set(at() + 1);
      out.push({ kind: 'tif', condition: f.expr as Expr, then, else: otherwise, range: spanning(f.range, end.range) });
    } else if (f.word === 'for') {
      set(at() + 1);
      const body = templateParts(p, flat, at, set, 'for');
      const end = flat[at()] as Flat | undefined;
      if (!end || end.t !== 'ctl' || end.word !== 'endfor') p.fail('Unterminated template directive', 'This "for" has no matching %{ endfor }.', f.range);
      set(at() + 1);
      out.push({ kind: 'tfor', ...(f.keyVar !== undefined ? { keyVar: f.keyVar } : {}), valueVar: f.valueVar as string, collection: f.expr as Expr, body, range: spanning(f.range, end.range) });
    } else {
      const closes = (until === 'if' && (f.word === 'else' || f.word === 'endif')) || (until === 'for' && f.word === 'endfor');
      if (closes) return out;
      p.fail(`Unexpected "${f.word}" directive`, `There is no open ${f.word === 'endfor' ? '"for"' : '"if"'} directive for this to close.`, f.range);
    }
  }
  if (until) return out;
  return out;
}
