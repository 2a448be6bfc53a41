// Tiny real plugin executables for the go-plugin and driver plugin tests:
// node scripts written into a temp dir, either plain (to misbehave during the
// handshake) or TypeScript (to serve Berth's plugin side), run through the
// loader of ts-loader.ts.

import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './agent-run.js';
import { TS_LOADER } from './ts-loader.js';

/** A temp dir for plugin executables; `remove()` deletes it. */
export function pluginDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'berth-plugin-fixture-'));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Writes an executable `#!/usr/bin/env node` script `name` with `body` (plain JavaScript, ES module). */
export function nodePlugin(dir: string, name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/usr/bin/env node\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

/**
 * A start deadline for tsPlugin fixtures (launchPlugin's startTimeoutMs): tsx compiles the
 * fixture and the sources it imports on every start, seconds of CPU, past the product's 10 s
 * handshake deadline on a loaded machine. A pass never waits for it.
 */
export const FIXTURE_START_MS = 60_000;

/**
 * Writes an executable `name` that runs the TypeScript module `source`
 * through TS_LOADER (ts-loader.ts). `source` may import Berth's sources as `@berth/<path under src>`
 * (rewritten to absolute paths), e.g. `@berth/plugins/index.ts`.
 */
export function tsPlugin(dir: string, name: string, source: string): string {
  const ts = path.join(dir, `${name}.mts`);
  writeFileSync(ts, source.replaceAll('@berth/', `${pathToFileURL(path.join(REPO, 'src')).href}/`));
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\nexec node --import ${TS_LOADER} ${ts} "$@"\n`);
  chmodSync(file, 0o755);
  return file;
}
