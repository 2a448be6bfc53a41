// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// Berth's layers (STYLE.md): lib <- csi <- client, server <- agent <- cli.
// `plugins` (CSI plugins Berth ships) sit beside csi's users; generated code is
// reached only through csi (and by plugin servers, which must speak protobuf).
const FOLDERS = ['lib', 'csi', 'plugins', 'structs', 'client', 'server', 'agent', 'cli'];
const layerRules = {
  lib: ['csi', 'plugins', 'structs', 'client', 'server', 'agent', 'cli', 'gen'],
  csi: ['plugins', 'structs', 'client', 'server', 'agent', 'cli'],
  plugins: ['structs', 'client', 'server', 'agent', 'cli'],
  structs: ['plugins', 'client', 'server', 'agent', 'cli', 'gen'],
  client: ['server', 'agent', 'cli', 'gen', 'plugins'],
  server: ['client', 'agent', 'cli', 'gen', 'plugins'],
  agent: ['cli', 'gen'],
  cli: ['gen'],
};

const folderAlt = FOLDERS.join('|');
// Other folders enter a folder only through its door, index.js.
const doorPattern = {
  regex: `^(\\.\\./)+(src/)?(${folderAlt})/(?!([\\w-]+/)*index\\.js$)`,
  message: 'Import another folder only through its index.js (STYLE.md: each folder has one door).',
};

/** @param {string} folder */
function layerConfig(folder) {
  const forbidden = layerRules[/** @type {keyof typeof layerRules} */ (folder)];
  return {
    files: [`src/${folder}/**/*.ts`],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: `^(\\.\\./)+(${forbidden.join('|')})(/|$)`,
              message: `src/${folder} must not import from this layer (STYLE.md: layers point one way).`,
            },
            doorPattern,
          ],
        },
      ],
    },
  };
}

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'src/gen/**', 'bench/results/**'] },
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
  ...Object.keys(layerRules).map(layerConfig),
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: { 'no-restricted-imports': ['error', { patterns: [doorPattern] }] },
  },
  {
    // Only the CLI talks to a terminal; everything else logs through pino.
    files: ['src/**/*.ts'],
    ignores: ['src/cli/**', 'src/main.ts', 'src/**/*.test.ts'],
    rules: { 'no-console': 'error' },
  },
);
