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
//   - grpcAside (the agent bundle only): gRPC (@grpc/grpc-js, nice-grpc and
//     what only they import: protobufjs, long, ...; ~690 KB, 14 % of the
//     bundle) is reached only through the dynamic imports of the CSI call
//     engine and the driver plugins' host, which an agent makes at its first
//     CSI plugin or driver plugin, never at its start. It goes to a side file
//     beside the bundle (agent-grpc-<hash>.cjs, GRPC_ASIDE_ENTRY), which those
//     imports require at first use: one copy of each package, as before.

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

/** The side file's entry: the two packages the agent bundle's dynamic imports ask for, by name. */
export const GRPC_ASIDE_ENTRY = "module.exports = { '@grpc/grpc-js': require('@grpc/grpc-js'), 'nice-grpc': require('nice-grpc') };\n";

/**
 * An esbuild plugin for the agent bundle: `import('@grpc/grpc-js')` and `import('nice-grpc')` become a
 * require of the side file `sideFile` (built from GRPC_ASIDE_ENTRY, in the bundle's directory) at the
 * import's run. `checkApplied()` fails a build in which either import was not seen.
 */
export function grpcAside(sideFile) {
  const seen = new Set();
  return {
    checkApplied() {
      for (const name of ['@grpc/grpc-js', 'nice-grpc']) {
        if (!seen.has(name)) throw new Error(`bundle trim grpcAside: no dynamic import of ${name} was seen; update scripts/bundle-trims.mjs`);
      }
    },
    plugin: {
      name: 'berth-grpc-aside',
      setup(build) {
        build.onResolve({ filter: /^(@grpc\/grpc-js|nice-grpc)$/ }, (args) => {
          if (args.kind !== 'dynamic-import') return undefined;
          seen.add(args.path);
          return { path: args.path, namespace: 'berth-grpc-aside' };
        });
        build.onResolve({ filter: /^\.\/agent-grpc-\w+\.cjs$/, namespace: 'berth-grpc-aside' }, (args) => ({ path: args.path, external: true }));
        build.onLoad({ filter: /.*/, namespace: 'berth-grpc-aside' }, (args) => ({
          contents: `module.exports = require(${JSON.stringify(`./${sideFile}`)})[${JSON.stringify(args.path)}];\n`,
          loader: 'js',
        }));
      },
    },
  };
}
