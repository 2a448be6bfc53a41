// The CLI guide (docs/guide/cli.md, linked from the README) documents every
// command the real `berth` has (its `--help` tree), each with an example, and
// the README's quick start is exactly the two commands the issue promises. A
// command added without documentation, or a documented one that no longer
// exists, fails here.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/index.js';
import { REPO } from '../support/agent-run.js';

const readme = readFileSync(`${REPO}/README.md`, 'utf8');
const guide = readFileSync(`${REPO}/docs/guide/cli.md`, 'utf8');

/** Leaf commands as `group sub ...` paths, from commander's own tree (what --help prints). */
function leaves(cmd: Command, prefix: string[] = []): string[] {
  const subs = cmd.commands.filter((c) => c.name() !== 'help');
  if (subs.length === 0) return [prefix.join(' ')];
  return subs.flatMap((c) => leaves(c, [...prefix, c.name()]));
}

const commands = leaves(await buildProgram());

describe('README and the CLI guide', () => {

  it('the guide has a row with an example for every command in `berth --help`', () => {
    const rows = guide.split('\n').filter((l) => l.startsWith('| `'));
    // `csi` subcommands are documented in their own section; the table has one `csi ...` row.
    for (const command of commands.filter((c) => !c.startsWith('csi '))) {
      const row = rows.find((r) => r.startsWith(`| \`${command}`) && /^\| `[^`]+`( [^|]*)?\|/.test(r));
      assert.ok(row, `docs/guide/cli.md has no row for "berth ${command}"`);
      assert.match(row, new RegExp(`\`berth ${command}\\b`), `the row of "berth ${command}" has no example`);
    }
    assert.ok(rows.some((r) => r.startsWith('| `csi ...`')));
  });

  it('the guide documents no command that berth does not have', () => {
    const table = guide.slice(0, guide.indexOf('Exit codes of the agent commands'));
    const documented = [...table.matchAll(/^\| `([a-z][a-z -]*?)( <[^`]*>| \[[^`]*\])*`/gm)].map((m) => (m[1] as string).trim());
    const known = new Set(commands.flatMap((c) => c.split(' ').map((_, i, parts) => parts.slice(0, i + 1).join(' '))));
    assert.ok(documented.length >= commands.filter((c) => !c.startsWith('csi ')).length);
    for (const d of documented) assert.ok(known.has(d), `docs/guide/cli.md documents "berth ${d}", which does not exist`);
  });

  it('the guides mention every berth csi subcommand', () => {
    const csiGuide = readFileSync(`${REPO}/docs/guide/storage-and-csi.md`, 'utf8');
    for (const command of commands.filter((c) => c.startsWith('csi '))) {
      assert.ok(csiGuide.includes(command.slice(4)), `docs/guide/storage-and-csi.md does not mention "berth ${command}"`);
    }
  });

  it('the README starts with the two quick-start commands', () => {
    const quick = readme.slice(readme.indexOf('## Quick start'), readme.indexOf('## A guided tour'));
    const block = /```sh\n([\s\S]*?)```/.exec(quick)?.[1] ?? '';
    const lines = block.trim().split('\n').map((l) => l.replace(/\s+#.*$/, '').trim());
    assert.deepEqual(lines, ['npm ci && npm run demo', 'npm ci && npm test']);
  });
});
