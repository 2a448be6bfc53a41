#!/usr/bin/env -S node --import tsx
// Generates docs/reference/ from the code's own definitions: the CLI from its
// command tree, the HTTP API from the routes the API registers, the job and
// volume files from the tables and schemas their parser checks against, the
// metrics from their registries. Deterministic: sorted or in definition
// order, no dates, no paths of the machine.
//
// Usage: npm run docs:gen                                    (writes docs/reference/)
//        node --import tsx scripts/gen-reference.ts --json   (prints {path: text} instead; the test uses it)

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cliReference } from './reference/cli.js';
import { httpApiReference } from './reference/http-api.js';
import { metricsReference } from './reference/metrics.js';
import { indexReference } from './reference/readme.js';
import { jobFileReference, volumeFileReference } from './reference/spec-files.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Every generated file, by its path from the repository's root. */
export async function generateReference(): Promise<Record<string, string>> {
  return {
    'docs/reference/README.md': indexReference(),
    'docs/reference/cli.md': await cliReference(),
    'docs/reference/http-api.md': await httpApiReference(),
    'docs/reference/job-file.md': jobFileReference(),
    'docs/reference/volume-file.md': volumeFileReference(),
    'docs/reference/metrics.md': await metricsReference(),
  };
}

const files = await generateReference();
if (process.argv.includes('--json')) {
  process.stdout.write(JSON.stringify(files));
} else {
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), text);
    console.log(`wrote ${rel} (${Buffer.byteLength(text)} bytes)`);
  }
}
