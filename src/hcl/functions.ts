// The function library of Berth's job language: what Nomad's jobspec2
// exposes (functions.go), plus regex, regexall, templatefile and a few of
// cty's newer helpers. File functions read relative to the job file's
// directory and only when the caller allows the file system (the CLI does,
// as Nomad's does; the agent's API does not).

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { FunctionError, evaluate, EvalFailure, type EvalContext, type HclFunction } from './evaluate.js';
import { fn, obj, str, strFn } from './_function-args.js';
import { CORE_FUNCTIONS } from './_functions-core.js';
import { EXTRA_FUNCTIONS } from './_functions-extra.js';
import { parseTemplate } from './_parser.js';
import { type Value } from './values.js';

export interface FunctionOptions {
  /** Relative paths given to file functions start here. */
  baseDir: string;
  /** Whether file(), fileset(), templatefile()... may read the file system. */
  allowFS: boolean;
}

const FS_FUNCTIONS = ['abspath', 'basename', 'dirname', 'file', 'filebase64', 'fileexists', 'fileset', 'pathexpand', 'templatefile'];

/** The names of every function, sorted (for the README and error messages). */
export const FUNCTION_NAMES: readonly string[] = [...new Set([...Object.keys(CORE_FUNCTIONS), ...Object.keys(EXTRA_FUNCTIONS), ...FS_FUNCTIONS])].sort();

// fileset's glob: * and ? within a name, ** across directories, [...] and {a,b}.
function globRegExp(pattern: string): RegExp {
  let out = '';
  for (let k = 0; k < pattern.length; k++) {
    const c = pattern[k] as string;
    if (c === '*' && pattern[k + 1] === '*') {
      out += pattern[k + 2] === '/' ? '(?:.*/)?' : '.*';
      k += pattern[k + 2] === '/' ? 2 : 1;
    } else if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '[') {
      const end = pattern.indexOf(']', k);
      out += end < 0 ? '\\[' : `[${pattern.slice(k + 1, end).replace(/^!/, '^')}]`;
      if (end >= 0) k = end;
    } else if (c === '{') {
      const end = pattern.indexOf('}', k);
      out += end < 0 ? '\\{' : `(?:${pattern.slice(k + 1, end).split(',').map(escapeRe).join('|')})`;
      if (end >= 0) k = end;
    } else out += escapeRe(c);
  }
  return new RegExp(`^${out}$`);
}
const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function walk(dir: string, limit: { n: number }): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (--limit.n < 0) throw new FunctionError('more than 10000 files under the path');
    const full = join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(full, limit));
    else if (e.isFile()) out.push(full);
  }
  return out;
}

function fileFunctions(opts: FunctionOptions, all: () => Readonly<Record<string, HclFunction>>): Record<string, HclFunction> {
  const path = (p: string): string => (isAbsolute(p) ? p : resolve(opts.baseDir, p));
  const read = (p: string, k: number): Buffer => {
    try {
      return readFileSync(path(p));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new FunctionError(code === 'ENOENT' ? `no file exists at ${JSON.stringify(p)}` : `cannot read ${JSON.stringify(p)} (${code ?? String(err)})`, k);
    }
  };
  const fns: Record<string, HclFunction> = {
    abspath: strFn((p) => resolve(opts.baseDir, p)),
    basename: strFn((p) => basename(p)),
    dirname: strFn((p) => dirname(p)),
    pathexpand: strFn((p) => (p === '~' || p.startsWith('~/') ? join(homedir(), p.slice(1)) : p)),
    file: fn(['path'], (a) => read(str(a, 0), 0).toString('utf8')),
    filebase64: fn(['path'], (a) => read(str(a, 0), 0).toString('base64')),
    fileexists: fn(['path'], (a) => {
      try {
        const st = statSync(path(str(a, 0)));
        if (st.isDirectory()) throw new FunctionError(`${JSON.stringify(str(a, 0))} is a directory, not a file`, 0);
        return true;
      } catch (err) {
        if (err instanceof FunctionError) throw err;
        return false;
      }
    }),
    fileset: fn(['path', 'pattern'], (a) => {
      const root = path(str(a, 0));
      const re = globRegExp(str(a, 1));
      let files: string[];
      try {
        files = walk(root, { n: 10_000 });
      } catch (err) {
        if (err instanceof FunctionError) throw err;
        return [];
      }
      return files
        .map((f) => relative(root, f).split(sep).join('/'))
        .filter((f) => re.test(f))
        .sort();
    }),
    templatefile: fn(['path', 'vars'], (a, call) => {
      const file = str(a, 0);
      const vars = obj(a, 1);
      const parsed = parseTemplate(path(file), read(file, 0).toString('utf8'));
      if (!parsed.expr) throw new EvalFailure(parsed.diagnostics[0] as NonNullable<(typeof parsed.diagnostics)[0]>);
      const functions = { ...all() };
      delete functions['templatefile'];
      const ctx: EvalContext = { variables: { ...vars } as Record<string, Value>, functions };
      try {
        return evaluate(parsed.expr, ctx);
      } catch (err) {
        if (err instanceof EvalFailure) throw err;
        throw new FunctionError(`${String(err)} (at ${call.range.start.line})`);
      }
    }),
  };
  if (opts.allowFS) return fns;
  return Object.fromEntries(
    Object.entries(fns).map(([name, f]) => [
      name,
      {
        ...f,
        impl: () => {
          throw new FunctionError('file functions are turned off here (berth job run and job validate allow them, relative to the job file)');
        },
      },
    ]),
  );
}

const tables = new Map<string, Readonly<Record<string, HclFunction>>>();

/** The function table for files in `opts.baseDir` (built once per directory and FS setting). The file functions read the disk when called. */
export function jobFunctions(opts: FunctionOptions): Readonly<Record<string, HclFunction>> {
  const key = `${opts.allowFS ? 1 : 0}:${opts.baseDir}`;
  const known = tables.get(key);
  if (known) return known;
  const table: Record<string, HclFunction> = { ...CORE_FUNCTIONS, ...EXTRA_FUNCTIONS };
  Object.assign(table, fileFunctions(opts, () => table));
  if (tables.size > 64) tables.clear();
  tables.set(key, table);
  return table;
}
