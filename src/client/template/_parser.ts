// The parser of Go's text/template language: tokens -> a tree of nodes
// (Go's text/template/parse), with `define`/`block` collected into a set of
// named templates. Undefined functions and variables are parse errors, as in Go.

import { TemplateSyntaxError } from './_errors.js';
import { lex, parseNumber, type Delimiters, type Token } from './_lexer.js';

export type Arg =
  | { k: 'field'; pos: number; names: string[] }
  | { k: 'variable'; pos: number; name: string; names: string[] }
  | { k: 'ident'; pos: number; name: string }
  | { k: 'dot'; pos: number }
  | { k: 'nil'; pos: number }
  | { k: 'bool'; pos: number; value: boolean }
  | { k: 'number'; pos: number; value: number }
  | { k: 'string'; pos: number; value: string }
  | { k: 'pipe'; pos: number; pipe: Pipe }
  | { k: 'chain'; pos: number; node: Arg; names: string[] };

export interface Command {
  pos: number;
  /** The command's source text, for error messages. */
  text: string;
  args: Arg[];
}

export interface Pipe {
  pos: number;
  decl: string[];
  isAssign: boolean;
  cmds: Command[];
}

export type Node =
  | { k: 'text'; text: string }
  | { k: 'action'; pos: number; pipe: Pipe }
  | { k: 'if' | 'with' | 'range'; pos: number; pipe: Pipe; list: Node[]; elseList: Node[] | undefined }
  | { k: 'template'; pos: number; name: string; pipe: Pipe | undefined }
  | { k: 'break' | 'continue'; pos: number };

/** A parsed template and the templates it defines, by name. */
export interface ParsedTemplate {
  name: string;
  src: string;
  root: Node[];
  defined: Map<string, Node[]>;
}

/** What the parser needs to know of the functions in scope. */
export type FunctionCheck = (name: string) => string | undefined;

/**
 * Parses `src`. `checkFunction` answers undefined for a known function and
 * an error message otherwise. Pure; throws TemplateSyntaxError.
 */
export function parse(src: string, opts: { name: string; delims: Delimiters; checkFunction: FunctionCheck }): ParsedTemplate {
  return new Parser(src, opts).parseAll();
}

type End = { k: 'end' | 'else'; pos: number };

class Parser {
  readonly #src: string;
  readonly #name: string;
  readonly #toks: Token[];
  readonly #check: FunctionCheck;
  #i = 0;
  #vars: string[] = ['$'];
  #rangeDepth = 0;
  readonly #defined = new Map<string, Node[]>();

  constructor(src: string, opts: { name: string; delims: Delimiters; checkFunction: FunctionCheck }) {
    this.#src = src;
    this.#name = opts.name;
    this.#check = opts.checkFunction;
    this.#toks = lex(src, opts.delims, opts.name);
  }

  parseAll(): ParsedTemplate {
    const root: Node[] = [];
    for (;;) {
      if (this.#peek().type === 'eof') break;
      if (this.#peek().type === 'left' && this.#peekNonSpaceAt(1).value === 'define' && this.#peekNonSpaceAt(1).type === 'keyword') {
        this.#next();
        this.#nextNonSpace();
        this.#parseDefine();
        continue;
      }
      const node = this.#textOrAction();
      if ('k' in node && (node.k === 'end' || node.k === 'else')) this.#fail(node.pos, `unexpected {{${node.k}}}`);
      root.push(node as Node);
    }
    return { name: this.#name, src: this.#src, root, defined: this.#defined };
  }

  // ---- tokens ----------------------------------------------------------------

  #fail(pos: number, msg: string): never {
    throw new TemplateSyntaxError(this.#name, this.#src, pos, msg);
  }
  #peek(): Token {
    return this.#toks[this.#i] as Token;
  }
  #next(): Token {
    const t = this.#toks[this.#i] as Token;
    if (t.type !== 'eof') this.#i += 1;
    return t;
  }
  #peekNonSpace(): Token {
    while (this.#peek().type === 'space') this.#i += 1;
    return this.#peek();
  }
  /** The n-th token from here, skipping spaces after the first. */
  #peekNonSpaceAt(n: number): Token {
    let j = this.#i + n;
    while ((this.#toks[j] as Token).type === 'space') j += 1;
    return this.#toks[j] as Token;
  }
  #nextNonSpace(): Token {
    this.#peekNonSpace();
    return this.#next();
  }
  #expect(type: Token['type'], context: string): Token {
    const t = this.#nextNonSpace();
    if (t.type !== type) this.#unexpected(t, context);
    return t;
  }
  #unexpected(t: Token, context: string): never {
    const what = t.type === 'eof' ? 'EOF' : t.type === 'right' ? 'right delimiter' : `"${t.value}"`;
    return this.#fail(t.pos, `unexpected ${what} in ${context}`);
  }

  // ---- lists and actions -----------------------------------------------------

  #itemList(context: string): { list: Node[]; end: End } {
    const list: Node[] = [];
    for (;;) {
      if (this.#peek().type === 'eof') this.#fail(this.#src.length, `unexpected EOF: {{${context}}} has no {{end}}`);
      const node = this.#textOrAction();
      if ('k' in node && (node.k === 'end' || node.k === 'else')) return { list, end: node as End };
      list.push(node as Node);
    }
  }

  #textOrAction(): Node | End {
    const t = this.#next();
    if (t.type === 'text') return { k: 'text', text: t.value };
    if (t.type !== 'left') this.#unexpected(t, 'input');
    return this.#action();
  }

  #action(): Node | End {
    const t = this.#peekNonSpace();
    if (t.type === 'keyword') {
      this.#next();
      switch (t.value) {
        case 'end':
          this.#expect('right', 'end');
          return { k: 'end', pos: t.pos };
        case 'else':
          // `{{else if ...}}` / `{{else with ...}}`: the if/with is left for the enclosing control to parse.
          if (this.#peekNonSpace().type === 'keyword' && ['if', 'with'].includes(this.#peekNonSpace().value)) return { k: 'else', pos: t.pos };
          this.#expect('right', 'else');
          return { k: 'else', pos: t.pos };
        case 'if':
        case 'with':
        case 'range':
          return this.#control(t.value, t.pos);
        case 'template':
          return this.#template(t.pos);
        case 'block':
          return this.#block(t.pos);
        case 'break':
        case 'continue':
          if (this.#rangeDepth === 0) this.#fail(t.pos, `{{${t.value}}} outside {{range}}`);
          this.#expect('right', t.value);
          return { k: t.value, pos: t.pos };
        case 'define':
          this.#fail(t.pos, 'define may appear only at the top level');
      }
    }
    return { k: 'action', pos: t.pos, pipe: this.#pipeline('command', 'right') };
  }

  #control(context: 'if' | 'with' | 'range', pos: number): Node {
    const mark = this.#vars.length;
    try {
      const pipe = this.#pipeline(context, 'right');
      if (context === 'range') this.#rangeDepth += 1;
      const { list, end } = this.#itemList(context);
      if (context === 'range') this.#rangeDepth -= 1;
      let elseList: Node[] | undefined;
      if (end.k === 'else') {
        const next = this.#peekNonSpace();
        if (context !== 'range' && next.type === 'keyword' && next.value === context) {
          this.#next();
          elseList = [this.#control(context, next.pos)];
        } else {
          const rest = this.#itemList(context);
          if (rest.end.k !== 'end') this.#fail(rest.end.pos, `expected end; found {{else}}`);
          elseList = rest.list;
        }
      }
      return { k: context, pos, pipe, list, elseList };
    } finally {
      this.#vars.length = mark;
    }
  }

  #templateName(context: string): string {
    const t = this.#nextNonSpace();
    if (t.type !== 'string') this.#unexpected(t, `${context} clause`);
    return t.value;
  }

  #template(pos: number): Node {
    const name = this.#templateName('template');
    let pipe: Pipe | undefined;
    if (this.#peekNonSpace().type !== 'right') pipe = this.#pipeline('template', 'right');
    else this.#next();
    return { k: 'template', pos, name, pipe };
  }

  #block(pos: number): Node {
    const name = this.#templateName('block');
    const pipe = this.#pipeline('block', 'right');
    this.#defineBody(name, pos);
    return { k: 'template', pos, name, pipe };
  }

  #parseDefine(): void {
    const pos = this.#peek().pos;
    const name = this.#templateName('define');
    this.#expect('right', 'define clause');
    this.#defineBody(name, pos);
  }

  #defineBody(name: string, pos: number): void {
    const saved = this.#vars;
    const savedDepth = this.#rangeDepth;
    this.#vars = ['$'];
    this.#rangeDepth = 0;
    const { list, end } = this.#itemList('define');
    if (end.k !== 'end') this.#fail(end.pos, 'unexpected {{else}} in define');
    this.#vars = saved;
    this.#rangeDepth = savedDepth;
    const existing = this.#defined.get(name);
    // As Go: a second definition replaces the first unless one of them is empty.
    if (existing && existing.some((n) => n.k !== 'text' || n.text.trim()) && list.some((n) => n.k !== 'text' || n.text.trim())) {
      this.#fail(pos, `template: multiple definition of template "${name}"`);
    }
    if (!existing || list.length > 0) this.#defined.set(name, list);
  }

  // ---- pipelines --------------------------------------------------------------

  #pipeline(context: string, end: 'right' | 'rparen'): Pipe {
    const pos = this.#peekNonSpace().pos;
    const pipe: Pipe = { pos, decl: [], isAssign: false, cmds: [] };
    const declared: string[] = [];
    // Declarations: `$x :=`, `$x =`, `$i, $e :=` (range only).
    for (;;) {
      const v = this.#peekNonSpace();
      if (v.type !== 'variable') break;
      const save = this.#i;
      this.#next();
      const after = this.#peekNonSpace();
      if (after.type === 'declare' || after.type === 'assign') {
        this.#next();
        pipe.isAssign = after.type === 'assign';
        if (pipe.isAssign && !this.#vars.includes(v.value)) this.#fail(v.pos, `undefined variable "${v.value}"`);
        pipe.decl.push(v.value);
        declared.push(v.value);
        break;
      }
      if (after.type === 'comma') {
        this.#next();
        pipe.decl.push(v.value);
        declared.push(v.value);
        if (context !== 'range' || pipe.decl.length > 1) this.#fail(after.pos, `too many declarations in ${context}`);
        if (this.#peekNonSpace().type !== 'variable') this.#fail(after.pos, 'range can only initialize variables');
        continue;
      }
      this.#i = save;
      break;
    }
    for (;;) {
      const t = this.#nextNonSpace();
      if (t.type === end) {
        if (pipe.cmds.length === 0) this.#fail(t.pos, `missing value for ${context}`);
        pipe.cmds.forEach((cmd, n) => {
          if (n > 0 && ['bool', 'dot', 'nil', 'number', 'string'].includes((cmd.args[0] as Arg).k)) {
            this.#fail(cmd.pos, `non executable command in pipeline stage ${n + 1}`);
          }
        });
        // A declared variable is visible after its declaring pipeline, not inside it.
        if (!pipe.isAssign) this.#vars.push(...declared);
        return pipe;
      }
      if (['bool', 'dot', 'field', 'ident', 'number', 'nil', 'string', 'variable', 'lparen'].includes(t.type)) {
        this.#i -= 1;
        pipe.cmds.push(this.#command());
        continue;
      }
      this.#unexpected(t, context);
    }
  }

  #command(): Command {
    const start = this.#peekNonSpace().pos;
    const cmd: Command = { pos: start, text: '', args: [] };
    for (;;) {
      this.#peekNonSpace();
      cmd.args.push(this.#operand());
      const t = this.#next();
      if (t.type === 'space') {
        const p = this.#peekNonSpace();
        if (p.type === 'right' || p.type === 'rparen' || p.type === 'pipe') {
          if (p.type === 'pipe') this.#next();
          break;
        }
        continue;
      }
      if (t.type === 'right' || t.type === 'rparen') {
        this.#i -= 1;
        break;
      }
      if (t.type === 'pipe') break;
      this.#unexpected(t, 'operand');
    }
    if (cmd.args.length === 1 && (cmd.args[0] as Arg).k === 'nil') this.#fail(start, 'nil is not a command');
    const last = this.#toks[this.#i - 1] as Token;
    cmd.text = this.#src.slice(start, last.type === 'pipe' || last.type === 'right' ? last.pos : last.pos + last.value.length).trim().replace(/\|$/, '').trim();
    return cmd;
  }

  #operand(): Arg {
    const node = this.#term();
    if (this.#peek().type !== 'field') return node;
    const names: string[] = [];
    while (this.#peek().type === 'field') names.push(this.#next().value);
    if (node.k === 'field') return { ...node, names: [...node.names, ...names] };
    if (node.k === 'variable') return { ...node, names: [...node.names, ...names] };
    if (['bool', 'string', 'number', 'nil', 'dot'].includes(node.k)) this.#fail(node.pos, `unexpected . after term`);
    return { k: 'chain', pos: node.pos, node, names };
  }

  #term(): Arg {
    const t = this.#nextNonSpace();
    switch (t.type) {
      case 'ident': {
        const problem = this.#check(t.value);
        if (problem) this.#fail(t.pos, problem);
        return { k: 'ident', pos: t.pos, name: t.value };
      }
      case 'dot':
        return { k: 'dot', pos: t.pos };
      case 'nil':
        return { k: 'nil', pos: t.pos };
      case 'variable':
        if (!this.#vars.includes(t.value)) this.#fail(t.pos, `undefined variable "${t.value}"`);
        return { k: 'variable', pos: t.pos, name: t.value, names: [] };
      case 'field':
        return { k: 'field', pos: t.pos, names: [t.value] };
      case 'bool':
        return { k: 'bool', pos: t.pos, value: t.value === 'true' };
      case 'number': {
        const value = parseNumber(t.value);
        if (!Number.isFinite(value)) this.#fail(t.pos, `bad number syntax: "${t.value}"`);
        return { k: 'number', pos: t.pos, value };
      }
      case 'string':
        return { k: 'string', pos: t.pos, value: t.value };
      case 'lparen': {
        const pipe = this.#pipeline('parenthesized pipeline', 'rparen');
        return { k: 'pipe', pos: t.pos, pipe };
      }
      default:
        return this.#unexpected(t, 'operand');
    }
  }
}
