// @ts-check
// A lint rule, `berth/no-cycle`: no import circles, type-only imports included.
//
// eslint-plugin-import's `import/no-cycle` skips every type-only edge
// (`import type`, `import { type X }`, `export type ... from`: its no-cycle.js
// returns early for them and its SCC builder drops them from the graph), and it
// has no option to count them. A circle through types still ties two files
// together: neither can be read, moved or split without the other. This rule
// builds the import graph once per lint run with TypeScript's own reading of
// imports (ts.preProcessFile: static imports and re-exports, type-only or not,
// `import()` and `import('x').T` types) and its module resolution (tsconfig's
// NodeNext), splits it into strongly connected components, and reports every
// import of a file that sits in its importer's component, naming one circle.
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** @typedef {{ mtimeMs: number, imports: { spec: string, line: number, target: string }[] }} Node */

/** @type {Map<string, ts.CompilerOptions>} */
const optionsByConfig = new Map();

/** The compiler options of the tsconfig.json nearest `file` (NodeNext when none). */
function compilerOptions(file) {
  const config = ts.findConfigFile(path.dirname(file), ts.sys.fileExists) ?? '';
  let options = optionsByConfig.get(config);
  if (!options) {
    options = { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, allowJs: true };
    if (config) {
      const read = ts.readConfigFile(config, ts.sys.readFile);
      options = { ...ts.parseJsonConfigFileContent(read.config ?? {}, ts.sys, path.dirname(config)).options, allowJs: true };
    }
    optionsByConfig.set(config, options);
  }
  return options;
}

/** Cached per file and modification time, so an editor's long-lived lint process stays true. */
/** @type {Map<string, Node>} */
const nodes = new Map();

/** The project files `file` imports (node_modules and unresolved specifiers left out). */
function readNode(file) {
  let mtimeMs = 0;
  try {
    mtimeMs = statSync(file).mtimeMs;
  } catch {
    return undefined;
  }
  const cached = nodes.get(file);
  if (cached && cached.mtimeMs === mtimeMs) return cached;
  const text = readFileSync(file, 'utf8');
  const options = compilerOptions(file);
  const info = ts.preProcessFile(text, true, true);
  const lineStarts = ts.computeLineStarts(text);
  /** @type {Node} */
  const node = { mtimeMs, imports: [] };
  for (const ref of info.importedFiles) {
    const resolved = ts.resolveModuleName(ref.fileName, file, options, ts.sys).resolvedModule;
    if (!resolved || resolved.isExternalLibraryImport || resolved.resolvedFileName.includes(`${path.sep}node_modules${path.sep}`)) continue;
    const line = ts.computeLineAndCharacterOfPosition(lineStarts, ref.pos).line + 1;
    node.imports.push({ spec: ref.fileName, line, target: path.resolve(resolved.resolvedFileName) });
  }
  nodes.set(file, node);
  return node;
}

/**
 * The strongly connected components of the graph reachable from `roots`
 * (Tarjan's, iterative): file -> component id; components of one file that
 * does not import itself are left out.
 */
export function cycleComponents(roots) {
  /** @type {Map<string, number>} */ const index = new Map();
  /** @type {Map<string, number>} */ const low = new Map();
  /** @type {Set<string>} */ const onStack = new Set();
  /** @type {string[]} */ const stack = [];
  /** @type {Map<string, number>} */ const component = new Map();
  let next = 0;
  let components = 0;
  const edges = (f) => readNode(f)?.imports.map((i) => i.target) ?? [];
  for (const root of roots) {
    if (index.has(root)) continue;
    const visit = (/** @type {string} */ f) => {
      index.set(f, next);
      low.set(f, next++);
      stack.push(f);
      onStack.add(f);
      return { file: f, out: edges(f), i: 0 };
    };
    /** @type {{ file: string, out: string[], i: number }[]} */
    const work = [visit(root)];
    while (work.length > 0) {
      const top = work[work.length - 1];
      if (top.i < top.out.length) {
        const to = top.out[top.i++];
        if (!index.has(to)) {
          work.push(visit(to));
        } else if (onStack.has(to)) {
          low.set(top.file, Math.min(low.get(top.file) ?? 0, index.get(to) ?? 0));
        }
        continue;
      }
      work.pop();
      if (work.length > 0) {
        const parent = work[work.length - 1].file;
        low.set(parent, Math.min(low.get(parent) ?? 0, low.get(top.file) ?? 0));
      }
      if (low.get(top.file) === index.get(top.file)) {
        /** @type {string[]} */ const members = [];
        let f;
        do {
          f = /** @type {string} */ (stack.pop());
          onStack.delete(f);
          members.push(f);
        } while (f !== top.file);
        const selfLoop = members.length === 1 && edges(top.file).includes(top.file);
        if (members.length > 1 || selfLoop) {
          for (const m of members) component.set(m, components);
          components++;
        }
      }
    }
  }
  return component;
}

/** A shortest import path from `from` back to `to` inside one component (breadth first). */
export function pathBack(from, to, component) {
  const want = component.get(from);
  /** @type {Map<string, string>} */ const prev = new Map([[from, '']]);
  const queue = [from];
  while (queue.length > 0) {
    const f = /** @type {string} */ (queue.shift());
    for (const { target } of readNode(f)?.imports ?? []) {
      if (component.get(target) !== want || prev.has(target)) continue;
      prev.set(target, f);
      if (target === to) {
        const route = [to];
        for (let at = f; at; at = prev.get(at) ?? '') route.unshift(at);
        return route;
      }
      queue.push(target);
    }
  }
  return [from, to];
}

/** @type {import('eslint').Rule.RuleModule} */
export const noCycle = {
  meta: {
    type: 'problem',
    docs: { description: 'No import circles, type-only imports and import() included (scripts/lint-no-cycle.mjs).' },
    schema: [],
  },
  create(context) {
    const file = path.resolve(context.physicalFilename);
    return {
      'Program:exit'() {
        const node = readNode(file);
        if (!node) return;
        const component = cycleComponents([file]);
        if (!component.has(file)) return;
        const root = context.cwd;
        for (const imp of node.imports) {
          if (component.get(imp.target) !== component.get(file)) continue;
          const route = [file, ...pathBack(imp.target, file, component)].map((f) => path.relative(root, f));
          context.report({
            loc: { line: imp.line, column: 0 },
            message: `Import circle: ${route.join(' -> ')}. Move what both sides need to where it belongs (a types file, the lower module).`,
          });
        }
      },
    };
  },
};

export default { rules: { 'no-cycle': noCycle } };

// `node scripts/lint-no-cycle.mjs [files or directories...]` lists every circle reachable from them (default: src/).
if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const missing = args.filter((a) => !ts.sys.fileExists(a) && !ts.sys.directoryExists(a));
  if (missing.length > 0) {
    console.error(`lint-no-cycle: no such file or directory: ${missing.join(', ')}`);
    process.exit(2);
  }
  // A directory stands for the TypeScript and module files below it.
  const files = (args.length > 0 ? args : ['src']).flatMap((a) => (ts.sys.directoryExists(a) ? ts.sys.readDirectory(a, ['.ts', '.mts', '.mjs']) : [a]));
  const roots = files.map((f) => path.resolve(f));
  const component = cycleComponents(roots);
  /** @type {Map<number, string[]>} */ const groups = new Map();
  for (const [f, c] of component) groups.set(c, [...(groups.get(c) ?? []), path.relative(process.cwd(), f)]);
  for (const members of groups.values()) console.log(`circle of ${members.length}:\n  ${members.sort().join('\n  ')}`);
  process.exitCode = groups.size > 0 ? 1 : 0;
}
