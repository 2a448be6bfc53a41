// Code the build leaves out of what an agent reads at each start (issue 40):
// V8 is handed the agent bundle's whole text (dist/agent-bundle-<hash>.cjs,
// src/warm-start/) at every `berth agent`, and reading, copying and touching
// it costs CPU in proportion to its size (~12 ms a megabyte on the reference
// machine), whether or not a part of it ever runs. Each trim below leaves
// out text that cannot run in the build it is applied to, and fails the build
// when what it expects to trim is no longer there (a stale trim), as
// scripts/dependency-patches.mjs does for its edits.
//
//   - zodLocalesEnglishOnly: zod's `z.locales` namespace bundles its ~60
//     locales (~300 KB); Berth never reads it (only zod's default, English,
//     which zod's schemas import directly). `z.locales` keeps `en` alone.
//   - agentCommandOnly (the agent bundle only): bin/berth.js runs the bundle
//     for `berth agent` alone, every other command from the ES modules; the
//     bundle's table of commands (src/cli/program.ts) keeps them listed, but
//     their modules (~300 KB: the other commands, the hostpath CSI plugin)
//     are left out: importing one from the bundle rejects, saying so.
//   - packagesAside (the agent bundle only): packages an agent reaches only
//     through dynamic imports its start never makes (PACKAGES_ASIDE: gRPC,
//     @grpc/grpc-js and nice-grpc, with what only they import, protobufjs,
//     long, ..., at the first CSI or driver plugin; @fastify/static, with
//     glob, mime and send, at the first request under /ui; the artifact
//     unpackers' libraries, node-tar, yauzl, unbzip2-stream, xz-decompress and
//     fzstd, at the first archive an artifact brings; ~1.1 MB, 22 % of the
//     bundle) go to a side file beside the bundle (agent-aside-<hash>.cjs,
//     ASIDE_ENTRY), which those imports require at first use; each package is
//     evaluated at its own first use, and is one copy, as before.

import path from 'node:path';

const ZOD_LOCALES_IMPORTERS = /[\\/]node_modules[\\/]zod[\\/]v4[\\/](classic[\\/]external|core[\\/]index)\.js$/;

/** An esbuild plugin: zod's locales namespace holds English alone. `checkApplied()` fails a build in which it trimmed nothing. */
export function zodLocalesEnglishOnly() {
  let trimmed = 0;
  return {
    checkApplied() {
      if (!trimmed) throw new Error('bundle trim zodLocalesEnglishOnly: no zod locales import was seen; zod changed: update scripts/bundle-trims.mjs');
    },
    plugin: {
      name: 'berth-zod-locales-english-only',
      setup(build) {
        build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) => {
          if (!ZOD_LOCALES_IMPORTERS.test(args.importer)) return undefined;
          trimmed++;
          return { path: path.join(path.dirname(args.importer), '..', 'locales', 'index.js'), namespace: 'berth-zod-locales' };
        });
        build.onLoad({ filter: /.*/, namespace: 'berth-zod-locales' }, (args) => ({
          contents: 'export { default as en } from "./en.js";\n',
          resolveDir: path.dirname(args.path),
          loader: 'js',
        }));
      },
    },
  };
}

/**
 * An esbuild plugin for the agent bundle: the dynamic imports of src/cli/program.ts other than the agent
 * command's resolve to a module that throws. `checkApplied()` fails a build that left none out.
 */
export function agentCommandOnly() {
  const left = [];
  return {
    left,
    checkApplied() {
      if (!left.length) throw new Error('bundle trim agentCommandOnly: src/cli/program.ts imported no command module; update scripts/bundle-trims.mjs');
    },
    plugin: {
      name: 'berth-agent-command-only',
      setup(build) {
        build.onResolve({ filter: /^\.\/[\w-]+\.js$/ }, (args) => {
          if (args.kind !== 'dynamic-import' || !/[\\/]src[\\/]cli[\\/]program\.ts$/.test(args.importer) || args.path === './agent-command.js') return undefined;
          left.push(args.path);
          return { path: args.path, namespace: 'berth-not-in-agent-bundle' };
        });
        build.onLoad({ filter: /.*/, namespace: 'berth-not-in-agent-bundle' }, (args) => ({
          contents: `throw new Error(${JSON.stringify(`src/cli/${args.path.slice(2, -3)}.ts is not in the agent bundle, which runs \`berth agent\` alone (bin/berth.js runs other commands from dist/main.js)`)});\n`,
          loader: 'js',
        }));
      },
    },
  };
}

/**
 * The packages the agent bundle leaves to its side file: each is reached only through a dynamic import
 * that an agent's start never makes (gRPC: the first CSI or driver plugin; @fastify/static: the first
 * request under /ui; the unpackers' libraries, src/client/artifact/decompress.ts: the first archive).
 */
export const PACKAGES_ASIDE = ['@grpc/grpc-js', 'nice-grpc', '@fastify/static', 'tar', 'yauzl', 'unbzip2-stream', 'xz-decompress', 'fzstd'];

/** The side file's entry: each package of PACKAGES_ASIDE by name, evaluated at its first use. */
export const ASIDE_ENTRY = `module.exports = {\n${PACKAGES_ASIDE.map((p) => `  get ${JSON.stringify(p)}() { return require(${JSON.stringify(p)}); },\n`).join('')}};\n`;

/**
 * An esbuild plugin for the agent bundle: a dynamic import of a package of PACKAGES_ASIDE becomes a
 * require of the side file `sideFile` (built from ASIDE_ENTRY, in the bundle's directory) when the
 * import runs. `checkApplied()` fails a build in which any of those imports was not seen.
 */
export function packagesAside(sideFile) {
  const seen = new Set();
  const names = new RegExp(`^(${PACKAGES_ASIDE.map((p) => p.replace(/[/@.-]/g, (c) => `\\${c}`)).join('|')})$`);
  return {
    checkApplied() {
      for (const name of PACKAGES_ASIDE) {
        if (!seen.has(name)) throw new Error(`bundle trim packagesAside: no dynamic import of ${name} was seen; update scripts/bundle-trims.mjs`);
      }
    },
    plugin: {
      name: 'berth-packages-aside',
      setup(build) {
        build.onResolve({ filter: names }, (args) => {
          if (args.kind !== 'dynamic-import') return undefined;
          seen.add(args.path);
          return { path: args.path, namespace: 'berth-packages-aside' };
        });
        build.onResolve({ filter: /^\.\/agent-aside-\w+\.cjs$/, namespace: 'berth-packages-aside' }, (args) => ({ path: args.path, external: true }));
        build.onLoad({ filter: /.*/, namespace: 'berth-packages-aside' }, (args) => ({
          contents: `module.exports = require(${JSON.stringify(`./${sideFile}`)})[${JSON.stringify(args.path)}];\n`,
          loader: 'js',
        }));
      },
    },
  };
}

/**
 * The agent bundle's no-op `__name(X,"X")` calls, each blanked to `X` and spaces (same length: the source map's
 * columns stay right). esbuild's keepNames (needed: it renames a binding that collides, `loaded` -> `loaded4`,
 * and the name would change with it) also names every function and class whose binding kept its name, at
 * run time: a defineProperty of `name` on each, at every module init and in inner functions at every call
 * (some in the job path), for a name the function already has (a declaration's, or the one inferred from
 * `const X = () => ...`). `text` is the bundle, `inputs` the texts of the files built into it: a `__name(` in
 * the output is a call esbuild wrote only if no input holds that text, so the build fails otherwise, and
 * when it finds none to blank (esbuild changed). Returns the text and how many calls were blanked.
 */
export function blankNoOpNames(text, inputs) {
  for (const [file, source] of inputs) if (source.includes('__name(')) throw new Error(`bundle trim blankNoOpNames: ${file} holds the text "__name(", which the trim takes for esbuild's calls; update scripts/bundle-trims.mjs`);
  let blanked = 0;
  const out = text.replace(/__name\(([A-Za-z_$][\w$]*),"([\w$]*)"\)/g, (call, binding, name) => {
    if (binding !== name) return call;
    blanked += 1;
    return binding.padEnd(call.length, ' ');
  });
  if (!blanked) throw new Error('bundle trim blankNoOpNames: no __name(X,"X") call in the agent bundle; update scripts/bundle-trims.mjs');
  return { text: out, blanked };
}
