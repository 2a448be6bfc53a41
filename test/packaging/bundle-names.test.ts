// The agent bundle's no-op names blanked (scripts/bundle-trims.mjs, blankNoOpNames): every function and class
// keeps the name it has in the sources, including those esbuild renamed where two modules' names collided.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runInNewContext } from 'node:vm';
import { build } from 'esbuild';
import { blankNoOpNames as blank } from '../../scripts/bundle-trims.mjs';

// Two modules with the same names (esbuild renames one of each pair in the bundle), in the forms keepNames names.
const A = `
export function load() { return 1; }
export const helper = () => 2;
export class Widget {}
export const make = function () { return 3; };
export function outer() { const inner = () => 4; return inner; }
`;
const B = `
export function load() { return 5; }
export const helper = () => 6;
export class Widget { static kind = 'b'; }
`;
const ENTRY = `
import * as a from './a.js';
import * as b from './b.js';
const names = {};
for (const [k, v] of Object.entries(a)) names['a.' + k] = v.name;
for (const [k, v] of Object.entries(b)) names['b.' + k] = v.name;
names['a.outer()'] = a.outer().name;
globalThis.names = names;
`;

async function bundle(): Promise<string> {
  const files: Record<string, string> = { './a.js': A, './b.js': B };
  const out = await build({
    stdin: { contents: ENTRY, resolveDir: '/', sourcefile: 'entry.js' },
    bundle: true,
    write: false,
    format: 'cjs',
    keepNames: true,
    minifyWhitespace: true,
    minifySyntax: true,
    logLevel: 'silent',
    plugins: [{ name: 'mem', setup(b) { b.onResolve({ filter: /^\.\/[ab]\.js$/ }, (args) => ({ path: args.path, namespace: 'mem' })); b.onLoad({ filter: /.*/, namespace: 'mem' }, (args) => ({ contents: files[args.path], loader: 'js' })); } }],
  });
  return out.outputFiles[0]!.text;
}

const namesOf = (code: string): Record<string, string> => {
  const ctx: { names?: Record<string, string> } = {};
  runInNewContext(code, ctx);
  // Through JSON: the object is of the other context, with its own Object.prototype.
  return JSON.parse(JSON.stringify(ctx.names ?? {})) as Record<string, string>;
};

describe('the agent bundle keeps the names of the sources', () => {
  it('every function and class has its source name once the no-op names are blanked, renamed ones included, at the same length', async () => {
    const text = await bundle();
    const { text: blanked, blanked: count } = blank(text, [['a.js', A], ['b.js', B]]);
    assert.ok(count > 0, 'some no-op names were blanked');
    assert.equal(blanked.length, text.length);
    assert.ok(/__name\(\w+,"\w+"\)/.test(blanked), 'the names of renamed bindings stay');
    assert.deepEqual(namesOf(blanked), namesOf(text));
    assert.deepEqual(namesOf(blanked), {
      'a.load': 'load', 'a.helper': 'helper', 'a.Widget': 'Widget', 'a.make': 'make', 'a.outer': 'outer', 'a.outer()': 'inner',
      'b.load': 'load', 'b.helper': 'helper', 'b.Widget': 'Widget',
    });
  });

  it('fails the build when an input holds the text it takes for esbuild\'s calls, or when it finds nothing to blank', () => {
    assert.throws(() => blank('__name(x,"x")', [['lib.js', 'const s = "__name(";']]), /lib\.js holds the text "__name\("/);
    assert.throws(() => blank('function f(){}', []), /no __name\(X,"X"\) call/);
  });
});
