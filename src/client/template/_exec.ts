// The executor of Go's text/template: walks a parsed template with a dot and
// variables as Go's text/template/exec.go does (variables scoped to their
// control structure, range over maps in sorted key order, lazy and/or, the
// previous command's value appended as the last argument of the next).

import { TemplateExecError } from './_errors.js';
import type { Arg, Command, Node, ParsedTemplate, Pipe } from './_parser.js';
import { isMap, isTrue, printValue, sortedEntries, typeName, type CallContext, type TemplateFunction } from './_values.js';

export interface ExecOptions {
  funcs: ReadonlyMap<string, TemplateFunction>;
  /** Go's missingkey option: 'default' prints "<no value>", 'error' fails. */
  missingKey: 'default' | 'error';
  /** Stops a runaway template: the most output characters. */
  maxOutput?: number;
  /** Stops a runaway template: the most actions and loop iterations (rendering is synchronous). */
  maxSteps?: number;
}

const MAX_DEPTH = 1000;
const NONE = Symbol('no final value');
class Break {}
class Continue {}

interface Var {
  name: string;
  value: unknown;
}

/** Executes `tmpl` (or its template named `name`) with `data` as dot. Pure but for what its functions do; throws TemplateExecError. */
export function execute(tmpl: ParsedTemplate, data: unknown, opts: ExecOptions, name?: string): string {
  const state = new State(tmpl, opts);
  const list = name === undefined ? tmpl.root : tmpl.defined.get(name);
  if (!list) throw new TemplateExecError(tmpl.name, tmpl.src, 0, 'template', `no such template "${name}"`);
  state.run(list, data);
  return state.out.join('');
}

class ExecFailure extends Error {}

type ControlNode = Extract<Node, { k: 'if' | 'with' | 'range' }>;

class State implements CallContext {
  readonly out: string[] = [];
  #size = 0;
  #steps = 0;
  #vars: Var[] = [];
  #depth = 0;
  /** The command being evaluated, for error messages. */
  #at: { pos: number; text: string } = { pos: 0, text: '' };
  readonly #t: ParsedTemplate;
  readonly #o: ExecOptions;

  constructor(t: ParsedTemplate, o: ExecOptions) {
    this.#t = t;
    this.#o = o;
  }

  run(list: Node[], dot: unknown): void {
    this.#vars = [{ name: '$', value: dot }];
    this.#walkList(dot, list);
  }

  executeTemplate(name: string, data: unknown): string {
    const list = this.#t.defined.get(name);
    if (!list) throw new Error(`no such template "${name}"`);
    const inner = new State(this.#t, this.#o);
    inner.#depth = this.#depth + 1;
    if (inner.#depth > MAX_DEPTH) throw new Error(`exceeded maximum template depth (${MAX_DEPTH})`);
    inner.run(list, data);
    return inner.out.join('');
  }

  #fail(msg: string, cause?: unknown): never {
    throw new TemplateExecError(this.#t.name, this.#t.src, this.#at.pos, this.#at.text, msg, { cause });
  }

  #write(s: string): void {
    this.#size += s.length;
    const max = this.#o.maxOutput ?? 64 * 1024 * 1024;
    if (this.#size > max) this.#fail(`output exceeds ${max} characters`);
    this.out.push(s);
  }

  #walkList(dot: unknown, list: Node[]): void {
    for (const node of list) this.#walk(dot, node);
  }

  #step(): void {
    const max = this.#o.maxSteps ?? 10_000_000;
    if (++this.#steps > max) this.#fail(`template runs too long: more than ${max} steps`);
  }

  #walk(dot: unknown, node: Node): void {
    this.#step();
    switch (node.k) {
      case 'text':
        this.#write(node.text);
        return;
      case 'action': {
        const v = this.#pipeline(dot, node.pipe);
        if (node.pipe.decl.length === 0) this.#write(printValue(v));
        return;
      }
      case 'if':
      case 'with': {
        const mark = this.#vars.length;
        const v = this.#pipeline(dot, node.pipe);
        if (isTrue(v)) this.#walkList(node.k === 'with' ? v : dot, node.list);
        else if (node.elseList) this.#walkList(dot, node.elseList);
        this.#vars.length = mark;
        return;
      }
      case 'range':
        this.#range(dot, node);
        return;
      case 'template': {
        const list = this.#t.defined.get(node.name);
        this.#at = { pos: node.pos, text: `template "${node.name}"` };
        if (!list) this.#fail(`no such template "${node.name}"`);
        if (++this.#depth > MAX_DEPTH) this.#fail(`exceeded maximum template depth (${MAX_DEPTH})`);
        const newDot = node.pipe ? this.#pipeline(dot, node.pipe) : undefined;
        const saved = this.#vars;
        this.#vars = [{ name: '$', value: newDot }];
        this.#walkList(newDot, list);
        this.#vars = saved;
        this.#depth -= 1;
        return;
      }
      case 'break':
        throw new Break();
      case 'continue':
        throw new Continue();
    }
  }

  #range(dot: unknown, node: ControlNode): void {
    const mark = this.#vars.length;
    const v = this.#pipeline(dot, { ...node.pipe, decl: [] });
    const [first, second] = node.pipe.decl;
    let items: Iterable<[unknown, unknown]>;
    let empty: boolean;
    if (Array.isArray(v)) [items, empty] = [v.map((e, i) => [i, e]), v.length === 0];
    else if (isMap(v)) [items, empty] = [sortedEntries(v), !isTrue(v)];
    else if (typeof v === 'number' && Number.isInteger(v)) [items, empty] = [upTo(v), v <= 0];
    else if (v === undefined || v === null) [items, empty] = [[], true];
    else return this.#fail(`range can't iterate over ${printValue(v)}`);
    const here = { pos: node.pos, text: `range ${node.pipe.cmds.map((c) => c.text).join(' | ')}` };
    for (const [key, elem] of items) {
      this.#at = here;
      this.#step();
      // One declared variable takes the element; two take the key/index and the element.
      if (second !== undefined) this.#vars.push({ name: first as string, value: key }, { name: second, value: elem });
      else if (first !== undefined) this.#vars.push({ name: first, value: typeof v === 'number' ? key : elem });
      try {
        this.#walkList(elem, node.list);
      } catch (err) {
        if (err instanceof Break) {
          this.#vars.length = mark;
          break;
        }
        if (!(err instanceof Continue)) throw err;
      }
      this.#vars.length = mark;
    }
    if (empty && node.elseList) this.#walkList(dot, node.elseList);
    this.#vars.length = mark;
  }

  #pipeline(dot: unknown, pipe: Pipe): unknown {
    let value: unknown = NONE;
    for (const cmd of pipe.cmds) value = this.#command(dot, cmd, value);
    for (const name of pipe.decl) {
      if (pipe.isAssign) this.#setVar(name, value);
      else this.#vars.push({ name, value });
    }
    return value;
  }

  #setVar(name: string, value: unknown): void {
    for (let i = this.#vars.length - 1; i >= 0; i--) {
      const v = this.#vars[i] as Var;
      if (v.name === name) {
        v.value = value;
        return;
      }
    }
    this.#fail(`undefined variable: ${name}`);
  }

  #varValue(name: string): unknown {
    for (let i = this.#vars.length - 1; i >= 0; i--) if ((this.#vars[i] as Var).name === name) return (this.#vars[i] as Var).value;
    return this.#fail(`undefined variable: ${name}`);
  }

  #command(dot: unknown, cmd: Command, final: unknown): unknown {
    const saved = this.#at;
    this.#at = { pos: cmd.pos, text: cmd.text };
    const first = cmd.args[0] as Arg;
    const rest = cmd.args.slice(1);
    let result: unknown;
    switch (first.k) {
      case 'field':
        result = this.#fieldChain(dot, dot, first.names, rest, final);
        break;
      case 'chain':
        result = this.#fieldChain(dot, this.#arg(dot, first.node), first.names, rest, final);
        break;
      case 'variable': {
        const v = this.#varValue(first.name);
        if (first.names.length === 0) {
          this.#noArgs(first.name, rest, final);
          result = v;
        } else result = this.#fieldChain(dot, v, first.names, rest, final);
        break;
      }
      case 'ident':
        result = this.#call(dot, first.name, rest, final);
        break;
      case 'pipe':
        this.#noArgs('a parenthesized pipeline', rest, final);
        result = this.#pipeline(dot, first.pipe);
        break;
      default:
        this.#noArgs(describeLiteral(first), rest, final);
        result = this.#arg(dot, first);
    }
    this.#at = saved;
    return result;
  }

  #noArgs(what: string, rest: Arg[], final: unknown): void {
    if (rest.length > 0 || final !== NONE) this.#fail(`can't give argument to non-function ${what}`);
  }

  #arg(dot: unknown, arg: Arg): unknown {
    switch (arg.k) {
      case 'field':
        return this.#fieldChain(dot, dot, arg.names, [], NONE);
      case 'chain':
        return this.#fieldChain(dot, this.#arg(dot, arg.node), arg.names, [], NONE);
      case 'variable': {
        const v = this.#varValue(arg.name);
        return arg.names.length ? this.#fieldChain(dot, v, arg.names, [], NONE) : v;
      }
      case 'ident':
        return this.#call(dot, arg.name, [], NONE);
      case 'pipe':
        return this.#pipeline(dot, arg.pipe);
      case 'dot':
        return dot;
      case 'nil':
        return null;
      case 'bool':
      case 'number':
      case 'string':
        return arg.value;
    }
  }

  #fieldChain(dot: unknown, receiver: unknown, names: string[], args: Arg[], final: unknown): unknown {
    let v = receiver;
    names.forEach((name, i) => {
      const last = i === names.length - 1;
      v = this.#field(dot, name, v, last ? args : [], last ? final : NONE);
    });
    return v;
  }

  #field(dot: unknown, name: string, receiver: unknown, args: Arg[], final: unknown): unknown {
    if (receiver === undefined || receiver === null) {
      if (this.#o.missingKey === 'error') this.#fail(`nil data; no entry for key "${name}"`);
      return undefined;
    }
    let value: unknown;
    if (receiver instanceof Map) {
      if (!receiver.has(name)) return this.#missing(name);
      value = receiver.get(name);
    } else if (isMap(receiver)) {
      if (!Object.hasOwn(receiver, name)) return this.#missing(name);
      value = (receiver as Record<string, unknown>)[name];
    } else {
      return this.#fail(`can't evaluate field ${name} in type ${typeName(receiver)}`);
    }
    if (typeof value === 'function') {
      const argv = args.map((a) => this.#arg(dot, a));
      if (final !== NONE) argv.push(final);
      try {
        return (value as (...a: unknown[]) => unknown).apply(receiver, argv);
      } catch (err) {
        return this.#fail(`error calling ${name}: ${(err as Error).message}`, err);
      }
    }
    if (args.length > 0 || final !== NONE) this.#fail(`${name} is not a method but has arguments`);
    return value;
  }

  #missing(name: string): unknown {
    if (this.#o.missingKey === 'error') this.#fail(`map has no entry for key "${name}"`);
    return undefined;
  }

  #call(dot: unknown, name: string, args: Arg[], final: unknown): unknown {
    if (name === 'and' || name === 'or') {
      // Lazy: stops at the first false (and) or true (or) argument and returns it.
      if (args.length + (final === NONE ? 0 : 1) < 1) this.#fail(`wrong number of args for ${name}: want at least 1 got 0`);
      let v: unknown;
      for (const a of args) {
        v = this.#arg(dot, a);
        if (isTrue(v) === (name === 'or')) return v;
      }
      return final === NONE ? v : final;
    }
    const f = this.#o.funcs.get(name);
    if (!f) return this.#fail(`"${name}" is not a defined function`);
    const argv = args.map((a) => this.#arg(dot, a));
    if (final !== NONE) argv.push(final);
    if (argv.length < f.min || argv.length > f.max) {
      const want = f.min === f.max ? String(f.min) : f.max === Infinity ? `at least ${f.min}` : `${f.min} to ${f.max}`;
      this.#fail(`wrong number of args for ${name}: want ${want} got ${argv.length}`);
    }
    try {
      return f.call(argv, this);
    } catch (err) {
      if (err instanceof TemplateExecError || err instanceof ExecFailure) throw err;
      return this.#fail(`error calling ${name}: ${(err as Error).message}`, err);
    }
  }
}

function* upTo(n: number): Generator<[number, number]> {
  for (let i = 0; i < n; i++) yield [i, i];
}

function describeLiteral(a: Arg): string {
  if (a.k === 'string') return JSON.stringify(a.value);
  if (a.k === 'number' || a.k === 'bool') return String(a.value);
  return a.k === 'dot' ? '.' : a.k;
}
