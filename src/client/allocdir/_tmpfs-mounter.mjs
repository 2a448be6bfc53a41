// @ts-check
// tmpfs mounts by the mount(2) system call, for the mount helper
// (mount-helper.mjs): one long-lived `perl` process, started on the first
// mount, reads one request a line and answers one line, calling mount(2)
// through Perl's `syscall`. Node has no mount(2) binding, and every
// mount(8) is a process started for one system call: 9-10 ms of CPU each on
// the development machine (the exec of a tool linked against libmount and
// libselinux), some 2 s of a 200-allocation burst with one secrets tmpfs
// each; the same mounts through this process cost well under a millisecond
// each. Perl is part of every Debian and Ubuntu system (perl-base is
// essential) and of most others; where it is missing, or the machine is not
// one whose mount(2) number is known here, or the mount's options are not
// ones translated here, `available()` or `translate()` says no and the
// helper runs mount(8) as before. Plain ESM with JSDoc types, copied into
// dist beside mount-helper.mjs.

import { spawn } from 'node:child_process';
import { arch } from 'node:os';
import { createInterface } from 'node:readline';

/** mount(2)'s number by Node's name of the architecture (Linux's unistd tables). */
const SYS_MOUNT = /** @type {Record<string, number>} */ ({ x64: 165, arm64: 40, riscv64: 40, loong64: 40 });

/** mount(8) options that are mount(2) flags (MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_NOATIME). */
const FLAGS = /** @type {Record<string, number>} */ ({ ro: 1, nosuid: 2, nodev: 4, noexec: 8, noatime: 1024 });

/** tmpfs options mount(8) hands to the kernel as they are (the file system's own data). */
const TMPFS_DATA = new Set(['size', 'mode', 'uid', 'gid', 'nr_inodes', 'nr_blocks']);

/** umount2(2)'s number by Node's name of the architecture. */
const SYS_UMOUNT2 = /** @type {Record<string, number>} */ ({ x64: 166, arm64: 39, riscv64: 39, loong64: 39 });

/**
 * Reads lines `m\tsource\ttarget\tfstype\tflags\tdata` (mount(2)) and
 * `u\ttarget\tflags` (umount2(2)); answers `0` or `<errno> <message>` for
 * each, in order.
 */
const PERL = `$| = 1; my ($mnt, $umnt) = @ARGV;
while (my $l = <STDIN>) { chomp $l; my ($op, @a) = split /\\t/, $l, -1; my $r;
  if ($op eq 'm') { my ($s, $t, $f, $fl, $d) = @a; $r = syscall($mnt, $s, $t, $f, $fl + 0, $d); }
  else { my ($t, $fl) = @a; $r = syscall($umnt, $t, $fl + 0); }
  print $r == 0 ? "0\\n" : ($! + 0) . " $!\\n"; }`;

/**
 * What mount(2) is asked for `args` (mount(8)'s: `-t tmpfs -o OPTIONS SOURCE
 * TARGET`), or undefined when the arguments are anything else or hold an
 * option not translated here (mount(8) then runs them).
 * @param {string[]} args
 * @returns {{ source: string, target: string, flags: number, data: string } | undefined}
 */
export function translate(args) {
  if (args.length !== 6 || args[0] !== '-t' || args[1] !== 'tmpfs' || args[2] !== '-o') return undefined;
  const [, , , options, source, target] = args;
  if (!options || !source || !target || [options, source, target].some((a) => /[\t\n]/.test(a))) return undefined;
  let flags = 0;
  const data = [];
  for (const opt of options.split(',')) {
    const key = opt.split('=')[0] ?? '';
    if (opt in FLAGS) flags |= /** @type {number} */ (FLAGS[opt]);
    else if (TMPFS_DATA.has(key) && opt.includes('=')) data.push(opt);
    else return undefined;
  }
  return { source, target, flags, data: data.join(',') };
}

/**
 * The perl process, started on first use. `mount` resolves with undefined
 * when the mount was made, or the error's message (as the kernel's errno
 * reads, prefixed like mount(8)'s); it rejects when the process cannot serve
 * (missing, died): the caller then runs mount(8).
 */
export class TmpfsMounter {
  /** @type {import('node:child_process').ChildProcess | undefined} */
  #child;
  /** @type {Array<{ resolve: (v: string | undefined) => void, reject: (e: Error) => void }>} */
  #waiting = [];
  #broken = false;

  /** Whether the process was found missing or died: it is not started again (mount(8) serves from then on). */
  get broken() {
    return this.#broken;
  }

  /** Whether mount(2) can be called this way here (the perl process may still fail to start: mount then rejects). */
  static available() {
    return process.platform === 'linux' && arch() in SYS_MOUNT && arch() in SYS_UMOUNT2;
  }

  /**
   * @param {{ source: string, target: string, flags: number, data: string }} m
   * @returns {Promise<string | undefined>}
   */
  mount(m) {
    if (this.#broken) return Promise.reject(new Error('the tmpfs mounter is not available'));
    const child = this.#child ?? this.#start();
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      child.stdin?.write(`m\t${m.source}\t${m.target}\ttmpfs\t${m.flags}\t${m.data}\n`);
    });
  }

  /**
   * umount2(2) of `target` (a mount point as the kernel's table names it),
   * detached (MNT_DETACH, as `umount -l`) when `lazy`: resolves as mount()
   * does, rejects when the process cannot serve.
   * @param {string} target @param {{ lazy?: boolean }} [opts]
   * @returns {Promise<string | undefined>}
   */
  unmount(target, opts = {}) {
    if (this.#broken) return Promise.reject(new Error('the tmpfs mounter is not available'));
    if (/[\t\n]/.test(target)) return Promise.reject(new Error('a mount point with a tab or newline in its path'));
    const child = this.#child ?? this.#start();
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      child.stdin?.write(`u\t${target}\t${opts.lazy ? 2 : 0}\n`);
    });
  }

  /** Ends the perl process (its stdin closes). Safe twice. */
  close() {
    this.#child?.stdin?.end();
    this.#child = undefined;
  }

  #start() {
    const child = spawn('perl', ['-e', PERL, String(SYS_MOUNT[arch()]), String(SYS_UMOUNT2[arch()])], { stdio: ['pipe', 'pipe', 'ignore'] });
    this.#child = child;
    child.stdin?.on('error', () => undefined);
    createInterface({ input: /** @type {import('node:stream').Readable} */ (child.stdout) }).on('line', (line) => {
      const w = this.#waiting.shift();
      if (!w) return;
      if (line === '0') w.resolve(undefined);
      else w.resolve(line.replace(/^\d+ /, ''));
    });
    const gone = (/** @type {string} */ why) => {
      // Missing or dead: mount(8) from now on, for what is waiting too.
      this.#broken = true;
      if (this.#child === child) this.#child = undefined;
      for (const w of this.#waiting.splice(0)) w.reject(new Error(`the tmpfs mounter ${why}`));
    };
    child.on('error', (err) => gone(`could not run (${err.message})`));
    child.on('close', (code, signal) => gone(signal ? `was killed by ${signal}` : `exited with code ${code}`));
    return child;
  }
}
