// The kernel's account of what is mounted where, as the agent sees it:
// /proc/self/mountinfo (proc(5)). The volume manager trusts this, not its
// own records, to decide whether a recorded mount is still intact.

import { readFile } from 'node:fs/promises';

/** Decodes the `\ooo` escapes the kernel uses for space, tab, newline and backslash. */
function unescapeField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}

/** The set of mount points in a mountinfo text. Lines it cannot read are skipped. Pure. */
export function parseMountPoints(text: string): Set<string> {
  const points = new Set<string>();
  for (const line of text.split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 10 || fields[4] === undefined) continue;
    points.add(unescapeField(fields[4]));
  }
  return points;
}

/**
 * A snapshot of the mount points this process sees. Reading it is one
 * file read, whatever the number of volumes, so recovery of a thousand
 * mounts costs one read rather than a thousand.
 */
export class MountTable {
  readonly #points: ReadonlySet<string>;

  constructor(points: ReadonlySet<string>) {
    this.#points = points;
  }

  /** Reads `file` (default /proc/self/mountinfo). Throws the read error. */
  static async read(file = '/proc/self/mountinfo'): Promise<MountTable> {
    return new MountTable(parseMountPoints(await readFile(file, 'utf8')));
  }

  /** True when `realPath` (symlinks already resolved) is a mount point. */
  has(realPath: string): boolean {
    return this.#points.has(realPath);
  }

  /** Mount points strictly below `realDir`. */
  under(realDir: string): string[] {
    const prefix = realDir.endsWith('/') ? realDir : `${realDir}/`;
    return [...this.#points].filter((p) => p.startsWith(prefix));
  }
}
