// The generated reference (docs/reference/) is what the code generates now:
// a command, flag, route, file block or metric changed without
// `npm run docs:gen` leaves a page stale, and this test names it. The
// generator runs in its own process (it builds the API's routes on
// throwaway fastify instances) and prints every page as JSON.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function generated(): Record<string, string> {
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'gen-reference.ts'), '--json'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, NO_COLOR: '1' },
  });
  assert.equal(run.status, 0, `the reference generator failed:\n${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, string>;
}

describe('docs/reference', () => {
  const pages = generated();

  it('has every page the generator makes, each as it generates it', () => {
    const stale: string[] = [];
    for (const [rel, text] of Object.entries(pages)) {
      const file = join(root, rel);
      if (!existsSync(file)) stale.push(`${rel} is missing`);
      else if (readFileSync(file, 'utf8') !== text) stale.push(`${rel} differs from what the code generates`);
    }
    assert.deepEqual(stale, [], `stale reference:\n  ${stale.join('\n  ')}\nRun \`npm run docs:gen\` and commit the result.`);
  });

  it('holds no page the generator does not make', () => {
    const made = new Set(Object.keys(pages));
    const extra = readdirSync(join(root, 'docs', 'reference'))
      .map((f) => `docs/reference/${f}`)
      .filter((rel) => !made.has(rel));
    assert.deepEqual(extra, [], `not generated (remove, or generate it in scripts/gen-reference.ts): ${extra.join(', ')}; then run \`npm run docs:gen\``);
  });

  it('documents every top-level command, a Berth route, a job block and a metric', () => {
    // What a reader looks up first is there (guards against a generator that writes empty pages).
    const cli = pages['docs/reference/cli.md'] ?? '';
    for (const cmd of ['agent', 'job run', 'volume create', 'plugin status', 'operator']) assert.match(cli, new RegExp(`^## berth ${cmd}$`, 'm'));
    assert.match(pages['docs/reference/http-api.md'] ?? '', /\| `\/v1\/volumes\/doctor` \|/);
    assert.match(pages['docs/reference/job-file.md'] ?? '', /^## job > group > task > resources$/m);
    assert.match(pages['docs/reference/volume-file.md'] ?? '', /\| `plugin_id` \|/);
    assert.match(pages['docs/reference/metrics.md'] ?? '', /\| `berth_volume_claims` \| gauge \|/);
  });
});
