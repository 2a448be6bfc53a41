// Node's CommonJS wrapper: the text Node's own loader puts around a module.
// One source for the two places that must agree on it to the letter:
// scripts/build.mjs writes the agent's bundle inside it, and code-cache.ts
// knows such a bundle by its opening (and puts the wrapper around a bundle
// that lacks it). Were they to differ, the agent would fall back to its ES
// modules (test/agent/warm-start.test.ts sees it). Plain ESM, so that the
// build script (plain Node) and the TypeScript sources import the same file;
// its types are in cjs-wrapper.d.mts.

/** The wrapper's opening: a function of CommonJS's five module variables. */
export const CJS_WRAPPER = '(function (exports, require, module, __filename, __dirname) {';

/** The wrapper's closing, after the module's text. */
export const CJS_WRAPPER_END = '\n})';
