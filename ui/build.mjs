// Builds the web UI (ui/src) into a folder of static files: index.html, one
// JS and one CSS bundle with content-hashed names under assets/ (and the chunks
// the pages load on demand), and a .gz of
// each beside it (the agent sends those to browsers that accept gzip).
// esbuild, the bundler that builds Berth itself, does it in well under a
// second; scripts/build.mjs calls buildUi() so `npm ci` (prepare) builds the
// UI with the rest. The UI imports nothing from src/: it is a client of the
// public HTTP API.
//
// Usage: node ui/build.mjs [outDir]   (default ui/dist)
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const here = new URL('.', import.meta.url).pathname;

/**
 * Builds the UI into `outDir` (emptied first). Resolves with the files
 * written, relative to it. `opts.onMetafile` receives esbuild's metafile
 * (what each input adds to each output: bench/ui.bench.ts reports the
 * shares).
 */
export async function buildUi(outDir, opts = {}) {
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(path.join(outDir, 'assets'), { recursive: true });
  const result = await build({
    absWorkingDir: here,
    entryPoints: { app: 'src/main.tsx' },
    outdir: path.join(outDir, 'assets'),
    entryNames: '[name]-[hash]',
    // Split: a page's heavy library loaded with import() (the exec page's terminal) is a chunk of its own, fetched when used.
    splitting: true,
    chunkNames: 'chunk-[name]-[hash]',
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: false,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  opts.onMetafile?.(result.metafile);
  const rel = (f) => path.relative(outDir, path.resolve(here, f));
  const outputs = Object.keys(result.metafile.outputs).map(rel);
  const js = Object.entries(result.metafile.outputs).filter(([, o]) => o.entryPoint).map(([f]) => rel(f)).find((f) => f.endsWith('.js'));
  const css = outputs.find((f) => f.endsWith('.css'));
  if (!js || !css) throw new Error(`ui build: expected one JS and one CSS bundle, got ${outputs.join(', ')}`);
  const html = readFileSync(path.join(here, 'index.html'), 'utf8')
    .replace('<!--css-->', `<link rel="stylesheet" href="/ui/${css}">`)
    .replace('<!--js-->', `<script type="module" src="/ui/${js}"></script>`);
  writeFileSync(path.join(outDir, 'index.html'), html);
  const files = ['index.html', ...outputs];
  for (const f of files) writeFileSync(path.join(outDir, `${f}.gz`), gzipSync(readFileSync(path.join(outDir, f)), { level: 9 }));
  return [...files, ...files.map((f) => `${f}.gz`)];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = path.resolve(process.argv[2] ?? path.join(here, 'dist'));
  const files = await buildUi(out);
  console.log(`ui: built ${files.length} files into ${out}`);
}
