// The README is a front door, and the docs behind it hold together:
//
// - the README is under 400 lines;
// - every relative link in README.md and docs/**/*.md leads to a file that
//   exists, and to a heading (GitHub's anchor for it) or an <a id> there when
//   it names one; docs/reference/ is generated and checked by its own test,
//   but links into it are checked here;
// - every command in the README's shell blocks is run by a test: read from
//   the files that run them (.ci/run, which CI runs; the quick-start test and
//   the script it runs), not from a copy kept here;
// - every HCL block in the README is an example file as it is in examples/,
//   and its list of job-language functions is the guide's;
// - the root holds only the files and folders it should, and stray command
//   output there (`s.out`, `x.log`) is ignored by git.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { REPO } from '../support/agent-run.js';

const read = (path: string): string => readFileSync(join(REPO, path), 'utf8');
const readme = read('README.md');

/** A Markdown file's lines outside fenced code blocks, with their line numbers. */
function proseLines(text: string): Array<{ line: string; n: number }> {
  const out: Array<{ line: string; n: number }> = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) out.push({ line, n: i + 1 });
  });
  return out;
}

/** The fenced blocks of a Markdown file: their language and lines. */
function codeBlocks(text: string): Array<{ lang: string; lines: string[] }> {
  const out: Array<{ lang: string; lines: string[] }> = [];
  let block: { lang: string; lines: string[] } | undefined;
  for (const line of text.split('\n')) {
    const fence = /^\s*```(\S*)/.exec(line);
    if (fence && !block) block = { lang: fence[1] ?? '', lines: [] };
    else if (fence && block) {
      out.push(block);
      block = undefined;
    } else block?.lines.push(line);
  }
  return out;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
function slug(heading: string): string {
  const text = heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** Every anchor a Markdown file offers: its headings' (numbered as GitHub numbers repeats) and its <a id>/<a name>. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(text)) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1] as string);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1] as string);
  }
  return anchors;
}

interface Link {
  file: string;
  n: number;
  target: string;
}

/** The relative links (and images) of a Markdown file, outside code blocks and inline code; a link's text may span lines. */
function relativeLinks(file: string): Link[] {
  const lines = new Map(proseLines(read(file)).map(({ line, n }) => [n, line]));
  const text = read(file)
    .split('\n')
    .map((_, i) => (lines.get(i + 1) ?? '').replace(/`[^`]*`/g, (code) => ' '.repeat(code.length)))
    .join('\n');
  const links: Link[] = [];
  for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1] as string;
    const n = text.slice(0, (m.index ?? 0) + m[0].length).split('\n').length;
    if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) links.push({ file, n, target });
  }
  return links;
}

/** Markdown files below `dir` (relative to the repository), `skip` folders left out. */
function markdownBelow(dir: string, skip: readonly string[] = []): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(REPO, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory() && !skip.includes(path)) out.push(...markdownBelow(path, skip));
    else if (entry.isFile() && entry.name.endsWith('.md')) out.push(path);
  }
  return out;
}

/** What is wrong with a link, or undefined when it leads somewhere real. */
function brokenLink(link: Link): string | undefined {
  const [path = '', anchor] = link.target.split('#', 2);
  const file = path === '' ? link.file : relative(REPO, resolve(REPO, dirname(link.file), decodeURI(path)));
  if (file.startsWith('..')) return `${link.file}:${link.n}: "${link.target}" leads out of the repository`;
  if (!existsSync(join(REPO, file))) return `${link.file}:${link.n}: "${link.target}": no such file ${file}`;
  if (anchor === undefined || !file.endsWith('.md') || statSync(join(REPO, file)).isDirectory()) return undefined;
  if (!anchorsOf(read(file)).has(anchor)) return `${link.file}:${link.n}: "${link.target}": ${file} has no heading or anchor "${anchor}"`;
  return undefined;
}

const documents = ['README.md', ...markdownBelow('docs', ['docs/reference'])];
const links = documents.flatMap(relativeLinks);
const intoReference = (l: Link): boolean => resolve(REPO, dirname(l.file), l.target.split('#')[0] ?? '').startsWith(join(REPO, 'docs/reference'));

/** Shell lines of the README's sh/bash blocks, comments dropped, each `a && b` as its parts. */
function readmeCommands(): string[] {
  return codeBlocks(readme)
    .filter((b) => b.lang === 'sh' || b.lang === 'bash')
    .flatMap((b) => b.lines.join('\n').replace(/\\\n\s*/g, ' ').split('\n'))
    .map((l) => l.replace(/(^|\s+)#.*$/, '').trim())
    .filter((l) => l !== '')
    .flatMap((l) => l.split('&&').map((part) => part.trim()));
}

/** Commands a test or CI runs, each with who runs it, read from the files that run them. */
function commandsRun(): Map<string, string> {
  const run = new Map<string, string>();
  // CI runs .ci/run on every change: its command lines.
  for (const line of read('.ci/run').split('\n')) {
    if (/^\s*(#|set |cd |export |$)/.test(line)) continue;
    for (const part of line.split('&&')) run.set(part.trim(), '.ci/run');
  }
  // The quick-start test runs a script; the npm script that names it is the same run.
  const quickStart = 'test/e2e/quick-start.test.ts';
  const script = /spawn\('bash', \['([^']+)'\]/.exec(read(quickStart))?.[1];
  assert.ok(script, `${quickStart} no longer spawns a script with bash: this test reads which one it runs`);
  const npmScripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
  for (const [name, command] of Object.entries(npmScripts)) if (command === `bash ${script}`) run.set(`npm run ${name}`, quickStart);
  // Each `berth` command the script runs: its `run berth ...` steps and the agent it starts
  // (`node .../bin/berth.js ...`). Flags whose values are the run's own (`--port "$PORT"`) are left out.
  for (const line of read(script).split('\n')) {
    const step = /^run (berth .*?)(\s+\|\|.*)?$/.exec(line)?.[1] ?? /^node "\$REPO\/bin\/berth\.js" (.*?)\s*[<>&]/.exec(line)?.[1];
    if (step === undefined) continue;
    const command = (step.startsWith('berth ') ? step : `berth ${step}`).replace(/\s+--?[a-z-]+ "\$[^"]*"/g, '');
    run.set(command, `${quickStart} (${script})`);
  }
  return run;
}

describe('README', () => {
  it('is a front door: under 400 lines', () => {
    const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
    assert.ok(lines < 400, `README.md has ${lines} lines; the rest belongs in docs/`);
  });

  it('every relative link in README.md and docs/ (not docs/reference) leads to a file, and to its anchor', () => {
    assert.ok(documents.includes('docs/README.md') && documents.some((d) => d.startsWith('docs/guide/')));
    const broken = links.filter((l) => !intoReference(l)).map(brokenLink).filter((b) => b !== undefined);
    assert.deepEqual(broken, []);
  });

  it('every link into the generated docs/reference leads to a file there', { skip: !existsSync(join(REPO, 'docs/reference')) && 'docs/reference is not generated on this branch' }, () => {
    const into = links.filter(intoReference);
    assert.ok(into.length > 0, 'the README and the guides link to the reference');
    assert.deepEqual(into.map(brokenLink).filter((b) => b !== undefined), []);
  });

  it('every command in its shell blocks is run by a test or by CI', () => {
    const commands = readmeCommands();
    assert.ok(commands.includes('npm ci') && commands.includes('npm test') && commands.includes('npm run demo'));
    const run = commandsRun();
    const stray = commands.filter((c) => !run.has(c));
    assert.deepEqual(stray, [], `README commands no test runs (known: ${[...run.keys()].join('; ')})`);
  });

  it('lists the same job-language functions as the Coming from Nomad guide', () => {
    // src/hcl/hcl.test.ts checks the README's list against the engine; this keeps the guide's copy the same.
    const item = (text: string): string | undefined => /^- \*\*Functions\*\*[^\n]*\n((?: {2}[^\n]*\n)+)/m.exec(text)?.[1];
    const listed = item(readme);
    assert.ok(listed, 'the README lists the functions (the HCL engine points there for them)');
    assert.equal(item(read('docs/guide/coming-from-nomad.md')), listed);
  });

  it('shows example files as they are in examples/', () => {
    const examples = readdirSync(join(REPO, 'examples'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.hcl'))
      .map((f) => read(`examples/${f}`));
    const blocks = codeBlocks(readme).filter((b) => b.lang === 'hcl');
    assert.ok(blocks.length > 0);
    for (const block of blocks) {
      const text = block.lines.join('\n').trim();
      assert.ok(examples.some((e) => e.includes(text)), `this README block is no example file's text:\n${text.slice(0, 200)}`);
    }
  });
});

describe('the repository root', () => {
  const git = (...args: string[]): string => execFileSync('git', args, { cwd: REPO, encoding: 'utf8' });

  it('tracks only the files and folders that belong there', () => {
    const allowed = new Set([
      '.ci', '.gitignore', 'README.md', 'bench', 'bin', 'buf.gen.yaml', 'buf.yaml', 'docs', 'eslint.config.js',
      'examples', 'package-lock.json', 'package.json', 'proto', 'scripts', 'src', 'test', 'tsconfig.json', 'ui',
    ]);
    const tracked = new Set(git('ls-files', '-z').split('\0').filter((p) => p !== '').map((p) => p.split('/')[0] as string));
    assert.deepEqual([...tracked].filter((p) => !allowed.has(p)), [], 'a new entry at the root: a stray output, or add it to this list');
  });

  it('ignores stray command output there', () => {
    const strays = ['s.out', 'nohup.out', 'run.log', 'run.err', 'backup.snap', 'agent.cpuprofile', 'example.nomad.hcl', 'volume.hcl'];
    const ignored = git('check-ignore', '--no-index', ...strays).split('\n').filter((l) => l !== '');
    assert.deepEqual(strays.filter((s) => !ignored.includes(s)), []);
  });
});
