// The chroot a Nomad client embeds in a task directory when the task's driver
// says FSIsolation = chroot (Nomad's client/allocdir TaskDir.buildChroot):
// every entry of the client's `chroot_env` (host path -> path in the task
// directory) is made visible under `<alloc>/<task>`.
//
//   - a host symlink (Debian's /bin -> usr/bin) becomes the same symlink;
//   - a host file is hard-linked, copied when it cannot be (another file system);
//   - a host directory is bind-mounted read-only: Linux cannot hard-link a
//     directory (Nomad's own linkDir binds for the same reason), hard-linking
//     every file of /usr takes seconds, and a read-only bind keeps a task
//     running as root from writing through to the host's files.
//
// The per-node cache: what each entry is (the plan) is worked out once per
// `chroot_env`, its files linked into `<cacheDir>/<hash>/files`, and the plan
// written to `<cacheDir>/<hash>/plan.json` (atomically: an agent killed while
// building finds either no plan or a whole one), so later tasks, and the
// agent after a restart, only link and mount.

import { createHash } from 'node:crypto';
import { copyFile, link, lstat, mkdir, readFile, readlink, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeError, silentLogger, type Logger } from '../../lib/index.js';
import { mountPointsUnder, mountScript } from './mounts.js';

/** Nomad's default `chroot_env` (client/config DefaultChrootEnv). */
export const DEFAULT_CHROOT_ENV: Readonly<Record<string, string>> = Object.freeze({
  '/bin': '/bin',
  '/etc': '/etc',
  '/lib': '/lib',
  '/lib32': '/lib32',
  '/lib64': '/lib64',
  '/run/resolvconf': '/run/resolvconf',
  '/sbin': '/sbin',
  '/usr': '/usr',
  '/run/systemd/resolve': '/run/systemd/resolve',
});

/** One embedded entry: `dest` is relative to the task directory. */
export type ChrootEntry =
  | { kind: 'dir'; source: string; dest: string }
  | { kind: 'file'; source: string; dest: string; cached: string }
  | { kind: 'symlink'; source: string; dest: string; target: string };

/** A bind mount to make: `source` on `target`, read-only or not. */
export interface BindMount {
  source: string;
  target: string;
  readOnly: boolean;
}

/**
 * Makes the bind mounts with one mount(8) call each in a single shell run by
 * the mount helper (a spawn costs more than the mounts). Each is private:
 * nothing made in a task directory propagates elsewhere. Throws
 * MountHelperError with mount's stderr.
 */
export async function bindAll(binds: readonly BindMount[]): Promise<void> {
  if (binds.length === 0) return;
  const q = (s: string): string => `'${s.replaceAll("'", `'\\''`)}'`;
  const script = binds.map((b) => `mount --bind ${b.readOnly ? '-o ro ' : ''}--make-private ${q(b.source)} ${q(b.target)}`).join(' &&\n');
  await mountScript(script);
}

/** Whether an error is "already there". */
const exists = (err: unknown): boolean => (err as NodeJS.ErrnoException).code === 'EEXIST';

/** The node's chroot cache for one `chroot_env`. */
export class ChrootCache {
  readonly env: Readonly<Record<string, string>>;
  /** `<cacheDir>/<hash of chroot_env>`. */
  readonly dir: string;
  /** Fault injection for the test suites: called when a task's chroot is half mounted. */
  readonly halfBuilt: ((taskDir: string) => void) | undefined;
  readonly #log: Logger;
  #plan?: Promise<ChrootEntry[]>;

  constructor(opts: { cacheDir: string; env?: Readonly<Record<string, string>>; logger?: Logger; halfBuilt?: (taskDir: string) => void }) {
    this.halfBuilt = opts.halfBuilt;
    this.env = opts.env && Object.keys(opts.env).length > 0 ? opts.env : DEFAULT_CHROOT_ENV;
    for (const [src, dest] of Object.entries(this.env)) {
      if (!path.isAbsolute(src)) throw new Error(`chroot_env: the host path ${JSON.stringify(src)} must be absolute`);
      if (path.normalize(`/${dest}`).split('/').includes('..') || dest === '') throw new Error(`chroot_env: ${JSON.stringify(src)} = ${JSON.stringify(dest)} leaves the task directory`);
    }
    const hash = createHash('sha256').update(JSON.stringify(Object.entries(this.env).sort())).digest('hex').slice(0, 16);
    this.dir = path.join(opts.cacheDir, hash);
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'chroot' });
  }

  /**
   * What each entry is, from plan.json when an earlier run (or agent) wrote
   * it, else from the host (and then written). Safe to call concurrently.
   * Throws when a host entry exists but cannot be read or linked.
   */
  plan(): Promise<ChrootEntry[]> {
    this.#plan ??= this.#loadOrBuild().catch((err: unknown) => {
      this.#plan = undefined;
      throw err;
    });
    return this.#plan;
  }

  /** Whether the plan is already known (in memory). */
  get warm(): boolean {
    return this.#plan !== undefined;
  }

  async #loadOrBuild(): Promise<ChrootEntry[]> {
    const file = path.join(this.dir, 'plan.json');
    try {
      const saved = JSON.parse(await readFile(file, 'utf8')) as { env: Record<string, string>; entries: ChrootEntry[] };
      if (JSON.stringify(saved.env) === JSON.stringify(this.env)) return saved.entries;
    } catch {
      // none yet, or half-written by an agent killed while writing: built again below
    }
    const entries: ChrootEntry[] = [];
    const filesDir = path.join(this.dir, 'files');
    for (const [source, rawDest] of Object.entries(this.env).sort(([a], [b]) => a.localeCompare(b))) {
      const dest = path.normalize(`/${rawDest}`).slice(1);
      let st;
      try {
        st = await lstat(source);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // as Nomad: an absent host path is skipped
        throw err;
      }
      if (st.isSymbolicLink()) entries.push({ kind: 'symlink', source, dest, target: await readlink(source) });
      else if (st.isDirectory()) entries.push({ kind: 'dir', source, dest });
      else if (st.isFile()) {
        const cached = path.join(filesDir, dest);
        await mkdir(path.dirname(cached), { recursive: true });
        await linkOrCopy(source, cached);
        entries.push({ kind: 'file', source, dest, cached });
      }
    }
    // A file under a directory that is bound whole would be hidden by (or written into) the read-only bind.
    for (const e of entries) {
      const owner = entries.find((d) => d.kind === 'dir' && d !== e && e.dest.startsWith(`${d.dest}/`));
      if (owner) throw new Error(`chroot_env: ${e.source} -> /${e.dest} lies inside /${owner.dest}, which ${owner.source} fills whole`);
    }
    await mkdir(this.dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, JSON.stringify({ env: this.env, entries }));
    await rename(tmp, file);
    this.#log.info({ dir: this.dir, entries: entries.length }, 'chroot plan built');
    return entries;
  }

  /**
   * Embeds the chroot in `taskDir`: symlinks and files made where missing,
   * and returns the read-only binds still to make for directories (a
   * directory already mounted is left as it is, so a repeat after an agent
   * restart reuses what the first run made). Does not mount.
   */
  async embed(taskDir: string): Promise<BindMount[]> {
    const entries = await this.plan();
    const mounted = new Set(mountPointsUnder(taskDir));
    const binds: BindMount[] = [];
    for (const e of entries) {
      const at = path.join(taskDir, e.dest);
      await mkdir(path.dirname(at), { recursive: true, mode: 0o755 });
      if (e.kind === 'symlink') {
        await symlink(e.target, at).catch((err: unknown) => {
          if (!exists(err)) throw err;
        });
      } else if (e.kind === 'file') {
        await linkOrCopy(e.cached, at);
      } else {
        await mkdir(at, { recursive: true, mode: 0o755 });
        if (!mounted.has(at)) binds.push({ source: e.source, target: at, readOnly: true });
      }
    }
    return binds;
  }
}

/** Hard link, or a copy (with the mode) when a link cannot be made; an existing `dst` is kept. */
async function linkOrCopy(src: string, dst: string): Promise<void> {
  try {
    await link(src, dst);
  } catch (err) {
    if (exists(err)) return;
    try {
      await copyFile(src, dst);
    } catch (copyErr) {
      throw new Error(`cannot link or copy ${src} to ${dst}: ${describeError(copyErr)} (link: ${describeError(err)})`, { cause: copyErr });
    }
  }
}
