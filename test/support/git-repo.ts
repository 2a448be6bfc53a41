// A git repository on this machine's disk for the artifact tests: each commit
// writes the given files, and may be tagged. Clones of it stay on the machine.

import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const IDENTITY = { GIT_AUTHOR_NAME: 'berth-test', GIT_AUTHOR_EMAIL: 'test@berth.invalid', GIT_COMMITTER_NAME: 'berth-test', GIT_COMMITTER_EMAIL: 'test@berth.invalid' };

/** Makes `dir` a repository on branch main with one commit per entry of `commits`, in order. */
export function gitRepo(dir: string, commits: ReadonlyArray<{ files: Record<string, string>; tag?: string }>): void {
  const git = (...args: string[]): string => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8', env: { ...process.env, ...IDENTITY } });
  mkdirSync(dir, { recursive: true });
  git('init', '--quiet', '--initial-branch=main');
  commits.forEach((c, i) => {
    for (const [name, text] of Object.entries(c.files)) writeFileSync(path.join(dir, name), text);
    git('add', '.');
    git('commit', '--quiet', '-m', `commit ${i + 1}`);
    if (c.tag) git('tag', c.tag);
  });
}
