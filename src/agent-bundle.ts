// The entry of dist/agent-bundle-<hash>.cjs: the whole CLI in one CommonJS
// file, which `berth agent` compiles through a V8 code cache
// (src/warm-start/). CommonJS because Node 20 can hand a code cache only to a
// vm.Script, not to an ES module.
export { runMain } from './main-run.js';
