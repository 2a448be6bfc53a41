// Files of the installed Berth package (package.json, bin/berth.js), found
// from wherever this code runs: src/cli/ in a checkout run through tsx, or
// the compiled dist/ of a checkout or an installed package.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The name Berth is published under on npm (package.json's `name`). */
export const PACKAGE_NAME = '@berth-orchestrator/berth';

let root: string | undefined;

/** The package's root: the nearest directory above this module whose package.json is Berth's. */
function packageRoot(): string {
  if (root !== undefined) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === PACKAGE_NAME) return (root = dir);
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no Berth package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** The absolute path of `relative` inside the Berth package. Sync; throws when Berth's package.json cannot be found. */
export function packageFile(relative: string): string {
  return join(packageRoot(), relative);
}
