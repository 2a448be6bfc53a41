// Nomad's `-t` flag: a Go text/template rendered over the API's answer
// (command/data_format.go). This is the part of text/template scripts use:
// field chains (`.ID`, `.Summary.web.Running`, `$`), variables (`$x`),
// `range` (over lists and maps, with `$i, $v :=` and `else`), `if` / `else
// if` / `else`, `with`, pipes (`.X | printf "%s"`), the built-in functions
// print, printf, println, len, index, eq, ne, lt, le, gt, ge, and, or, not,
// and `{{-`/`-}}` trimming. Values print as Go prints them (`[a b]`,
// `map[k:v]`, `<no value>`).

import { UsageError } from './usage-error.js';

type Value = unknown;

/** One parsed piece of a template. */
type Node =
  | { kind: 'text'; text: string }
  | { kind: 'action'; pipe: Pipeline }
  | { kind: 'if'; pipe: Pipeline; then: Node[]; else: Node[] }
  | { kind: 'with'; pipe: Pipeline; then: Node[]; else: Node[] }
  | { kind: 'range'; vars: string[]; pipe: Pipeline; body: Node[]; else: Node[] };

/** `cmd | cmd | ...`, optionally declaring variables (`$x := ...`). */
interface Pipeline {
  decl: string[];
  cmds: Term[][];
}

type Term =
  | { kind: 'field'; base: string; path: string[] }
  | { kind: 'lit'; value: Value }
  | { kind: 'fn'; name: string }
  /** A parenthesized pipeline, and the fields read of its value (`(index . 0).ID`). */
  | { kind: 'sub'; pipe: Pipeline; path: string[] };

const FUNCS = new Set(['print', 'printf', 'println', 'len', 'index', 'eq', 'ne', 'lt', 'le', 'gt', 'ge', 'and', 'or', 'not']);

/** A template error: a usage error naming the template's problem. */
const bad = (why: string): UsageError => new UsageError(`template: ${why}`);

/** Splits a template into text and actions, applying `{{-` / `-}}` trimming. */
function lex(src: string): Array<{ text: string } | { action: string }> {
  const out: Array<{ text: string } | { action: string }> = [];
  let i = 0;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    if (open < 0) {
      out.push({ text: src.slice(i) });
      break;
    }
    let text = src.slice(i, open);
    const close = src.indexOf('}}', open + 2);
    if (close < 0) throw bad('unclosed action');
    let body = src.slice(open + 2, close);
    if (body.startsWith('- ')) {
      text = text.trimEnd();
      body = body.slice(1);
    }
    let next = close + 2;
    if (body.endsWith(' -')) {
      body = body.slice(0, -1);
      while (next < src.length && /\s/.test(src[next] as string)) next++;
    }
    if (text) out.push({ text });
    out.push({ action: body.trim() });
    i = next;
  }
  return out;
}

/** The words of an action: quoted strings, parentheses, pipes and bare words. */
function words(action: string): string[] {
  const out: string[] = [];
  // `).Field.Sub`: a field of a parenthesized value, kept as one word.
  const re = /\s*("(?:[^"\\]|\\.)*"|`[^`]*`|:=|\)(?:\.\w+)+|[()|,]|[^\s()|,]+)/gy;
  let m: RegExpExecArray | null;
  while ((m = re.exec(action)) !== null) out.push(m[1] as string);
  if (re.lastIndex !== 0 && re.lastIndex < action.trimEnd().length) throw bad(`cannot read "${action}"`);
  return out;
}

function parsePipeline(ws: string[]): Pipeline {
  const decl: string[] = [];
  const assign = ws.indexOf(':=');
  if (assign >= 0) {
    for (const w of ws.slice(0, assign)) if (w !== ',') decl.push(w);
    ws = ws.slice(assign + 1);
  }
  const cmds: Term[][] = [];
  let cur: Term[] = [];
  for (let i = 0; i < ws.length; i++) {
    const w = ws[i] as string;
    if (w === '|') {
      cmds.push(cur);
      cur = [];
    } else if (w === '(') {
      let depth = 1;
      let j = i + 1;
      for (; j < ws.length && depth > 0; j++) depth += ws[j] === '(' ? 1 : ws[j]?.startsWith(')') ? -1 : 0;
      if (depth !== 0) throw bad('unclosed parenthesis');
      const path = (ws[j - 1] as string).slice(1).split('.').filter(Boolean);
      cur.push({ kind: 'sub', pipe: parsePipeline(ws.slice(i + 1, j - 1)), path });
      i = j - 1;
    } else cur.push(term(w));
  }
  cmds.push(cur);
  if (cmds.some((c) => c.length === 0)) throw bad('missing value in a pipeline');
  return { decl, cmds };
}

function term(w: string): Term {
  if (w.startsWith('"')) return { kind: 'lit', value: JSON.parse(w) as string };
  if (w.startsWith('`')) return { kind: 'lit', value: w.slice(1, -1) };
  if (/^-?\d+(\.\d+)?$/.test(w)) return { kind: 'lit', value: Number(w) };
  if (w === 'true' || w === 'false') return { kind: 'lit', value: w === 'true' };
  if (w === 'nil') return { kind: 'lit', value: null };
  if (w.startsWith('.') || w.startsWith('$')) {
    const [base, ...path] = w.startsWith('.') ? ['.', ...w.slice(1).split('.').filter(Boolean)] : w.split('.');
    return { kind: 'field', base: base as string, path };
  }
  if (FUNCS.has(w)) return { kind: 'fn', name: w };
  throw bad(`function "${w}" not defined`);
}

/** Parses a template. Throws UsageError naming what it cannot read. */
export function parseTemplate(src: string): Node[] {
  const tokens = lex(src);
  let pos = 0;
  /** Nodes up to one of `ends` (an action starting with it), which is consumed and returned. */
  const block = (ends: readonly string[]): { nodes: Node[]; end: string } => {
    const nodes: Node[] = [];
    while (pos < tokens.length) {
      const t = tokens[pos++] as { text: string } | { action: string };
      if ('text' in t) {
        nodes.push({ kind: 'text', text: t.text });
        continue;
      }
      if (t.action.startsWith('/*')) continue;
      const ws = words(t.action);
      const head = ws[0] ?? '';
      if (ends.includes(head)) return { nodes, end: t.action };
      if (head === 'if' || head === 'with' || head === 'range') nodes.push(control(head, ws.slice(1)));
      else if (head === 'end' || head === 'else') throw bad(`unexpected {{${head}}}`);
      else nodes.push({ kind: 'action', pipe: parsePipeline(ws) });
    }
    if (ends.length) throw bad('missing {{end}}');
    return { nodes, end: '' };
  };
  /** An if/with/range after its opening action, through its {{end}}; `else if` nests an `if` that ends at the same {{end}}. */
  const control = (head: 'if' | 'with' | 'range', ws: string[]): Node => {
    const pipe = parsePipeline(ws);
    const body = block(['else', 'end']);
    let otherwise: Node[] = [];
    if (body.end.startsWith('else')) {
      const rest = words(body.end).slice(1);
      otherwise = rest[0] === 'if' ? [control('if', rest.slice(1))] : block(['end']).nodes;
    }
    if (head === 'range') return { kind: 'range', vars: pipe.decl, pipe: { decl: [], cmds: pipe.cmds }, body: body.nodes, else: otherwise };
    return head === 'if' ? { kind: 'if', pipe, then: body.nodes, else: otherwise } : { kind: 'with', pipe, then: body.nodes, else: otherwise };
  };
  return block([]).nodes;
}

/** Go's truth: false, 0, "", nil, and empty lists and maps are false. */
function truthy(v: Value): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v as object).length > 0;
  return true;
}

/** A value as Go's fmt prints it with %v. */
export function goString(v: Value): string {
  if (v === null || v === undefined) return '<no value>';
  if (Array.isArray(v)) return `[${v.map(goString).join(' ')}]`;
  if (typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>);
    return `map[${entries.map(([k, x]) => `${k}:${goString(x)}`).join(' ')}]`;
  }
  return String(v);
}

/** Go's fmt.Sprintf for the verbs scripts use: %s %v %d %q %t %f %x and widths. */
export function sprintf(format: string, args: Value[]): string {
  let i = 0;
  return format.replace(/%([-+ 0#]*)(\d+)?(?:\.(\d+))?([svdqtfxX%])/g, (_m, flags: string, width: string | undefined, prec: string | undefined, verb: string) => {
    if (verb === '%') return '%';
    const arg = args[i++];
    let s: string;
    switch (verb) {
      case 'd':
        s = typeof arg === 'number' ? String(Math.trunc(arg)) : `%!d(${goString(arg)})`;
        break;
      case 'f':
        s = typeof arg === 'number' ? arg.toFixed(prec === undefined ? 6 : Number(prec)) : `%!f(${goString(arg)})`;
        break;
      case 'q':
        s = JSON.stringify(typeof arg === 'string' ? arg : goString(arg));
        break;
      case 'x':
      case 'X':
        s = typeof arg === 'number' ? arg.toString(16) : Buffer.from(String(arg)).toString('hex');
        if (verb === 'X') s = s.toUpperCase();
        break;
      default:
        s = goString(arg);
        if (prec !== undefined && verb === 's') s = s.slice(0, Number(prec));
    }
    const w = width === undefined ? 0 : Number(width);
    if (s.length < w) s = flags.includes('-') ? s.padEnd(w) : s.padStart(w, flags.includes('0') && verb !== 's' ? '0' : ' ');
    return s;
  });
}

function compare(a: Value, b: Value): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  throw bad(`incompatible types for comparison: ${goString(a)} and ${goString(b)}`);
}

function call(name: string, args: Value[]): Value {
  switch (name) {
    case 'print':
      return args.map(goString).join('');
    case 'println':
      return `${args.map(goString).join(' ')}\n`;
    case 'printf':
      return sprintf(String(args[0] ?? ''), args.slice(1));
    case 'len': {
      const v = args[0];
      if (typeof v === 'string' || Array.isArray(v)) return v.length;
      if (v && typeof v === 'object') return Object.keys(v).length;
      throw bad(`len of ${goString(v)}`);
    }
    case 'index': {
      let v = args[0];
      for (const k of args.slice(1)) v = v === null || v === undefined ? undefined : (v as Record<string, unknown>)[String(k)];
      return v;
    }
    case 'eq':
      return args.slice(1).some((b) => args[0] === b);
    case 'ne':
      return args[0] !== args[1];
    case 'lt':
      return compare(args[0], args[1]) < 0;
    case 'le':
      return compare(args[0], args[1]) <= 0;
    case 'gt':
      return compare(args[0], args[1]) > 0;
    case 'ge':
      return compare(args[0], args[1]) >= 0;
    case 'and':
      return args.find((a) => !truthy(a)) ?? args.at(-1);
    case 'or':
      return args.find(truthy) ?? args.at(-1);
    case 'not':
      return !truthy(args[0]);
    default:
      throw bad(`function "${name}" not defined`);
  }
}

interface Scope {
  dot: Value;
  root: Value;
  vars: Map<string, Value>;
}

function field(base: Value, path: readonly string[]): Value {
  let v = base;
  for (const k of path) {
    if (v === null || v === undefined) return undefined;
    if (typeof v !== 'object') throw bad(`can't evaluate field ${k} in ${goString(v)}`);
    v = (v as Record<string, unknown>)[k];
  }
  return v;
}

function evalTerm(t: Term, s: Scope): Value {
  switch (t.kind) {
    case 'lit':
      return t.value;
    case 'sub':
      return field(evalPipeline(t.pipe, s), t.path);
    case 'fn':
      return call(t.name, []);
    case 'field': {
      if (t.base === '.') return field(s.dot, t.path);
      if (t.base === '$') return field(s.root, t.path);
      if (!s.vars.has(t.base)) throw bad(`undefined variable "${t.base}"`);
      return field(s.vars.get(t.base), t.path);
    }
  }
}

function evalPipeline(p: Pipeline, s: Scope): Value {
  let last: Value = undefined;
  p.cmds.forEach((cmd, i) => {
    const [head, ...rest] = cmd as [Term, ...Term[]];
    const args = rest.map((a) => evalTerm(a, s));
    if (i > 0) args.push(last);
    if (head.kind === 'fn') last = call(head.name, args);
    else if (args.length) throw bad('only functions take arguments');
    else last = evalTerm(head, s);
  });
  for (const name of p.decl) s.vars.set(name, last);
  return last;
}

function render(nodes: readonly Node[], s: Scope, out: string[]): void {
  for (const n of nodes) {
    if (n.kind === 'text') out.push(n.text);
    else if (n.kind === 'action') {
      const v = evalPipeline(n.pipe, s);
      if (n.pipe.decl.length === 0) out.push(goString(v));
    } else if (n.kind === 'if') render(truthy(evalPipeline(n.pipe, s)) ? n.then : n.else, s, out);
    else if (n.kind === 'with') {
      const v = evalPipeline(n.pipe, s);
      if (truthy(v)) render(n.then, { ...s, dot: v }, out);
      else render(n.else, s, out);
    } else {
      const v = evalPipeline(n.pipe, s);
      const entries: Array<[Value, Value]> = Array.isArray(v)
        ? v.map((x, i) => [i, x])
        : v && typeof v === 'object'
          ? Object.keys(v)
              .sort()
              .map((k) => [k, (v as Record<string, unknown>)[k]])
          : [];
      if (!entries.length) render(n.else, s, out);
      for (const [k, x] of entries) {
        const vars = new Map(s.vars);
        if (n.vars.length === 1) vars.set(n.vars[0] as string, x);
        if (n.vars.length === 2) {
          vars.set(n.vars[0] as string, k);
          vars.set(n.vars[1] as string, x);
        }
        render(n.body, { ...s, dot: x, vars }, out);
      }
    }
  }
}

/** Renders the Go template `src` over `data`. Throws UsageError for a template it cannot read or run. */
export function renderTemplate(src: string, data: Value): string {
  const out: string[] = [];
  render(parseTemplate(src), { dot: data, root: data, vars: new Map() }, out);
  return out.join('');
}
