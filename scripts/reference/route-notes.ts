// What the route modules' own words say of each route: the comments that
// name a route (`// GET /v1/jobs: every job ...`, or a module header's
// table row `//   PUT  /v1/volumes  register ...`), the comment above each
// registration, its query and body types and its handler's declared
// result. Read from the sources' syntax trees (TypeScript's parser, no type
// checking), so nothing of it is a second hand-written copy.

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';

/** What the sources say of one route (method and path as fastify registers them). */
export interface RouteNote {
  /** The module that registers it, from the root (`src/server/http/job-routes.ts`). */
  module?: string;
  description?: string;
  takes?: string;
  returns?: string;
}

const METHOD = '(?:GET|PUT|POST|DELETE|HEAD)';
const PATH = String.raw`/[A-Za-z0-9_/*.{}-]*(?::[A-Za-z_][A-Za-z0-9_]*[A-Za-z0-9_/*.-]*)*(?:\?[^\s)]*)?`;
const NAMED = new RegExp(String.raw`^(\s*)(${METHOD}(?:/${METHOD})*)\s+(${PATH}(?:(?:,\s*| and | or )${PATH})*)(.*)$`);

const ANY_NAMED = new RegExp(String.raw`\b${METHOD}(?:/${METHOD})*\s+/`);
const key = (method: string, path: string): string => `${method} ${path.split('?')[0]}`;
const clean = (text: string): string =>
  text
    .replace(/^[\s:,.-]+/, '')
    .replace(/^\((node|read|write)\)\s*/, '')
    .replace(/\s+/g, ' ')
    .trim();

/** `// ...` and `/** ... *\/` comment text as lines, without their markers. */
function commentLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.replace(/^\s*(\/\/+|\/\*\*?|\*\/|\*)/, '').replace(/\*\/\s*$/, ''))
    .filter((l) => l.trim() !== '');
}

/** The file's comments: each `/* *\/` comment, and each run of consecutive `//` lines, as one block. */
function commentBlocks(text: string): string[] {
  const blocks = [...text.matchAll(/\/\*[\s\S]*?\*\//g)].map((m) => m[0]);
  let run: string[] = [];
  for (const line of text.split('\n')) {
    if (/^\s*\/\//.test(line)) run.push(line);
    else if (run.length) {
      blocks.push(run.join('\n'));
      run = [];
    }
  }
  if (run.length) blocks.push(run.join('\n'));
  return blocks;
}

/** Route -> descriptions, from comment lines that name routes (a path's query, `?type=csi`, leads its description). */
function namedInComments(lines: string[], into: Map<string, string[]>): void {
  for (let i = 0; i < lines.length; i++) {
    const m = NAMED.exec(lines[i] as string);
    if (!m) continue;
    const [, indent = '', methods = '', paths = '', rest = ''] = m;
    let text = rest;
    // Prose (`// GET /v1/x: ...`) may go on over the next lines; a table row (`//   GET ...`) is one line.
    if (indent.length <= 1) for (let j = i + 1; j < lines.length && !ANY_NAMED.test(lines[j] as string); j++) text += ` ${lines[j]}`;
    for (const path of paths.split(/,\s*| and | or /)) {
      const query = path.includes('?') ? `\`?${(path.split('?')[1] ?? '').replace(/:$/, '')}\`: ` : '';
      for (const method of methods.split('/')) {
        const said = into.get(key(method, path)) ?? [];
        const description = query + clean(text).replace(/[.;]$/, '');
        if (!said.includes(description)) said.push(description);
        into.set(key(method, path), said);
      }
    }
  }
}

const REGISTER = new Set(['get', 'put', 'post', 'delete', 'head', 'route']);

function typeMembers(node: ts.TypeNode | undefined, names: readonly string[], src: ts.SourceFile): string[] {
  if (!node || !ts.isTypeLiteralNode(node)) return [];
  const out: string[] = [];
  for (const m of node.members) {
    if (!ts.isPropertySignature(m) || !m.type) continue;
    const name = m.name.getText(src);
    const type = m.type.getText(src).replace(/\s+/g, ' ');
    // A loose record of strings says nothing a reader can use.
    if (type === 'Query' || /^Record<string, (string \| undefined|unknown)>$/.test(type)) continue;
    if (names.includes(name)) out.push(`${name === 'Querystring' ? 'query' : 'body'}: ${m.type.getText(src).replace(/\s+/g, ' ')}`);
  }
  return out;
}

interface Registration {
  path: string | RegExp;
  methods: string[];
  note: RouteNote;
}

/** Route modules' registrations: path (or a pattern for a computed one) -> what they declare. */
function registrations(file: string, text: string, out: Registration[]): void {
  const src = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const functions = new Map<string, ts.ArrowFunction | ts.FunctionExpression | ts.FunctionDeclaration>();
  const leading = (node: ts.Node): string => {
    let stmt: ts.Node = node;
    while (stmt.parent && !ts.isBlock(stmt.parent) && !ts.isSourceFile(stmt.parent)) stmt = stmt.parent;
    const ranges = ts.getLeadingCommentRanges(text, stmt.getFullStart()) ?? [];
    return clean(ranges.map((r) => commentLines(text.slice(r.pos, r.end)).join(' ')).join(' '));
  };
  const visit = (node: ts.Node): void => {
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer && (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))) {
      functions.set(node.name.text, node.initializer);
    }
    if (ts.isFunctionDeclaration(node) && node.name) functions.set(node.name.text, node);
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const name = ts.isPropertyAccessExpression(callee) ? callee.name.text : ts.isElementAccessExpression(callee) ? 'element' : '';
      const first = node.arguments[0];
      let path: string | RegExp | undefined;
      let handler: ts.Expression | undefined = node.arguments[node.arguments.length - 1];
      const methods: string[] = name !== 'element' && name !== 'route' ? [name.toUpperCase()] : [];
      if (first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first))) path = first.text;
      else if (first && ts.isTemplateExpression(first)) {
        const parts = [first.head.text, ...first.templateSpans.map((s) => s.literal.text)].map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
        path = new RegExp(`^${parts.join('[^/]+')}$`);
      } else if (name === 'route' && first && ts.isObjectLiteralExpression(first)) {
        for (const p of first.properties) {
          if (!ts.isPropertyAssignment(p)) continue;
          const pn = p.name.getText(src);
          if (pn === 'url' && ts.isStringLiteral(p.initializer)) path = p.initializer.text;
          if (pn === 'method' && ts.isStringLiteral(p.initializer)) methods.push(p.initializer.text);
          if (pn === 'handler') handler = p.initializer;
        }
      }
      if (path !== undefined && (REGISTER.has(name) || name === 'element') && (typeof path !== 'string' || path.startsWith('/'))) {
        let fn = handler && (ts.isArrowFunction(handler) || ts.isFunctionExpression(handler)) ? handler : undefined;
        let fnComment = '';
        if (handler && ts.isIdentifier(handler)) {
          fn = functions.get(handler.text) as ts.ArrowFunction | undefined;
          if (fn) fnComment = leading(fn);
        }
        const takes = typeMembers(node.typeArguments?.[0], ['Querystring', 'Body'], src);
        const declared = fn?.type ? fn.type.getText(src).replace(/^Promise<(.*)>$/s, '$1').replace(/\s+/g, ' ') : undefined;
        const ret = declared === 'FastifyReply' ? undefined : declared;
        const description = leading(node) || fnComment;
        out.push({ path, methods, note: { module: file, ...(description ? { description } : {}), ...(takes.length ? { takes: takes.join('; ') } : {}), ...(ret ? { returns: ret } : {}) } });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
}

/** What route-notes read of the route modules under some folders. */
export interface RouteSources {
  /** What the sources say of one route, as fastify registered it. */
  note(method: string, path: string): RouteNote;
  /** Each route module's header comment (its lines, without the comment markers), by its path from the root. */
  headers: ReadonlyMap<string, string>;
}

/** The notes of every route the modules under `dirs` (relative to `root`) register or name. */
export function routeNotes(root: string, dirs: readonly string[]): RouteSources {
  const named = new Map<string, string[]>();
  const regs: Registration[] = [];
  const texts = new Map<string, string>();
  const headers = new Map<string, string>();
  for (const dir of dirs) {
    for (const name of readdirSync(join(root, dir)).sort()) {
      if (!name.endsWith('.ts') || name.endsWith('.test.ts')) continue;
      const file = `${dir}/${name}`;
      const text = readFileSync(join(root, dir, name), 'utf8');
      const before = regs.length;
      registrations(file, text, regs);
      // Only a module that registers routes speaks for them (a cache's header may name the route it serves).
      if (regs.length === before) continue;
      texts.set(file, text);
      const blocks = commentBlocks(text);
      for (const block of blocks) namedInComments(commentLines(block), named);
      const head = /^\s*\/\//.test(text) ? text.split('\n').filter((_l, i, all) => all.slice(0, i + 1).every((x) => /^\s*\/\//.test(x))) : [];
      if (head.length) headers.set(file, head.map((l) => l.replace(/^\s*\/\/ ?/, '').trimEnd()).join('\n'));
    }
  }
  const note = (method: string, path: string): RouteNote => {
    const matches = regs.filter((r) => (typeof r.path === 'string' ? r.path === path : r.path.test(path)) && (r.methods.length === 0 || r.methods.includes(method)));
    const reg = matches[0]?.note ?? {};
    // A path given to a helper (`write('/v1/deployment/promote/:id', ...)`): its module is the one that names it.
    const module = reg.module ?? [...texts].find(([, t]) => t.includes(`'${path}'`) || t.includes(`\`${path}\``))?.[0];
    const description = named.get(key(method, path))?.join('; ') ?? reg.description;
    return { ...reg, ...(module ? { module } : {}), ...(description ? { description } : {}) };
  };
  return { note, headers };
}
