// @ts-check
import js from '@eslint/js';
import boundaries from 'eslint-plugin-boundaries';
import importPlugin from 'eslint-plugin-import';
import berth from './scripts/lint-no-cycle.mjs';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// ---------------------------------------------------------------------------
// Boundaries (STYLE.md "The house"), checked by eslint-plugin-boundaries on the
// resolved file of every import/export (so `src/server/plugins` is never
// mistaken for `src/csi-plugins`), and import circles by our own
// `berth/no-cycle` (scripts/lint-no-cycle.mjs: eslint-plugin-import's
// no-cycle skips type-only imports, and a circle through types is a circle).
// Both run in `npm run lint`, hence in `npm test`; test/layering.test.ts
// plants violations and shows they fail.
//
// Elements:
//   layer  src/<layer>/          a top folder of src: lib, csi, structs, client, ...
//   part   src/<layer>/<part>/   a subsystem folder inside a layer (client/volumes)
//   gen    src/gen/              generated protobuf code
//   main   src/main.ts           the entry point (files directly in src/)
//   test-support test/support/   the test kit (fakes, harnesses) for tests and bench
//   test, bench, scripts         everything else under those folders
//
// Doors. A folder is entered from outside only through its `index.ts`:
//   - another layer (and main) enters a layer only through src/<layer>/index.ts;
//     a part's index.ts is NOT a door for another layer, only for its own layer
//     (client/volumes/index.ts serves client/allocrunner and client/client.ts,
//     never src/agent);
//   - inside a layer, files enter a sibling part through its index.ts;
//   - folders below a part (src/<layer>/<part>/<sub>/) have no door of their own:
//     they are private to their part;
//   - test/, bench/ and test/support exercise subsystems one at a time, so they
//     may enter any layer's or part's index.ts, never a file behind it.
//   - test/support holds the test kits (fakes, harnesses). A kit is one file
//     (test/support/server-cluster.ts) or a folder entered through its index.ts
//     (test/support/csi-fake/index.ts); `_name.ts` files are private to their
//     folder. Tests beside the code, test/ and bench/ use kits only so; bench/
//     never imports test/ files, and production code never imports test/**.
// Layers point one way (lib <- csi <- client, server <- agent <- cli): api (the
// public API's wire shapes, Nomad's, as schemas; the server answers in them, the
// CLI and the web UI read them) sits on nothing, hcl (the
// HCL language engine: parse and evaluate) sits on lib alone, structs
// (types client and server share) sits on csi and api (its Nomad JSON
// converters, shared by the server's answers and the CLI's requests, write
// the api's shapes: src/structs/nomad-table.ts says why), spec-files (job and volume
// files, as Nomad's jobspec) on structs and hcl, csi-plugins (the plugins Berth ships)
// on csi, plugins (external plugins over Nomad's go-plugin protocols) on
// structs; the server reads job files too (Nomad's /v1/jobs/parse). Each layer
// may import only the layers listed for it:
const LAYERS = {
  lib: [],
  api: [],
  hcl: ['lib'],
  csi: ['lib'],
  structs: ['lib', 'api', 'csi'],
  'spec-files': ['lib', 'structs', 'hcl'],
  'csi-plugins': ['lib', 'csi'],
  plugins: ['lib', 'structs'],
  client: ['lib', 'api', 'csi', 'structs', 'plugins'],
  server: ['lib', 'api', 'csi', 'structs', 'spec-files', 'plugins'],
  agent: ['lib', 'api', 'hcl', 'csi', 'structs', 'spec-files', 'csi-plugins', 'plugins', 'client', 'server'],
  cli: ['lib', 'api', 'hcl', 'csi', 'structs', 'spec-files', 'csi-plugins', 'plugins', 'client', 'server', 'agent'],
  // How `berth agent` loads its code (a bundle through a V8 code cache): Node's built-ins only.
  'warm-start': [],
};
// Generated protobuf code is reached only by csi, by the plugins layer and by
// plugin servers, which must speak protobuf (and by the CSI conformance tests and benchmarks).
const GEN_USERS = ['csi', 'csi-plugins', 'plugins'];
// Production code (src/**, tests beside it excepted) never imports test/**.
// ---------------------------------------------------------------------------

const PROD = ['layer', 'part', 'main'];
const door = (layer) => ({ type: 'layer', captured: { layer }, fileInternalPath: 'index.ts' });
const DOORS = [
  { element: { types: { anyOf: ['layer', 'part'] }, fileInternalPath: 'index.ts' } },
  { element: { type: 'test-support', fileInternalPath: ['[a-z]*.ts', '*/index.ts'] } },
];

const boundaryElements = [
  { type: 'gen', pattern: 'src/gen', partialMatch: false },
  { type: 'part', pattern: 'src/*/*', partialMatch: false, capture: ['layer', 'part'] },
  { type: 'layer', pattern: 'src/*', partialMatch: false, capture: ['layer'] },
  { type: 'main', pattern: 'src', partialMatch: false },
  { type: 'test-support', pattern: 'test/support', partialMatch: false },
  { type: 'test', pattern: 'test', partialMatch: false },
  { type: 'bench', pattern: 'bench', partialMatch: false },
  { type: 'scripts', pattern: 'scripts', partialMatch: false },
  // The web UI: its own sources and build, a client of the public HTTP API only.
  { type: 'ui', pattern: 'ui', partialMatch: false },
];

const layerPolicies = Object.entries(LAYERS).map(([layer, below]) => ({
  from: { element: { types: { anyOf: ['layer', 'part'] }, captured: { layer } } },
  allow: {
    to: [
      // A sibling part of the same layer, through its door. A part never imports
      // its layer's top files: they compose the parts (no folder cycles).
      { element: { type: 'part', captured: { layer }, fileInternalPath: 'index.ts' } },
      // A lower layer, through its door.
      ...below.map((l) => ({ element: door(l) })),
      ...(GEN_USERS.includes(layer) ? [{ element: { type: 'gen' } }] : []),
    ],
  },
}));

const boundaryPolicies = [
  ...layerPolicies,
  { from: { element: { type: 'main' } }, allow: { to: [{ element: door('cli') }, { element: door('warm-start') }] } },
  { from: { element: { type: 'gen' } }, allow: { to: { element: { type: 'gen' } } } },
  { from: { element: { type: 'scripts' } }, allow: { to: { element: { type: 'layer', fileInternalPath: 'index.ts' } } } },
  // scripts/build.mjs builds the web UI with the UI's own build file.
  { from: { element: { type: 'scripts' } }, allow: { to: { element: { type: 'ui', fileInternalPath: ['build.mjs', 'build.d.mts'] } } } },
  // scripts/build.mjs writes the agent's bundle inside the CommonJS wrapper src/warm-start knows it by: one plain-ESM source for both.
  {
    from: { element: { type: 'scripts' } },
    allow: { to: { element: { type: 'layer', captured: { layer: 'warm-start' }, fileInternalPath: ['cjs-wrapper.mjs', 'cjs-wrapper.d.mts'] } } },
  },
  // bench/ui.bench.ts builds the UI once more to report each package's share of the bundle.
  { from: { element: { type: 'bench' } }, allow: { to: { element: { type: 'ui', fileInternalPath: ['build.mjs', 'build.d.mts'] } } } },
  {
    from: { element: { types: { anyOf: ['test', 'bench', 'test-support'] } } },
    allow: { to: [...DOORS, { element: { type: 'gen' } }] },
  },
  // The docker rig is plain ESM in scripts/ because scripts/run-tests.mjs and
  // scripts/demo-docker.sh start it too; the test kit and bench use it from there.
  {
    from: { element: { types: { anyOf: ['test', 'bench', 'test-support'] } } },
    allow: { to: { element: { type: 'scripts', fileInternalPath: ['docker-rig.mjs', 'docker-rig.d.mts'] } } },
  },
  // test/packaging/bundle-names.test.ts checks a trim of the agent bundle (plain ESM in scripts/, run by the build) on a bundle of its own.
  { from: { element: { type: 'test' } }, allow: { to: { element: { type: 'scripts', fileInternalPath: ['bundle-trims.mjs', 'bundle-trims.d.mts'] } } } },
  // Tests read the web UI's pure modules (plain .ts, no DOM or JSX: the chart's scales) as they are.
  { from: { element: { type: 'test' } }, allow: { to: { element: { type: 'ui', fileInternalPath: 'src/*.ts' } } } },
  // The web UI imports only itself (and its npm packages), and the API's shapes through src/api's door: nothing else of src/ or test/.
  { from: { element: { type: 'ui' } }, allow: { to: [{ element: { type: 'ui' } }, { element: door('api') }] } },
  // Tests beside the code (src/**/*.test.ts) may use the test kit.
  { from: { element: { types: { anyOf: PROD } }, file: { categories: 'unit-test' } }, allow: { to: DOORS } },
];

export default tseslint.config(
  { ignores: ['dist/**', 'dist.next-*/**', '.tmp/**', 'node_modules/**', 'src/gen/**', 'bench/results/**', 'ui/dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: globals.node },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-throw-literal': 'error',
    },
  },
  {
    files: ['**/*.ts', '**/*.tsx', '**/*.mjs'],
    plugins: { boundaries, import: importPlugin, berth },
    settings: {
      'import/resolver': { typescript: true, node: true },
      'boundaries/root-path': import.meta.dirname,
      'import/extensions': ['.ts', '.tsx', '.mjs', '.js'],
      'import/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
      'boundaries/elements': boundaryElements,
      'boundaries/files': [{ category: 'unit-test', pattern: 'src/**/*.test.ts' }],
      'boundaries/dependency-nodes': ['import', 'export', 'dynamic-import'],
      'boundaries/legacy-templates': false,
    },
    rules: {
      'boundaries/dependencies': [
        'error',
        {
          default: 'disallow',
          policies: boundaryPolicies,
          message:
            '{{from.element.filePath}} may not import {{to.element.filePath}}: layers point one way, another folder is entered only through its door (index.ts), production code never imports test kits (rules at the top of eslint.config.js).',
        },
      ],
      'boundaries/no-unknown-files': 'error',
      // Every import counts, `import type` and import() included (see scripts/lint-no-cycle.mjs).
      'berth/no-cycle': 'error',
    },
  },
  {
    // The web UI runs in a browser.
    files: ['ui/src/**/*.{ts,tsx}'],
    languageOptions: { globals: globals.browser },
  },
  {
    // Only the CLI talks to a terminal; everything else logs through pino.
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**', 'src/main.ts', 'src/**/*.test.ts'],
    rules: { 'no-console': 'error' },
  },
);
