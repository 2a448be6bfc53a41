// Builds what `bin/berth.js` runs: dist/, compiled by esbuild from src/.
//
// One entry point (src/main.ts) split at every dynamic import(), so each
// command loads only its own chunks: `berth --version` reads a few small
// files, `berth plugin hostpath` the plugin's, `berth agent` the agent's.
// Berth's own code and its pure-JS dependencies are bundled (fewer files to
// find and read at start); packages that load native addons or files next to
// their own code stay in node_modules (EXTERNAL). The executor (executor*.mjs)
// and the mount helper, hand-written scripts the client starts as their own
// processes, are copied next to the chunks (dist/ is flat), where the code
// that starts them finds them (`./executor.mjs`, `./mount-helper.mjs` and the `./_tmpfs-mounter.mjs` it imports).
//
// Test kits that live in src/ (fakes, harnesses) are never reachable from
// src/main.ts, so they are not in dist/; test/packaging checks the tarball.
//
// The build goes to a fresh directory first and its files are then renamed
// into dist/ one by one (each rename replaces a file atomically), and only
// then are files of an older build removed: a Berth process started from
// dist/ meanwhile (the test suite runs `npm pack`, whose `prepare` builds,
// beside tests that spawn `berth`) never finds dist/ empty or a file half
// written. Chunk names carry a hash of their content, so the same sources
// give the same files.
//
// `berth agent` starts from a second build of the same sources: the whole
// CLI in one CommonJS file (agent-bundle-<hash>.cjs, named in
// warm-start.json), which src/warm-start/ compiles through a V8 code cache
// (Node 20 gives a code cache only to a vm.Script, never to an ES module).
//
// A few bundled packages are edited on their way in (scripts/dependency-patches.mjs):
// what they do is unchanged, only when (work a code cache cannot hold, built-ins
// loaded at first use instead of at the agent's start).
//
// The web UI (ui/, its own sources and build) goes to dist/ui, where the
// agent serves it at /ui.
//
// Usage: node scripts/build.mjs [--metafile]   (about a second)
import { isAscii } from 'node:buffer';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';
import { buildUi } from '../ui/build.mjs';
// CommonJS's wrapper, as src/warm-start/code-cache.ts compiles a bundle that does not start with it: one source for
// both, since they must be the same text (test/agent/warm-start.test.ts sees the agent fall back to its modules if not).
import { CJS_WRAPPER, CJS_WRAPPER_END } from '../src/warm-start/cjs-wrapper.mjs';
// Edits to a few bundled packages that change when work is done, not what is done (the agent's start).
import { dependencyPatches } from './dependency-patches.mjs';
// Text left out of the bundles where it cannot run (what the agent reads at each start).
import { agentCommandOnly, ASIDE_ENTRY, blankNoOpNames, packagesAside, zodLocalesEnglishOnly } from './bundle-trims.mjs';

const root = new URL('..', import.meta.url).pathname;
const out = `${root}dist`;

/** Loaded at run time from node_modules: native addons, or code that reads files beside itself. */
export const EXTERNAL = [
  'better-sqlite3', // native addon
  'node-pty', // native addon
  'etcd3', // reads its proto/*.proto next to itself at load
  'dockerode', // its ssh transport (ssh2) loads optional native addons (cpu-features, sshcrypto.node)
];

/**
 * Never loaded, so left out of dist/: fastify's default schema compilers (ajv, fast-json-stringify,
 * about a megabyte that every agent start parsed). Berth's listeners give fastify their own
 * (src/server/http/schema-compilers.ts), so fastify never requires these.
 */
const NEVER_LOADED = ['@fastify/ajv-compiler', '@fastify/fast-json-stringify-compiler'];

const next = `${root}dist.next-${process.pid}`;
rmSync(next, { recursive: true, force: true });
mkdirSync(next, { recursive: true });
const mainPatches = dependencyPatches();
const mainZod = zodLocalesEnglishOnly();
const result = await build({
  absWorkingDir: root,
  // The API's front worker threads load their own entry (src/server/http/api-workers/pool.ts finds it as ./api-worker.js).
  entryPoints: { main: 'src/main.ts', 'api-worker': 'src/server/http/api-workers/worker-main.ts', 'warm-start': 'src/agent-main.ts' },
  outdir: next,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external: [...EXTERNAL, ...NEVER_LOADED],
  // Class names are user-visible (BerthError sets `name` from them; the CLI
  // tells errors apart by it): never renamed to avoid a collision.
  keepNames: true,
  // Whitespace and comments out, expressions shortened (names kept): V8 parses every chunk an
  // agent loads in full at each start, and a smaller text parses sooner. Stack traces map back
  // to src/ through the linked source maps (node --enable-source-maps).
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  chunkNames: '[name]-[hash]',
  // Bundled CommonJS packages (grpc-js, fastify, ...) call require().
  banner: { js: "import { createRequire as __berthCreateRequire } from 'node:module'; const require = __berthCreateRequire(import.meta.url);" },
  metafile: process.argv.includes('--metafile'),
  plugins: [mainPatches.plugin, mainZod.plugin],
  logLevel: 'warning',
});
mainPatches.checkApplied();
mainZod.checkApplied();
// The agent's one-file CommonJS bundle (see above). Same sources and options, but: import.meta.url is the
// bundle's own file URL (it sits in dist/ beside the chunks, so paths found from it are the same), and
// import() of a package left in node_modules becomes require() (a vm.Script has no ES module loader).
const bundlePatches = dependencyPatches();
const bundleZod = zodLocalesEnglishOnly();
const bundleAgentOnly = agentCommandOnly();
// Packages beside the agent bundle, required by it at their first use (bundle-trims.mjs, packagesAside).
// What the agent bundle and its side file are both built as: one minified CommonJS file for Node 20, names kept.
const CJS_FILE = {
  absWorkingDir: root,
  outdir: next,
  outExtension: { '.js': '.cjs' },
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  keepNames: true,
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  // Licence comments go to a linked .LEGAL.txt: they are the only text that esbuild does not escape to ASCII.
  legalComments: 'linked',
  metafile: true,
  logLevel: 'warning',
};
const aside = await build({
  ...CJS_FILE,
  stdin: { contents: ASIDE_ENTRY, resolveDir: root, sourcefile: 'agent-aside.cjs', loader: 'js' },
  entryNames: 'agent-aside-[hash]',
});
const asideFile = Object.keys(aside.metafile.outputs).find((f) => f.endsWith('.cjs'))?.split('/').pop();
if (!asideFile || !Object.keys(aside.metafile.inputs).some((f) => f.includes('node_modules/@grpc/grpc-js/'))) throw new Error('build: the agent bundle\'s side file is missing or holds no @grpc/grpc-js');
const bundleAside = packagesAside(asideFile);
/** What a bundle loaded through src/warm-start's code cache is built with (the agent's and each helper's). */
const CACHED_BUNDLE = {
  entryNames: '[name]-[hash]',
  supported: { 'dynamic-import': false },
  external: [...EXTERNAL, ...NEVER_LOADED],
  // import.meta.resolve serves only the TypeScript sources (api-workers/pool.ts under tsx): never reached here.
  define: { 'import.meta.url': '__berthImportMetaUrl', 'import.meta.resolve': '__berthNoImportMetaResolve' },
  // The file is CommonJS's wrapper function around the code, as src/warm-start compiles it: the loader then hands
  // V8 the file's text as it is, not a 5 MB copy with the wrapper added (Node's own require would see a function
  // expression and run nothing; only src/warm-start loads this file).
  banner: { js: `${CJS_WRAPPER}var __berthImportMetaUrl = require('node:url').pathToFileURL(__filename).href;` },
  footer: { js: CJS_WRAPPER_END },
};
const agentBundle = await build({
  ...CJS_FILE,
  entryPoints: { 'agent-bundle': 'src/agent-bundle.ts' },
  ...CACHED_BUNDLE,
  plugins: [bundlePatches.plugin, bundleZod.plugin, bundleAgentOnly.plugin, bundleAside.plugin],
});
bundlePatches.checkApplied();
bundleZod.checkApplied();
bundleAgentOnly.checkApplied();
bundleAside.checkApplied();
const bundleFile = Object.keys(agentBundle.metafile.outputs).find((f) => f.endsWith('.cjs'));
if (!bundleFile) throw new Error('build: the agent bundle is missing');
// No-op names out of the agent's start and job path (bundle-trims.mjs); inputs made by a plugin (a namespace:) hold none.
const bundleInputs = Object.keys(agentBundle.metafile.inputs).filter((f) => existsSync(`${root}${f}`)).map((f) => [f, readFileSync(`${root}${f}`, 'latin1')]);
writeFileSync(`${root}${bundleFile}`, blankNoOpNames(readFileSync(`${root}${bundleFile}`, 'latin1'), bundleInputs).text, 'latin1');
// The loader reads an ASCII bundle as Latin-1 (a copy of the bytes), several times cheaper than decoding UTF-8;
// esbuild escapes strings, but a regular expression keeps its characters: write them as \uXXXX.
const bundleBytes = readFileSync(`${root}${bundleFile}`);
if (!isAscii(bundleBytes)) {
  const at = bundleBytes.findIndex((b) => b > 0x7f);
  throw new Error(`build: the agent bundle must be ASCII; found a byte 0x${bundleBytes[at].toString(16)} at offset ${at}: ...${bundleBytes.subarray(Math.max(0, at - 60), at + 20).toString('utf8')}... (write it as \\uXXXX in the source)`);
}
// Berth's own helpers, each in its own one-file bundle loaded through a code cache as the agent's is
// (src/warm-start/helper-main.ts): the executor (and log monitor), the mount helper, the API's front workers.
// Each starts as `<name>.cjs`, a copy of one small launcher whose file name says which helper it is; the ES
// modules stay beside them for a launcher that cannot load its bundle.
const helperZod = zodLocalesEnglishOnly();
const helperBundles = await build({
  ...CJS_FILE,
  entryPoints: {
    'executor-bundle': 'src/client/drivers/executor.mjs',
    'mount-helper-bundle': 'src/client/allocdir/mount-helper.mjs',
    'api-worker-bundle': 'src/server/http/api-workers/worker-main.ts',
  },
  ...CACHED_BUNDLE,
  plugins: [helperZod.plugin],
});
helperZod.checkApplied();
const helpers = {};
for (const f of Object.keys(helperBundles.metafile.outputs)) {
  const m = /([\w-]+)-bundle-\w+\.cjs$/.exec(f);
  if (m) helpers[m[1]] = f.split('/').pop();
}
if (Object.keys(helpers).length !== 3) throw new Error(`build: expected three helper bundles, got ${JSON.stringify(helpers)}`);
// Its source map shipped beside each copy, with no link in the text (the copies' names differ).
const launcher = await build({ ...CJS_FILE, entryPoints: { 'helper-start': 'src/warm-start/helper-main.ts' }, sourcemap: 'external', write: false });
const launcherText = launcher.outputFiles.find((f) => f.path.endsWith('.cjs'))?.text;
const launcherMap = launcher.outputFiles.find((f) => f.path.endsWith('.cjs.map'))?.text;
if (!launcherText || !launcherMap) throw new Error('build: the helpers\' launcher is missing');
for (const name of Object.keys(helpers)) {
  writeFileSync(`${next}/${name}.cjs`, launcherText);
  writeFileSync(`${next}/${name}.cjs.map`, launcherMap);
}
writeFileSync(`${next}/warm-start.json`, `${JSON.stringify({ bundle: bundleFile.split('/').pop(), helpers })}\n`);
// Scripts the agent starts as their own processes (plain ESM, no bundling): the executor (with the
// modules it imports) and the mount helper.
for (const f of readdirSync(`${root}src/client/drivers`)) if (f.endsWith('.mjs')) copyFileSync(`${root}src/client/drivers/${f}`, `${next}/${f}`);
for (const f of ['mount-helper.mjs', 'mount-table.mjs', '_tmpfs-mounter.mjs']) copyFileSync(`${root}src/client/allocdir/${f}`, `${next}/${f}`);
if (result.metafile) writeFileSync(`${next}/meta.json`, JSON.stringify(result.metafile));
await buildUi(`${next}/ui`);

// Move the new files in (folders file by file), then drop what the new build no longer has.
function moveInto(from, to) {
  mkdirSync(to, { recursive: true });
  const built = new Set(readdirSync(from));
  for (const name of built) {
    if (statSync(`${from}/${name}`).isDirectory()) {
      if (existsSync(`${to}/${name}`) && !statSync(`${to}/${name}`).isDirectory()) rmSync(`${to}/${name}`);
      moveInto(`${from}/${name}`, `${to}/${name}`);
    } else renameSync(`${from}/${name}`, `${to}/${name}`);
  }
  for (const name of readdirSync(to)) if (!built.has(name)) rmSync(`${to}/${name}`, { recursive: true, force: true });
}
moveInto(next, out);
rmSync(next, { recursive: true, force: true });
if (!existsSync(`${out}/main.js`)) throw new Error('build: dist/main.js is missing');
if (!existsSync(`${out}/ui/index.html`)) throw new Error('build: dist/ui/index.html is missing');
