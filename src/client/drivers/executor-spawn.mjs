// @ts-check
// How an executor starts its task (see executor.mjs): the command line of a
// raw_exec task, or for exec the script that builds the task's private root
// in new mount and pid namespaces with an init as pid 1; both joined to the
// task's cgroup before anything of the task runs. Plain ESM beside
// executor.mjs (scripts/build.mjs copies it into dist too).

import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { forkInGroups, joinPlan } from './executor-join.mjs';

/**
 * @typedef {import('./executor.mjs').ExecutorConfig} ExecutorConfig
 * @typedef {import('./executor.mjs').Mount} Mount
 */

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** @param {string} s */
function q(s) {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** @param {string} p */
function isMountpoint(p) {
  try {
    execFileSync('mountpoint', ['-q', p]);
    return true;
  } catch {
    return false;
  }
}

/**
 * Host side of propagation: a source that must share mount events with the
 * task has to be a shared mount point. A plain directory is bind-mounted onto
 * itself first; that mount is left in place because volumes may be mounted
 * under it (a plugin's mount root) and must outlive the task.
 * @param {Mount[]} mounts
 */
function shareSources(mounts) {
  for (const m of mounts) {
    if (m.propagation === 'private') continue;
    if (!isMountpoint(m.source)) execFileSync('mount', ['--bind', m.source, m.source]);
    execFileSync('mount', ['--make-shared', m.source]);
  }
}

/**
 * Pid 1 of an exec task's pid namespace, inside its root: runs the task as its
 * child with INT and QUIT back to default (a shell's background job has them
 * ignored), forwards SIGTERM and SIGINT to every process of the namespace and
 * the other catchable signals to the task alone, reaps every orphan that the
 * kernel hands to pid 1 (dash's `wait` collects any child), and exits with the
 * task's status (128+n when the task died of signal n), which ends the
 * namespace and whatever is left in it. Without it the task itself would be
 * pid 1, which the kernel shields from every signal it has no handler for.
 */
const INIT_SCRIPT = [
  'cd /',
  'env --default-signal=INT,QUIT "$@" &',
  'c=$!',
  // A stop signal goes to every process of the namespace (kill -1 from pid 1 spares only itself), so a
  // shell blocked on a foreground child runs its trap at once; other signals go to the task alone.
  'for s in INT TERM; do trap "kill -$s -1 2>/dev/null" $s; done',
  'for s in HUP QUIT USR1 USR2 WINCH ALRM CONT TSTP TTIN TTOU; do trap "kill -$s $c 2>/dev/null" $s; done',
  // A trapped signal interrupts `wait` (r > 128) while the task may still run, or may just have ended
  // unwaited: once it is gone, `wait` again collects its own status (127 when r already was it).
  'while :; do wait $c; r=$?; kill -0 $c 2>/dev/null || { wait $c; s=$?; [ $s = 127 ] && exit $r; exit $s; }; done',
].join('\n');

/**
 * The script run as pid 1 of the task's new mount and pid namespaces: builds a
 * private tmpfs root with the host's system dirs read-only, /proc, a minimal
 * /dev, the task's dirs and its volumes, then chroots into it.
 * @param {ExecutorConfig} cfg
 */
function execScript(cfg) {
  const R = path.join(cfg.stateDir, 'root');
  const lines = ['set -e', `R=${q(R)}`, 'mkdir -p "$R"'];
  // Nothing made below may leak to the host: the mount holding the root goes private here.
  lines.push('mount --make-private "$(findmnt -n -o TARGET -T "$R")"');
  lines.push('mount -t tmpfs -o mode=755 berth-root "$R"');
  for (const d of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'usr', 'etc']) {
    lines.push(
      `if [ -L /${d} ]; then ln -s "$(readlink /${d})" "$R/${d}";`,
      `elif [ -d /${d} ]; then mkdir -p "$R/${d}"; mount --rbind /${d} "$R/${d}"; mount --make-rslave "$R/${d}"; mount -o remount,bind,ro "$R/${d}"; fi`,
    );
  }
  lines.push('mkdir -p "$R/proc" && mount -t proc proc "$R/proc"');
  lines.push('mkdir -p "$R/dev" && mount -t tmpfs -o mode=755,nosuid berth-dev "$R/dev"');
  for (const n of ['null', 'zero', 'full', 'random', 'urandom', 'tty']) {
    lines.push(`touch "$R/dev/${n}" && mount --bind /dev/${n} "$R/dev/${n}"`);
  }
  // A private pty instance, so `alloc exec -t` gets a terminal that exists inside the root.
  lines.push('mkdir -p "$R/dev/pts" && mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 berth-pts "$R/dev/pts" && ln -s pts/ptmx "$R/dev/ptmx"');
  lines.push('ln -s /proc/self/fd "$R/dev/fd"; ln -s /proc/self/fd/0 "$R/dev/stdin"; ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"');
  lines.push('mkdir -p "$R/tmp" && mount -t tmpfs -o mode=1777 berth-tmp "$R/tmp"');
  const sharedAlloc = path.join(cfg.allocDir, 'alloc');
  /** @type {Array<[string, string]>} */
  const taskDirs = [
    [cfg.taskDir, '/local'],
    [fs.existsSync(sharedAlloc) ? sharedAlloc : cfg.allocDir, '/alloc'],
    [cfg.secretsDir, '/secrets'],
  ];
  for (const [src, dst] of taskDirs) {
    if (!src || !fs.existsSync(src)) continue;
    lines.push(`mkdir -p "$R${dst}" && mount --bind ${q(src)} "$R${dst}" && mount --make-private "$R${dst}"`);
  }
  for (const m of cfg.mounts) {
    const dst = `"$R"${q(m.destination)}`;
    const isDir = fs.statSync(m.source).isDirectory();
    lines.push(isDir ? `mkdir -p ${dst}` : `mkdir -p "$(dirname ${dst})" && touch ${dst}`);
    lines.push(`mount --rbind ${q(m.source)} ${dst}`);
    if (m.readOnly) lines.push(`mount -o remount,bind,ro ${dst}`);
    const flag = { private: '--make-rprivate', 'host-to-task': '--make-rslave', bidirectional: '--make-rshared' }[m.propagation];
    lines.push(`mount ${flag} ${dst}`);
  }
  lines.push(`touch ${q(path.join(cfg.stateDir, 'setup-done'))}`);
  lines.push(`exec chroot "$R" /bin/sh -c ${q(INIT_SCRIPT)} berth-init "$@"`);
  return lines.join('\n');
}

/**
 * Where the executor cannot fork the task from inside its cgroup (v2; see
 * executor-join.mjs): joins each file given before `--` (below), tells the executor on fd 3 and
 * closes it, then execs what follows (exit 125 if the kernel refused). A v1
 * `tasks` file gets `0`, "this thread": the wrapper shell has one thread, so
 * that moves the whole process, and the kernel then skips the lock that
 * moving a process by its pid takes, which waits out an RCU grace period
 * (9-16 ms here, on every task start's path; 0.1 ms this way). A v2
 * `cgroup.procs` gets the pid: v2 has no `tasks` file.
 */
const JOIN_SCRIPT =
  'while [ "$1" != -- ]; do case "$1" in */tasks) echo 0 > "$1" || exit 125;; *) echo $$ > "$1" || exit 125;; esac; shift; done; shift; echo >&3; exec 3>&-; exec "$@"';

/**
 * The file the wrapper writes to join each directory of a task's cgroup:
 * `tasks` on v1 (see JOIN_SCRIPT), `cgroup.procs` on v2.
 * @param {{ version: 'v1' | 'v2', dirs: string[] }} cgroup
 */
function joinFiles(cgroup) {
  return cgroup.dirs.map((d) => path.join(d, cgroup.version === 'v1' ? 'tasks' : 'cgroup.procs'));
}

/** @param {ExecutorConfig} cfg */
export function spawnTask(cfg) {
  const env = { PATH: DEFAULT_PATH, ...cfg.env };
  /** @type {import('node:child_process').StdioOptions} */
  const fifos = cfg.logs.fifos;
  // A FIFO opened write-only blocks until a reader has it: the host's log monitor already does.
  const stdio = cfg.logs.disabled
    ? ['ignore', 'ignore', 'ignore']
    : fifos
      ? ['ignore', fs.openSync(fifos.stdout, fs.constants.O_WRONLY), fs.openSync(fifos.stderr, fs.constants.O_WRONLY)]
      : ['ignore', 'pipe', 'pipe'];
  // On v1 the executor's thread forks the task from inside its cgroup (executor-join.mjs);
  // otherwise a shell wrapper joins it first and reports on fd 3.
  const steps = cfg.cgroup ? joinPlan(cfg.cgroup) : undefined;
  if (cfg.cgroup && !steps) stdio.push('pipe');
  const nsenter = cfg.networkNamespacePath ? ['nsenter', `--net=${cfg.networkNamespacePath}`, '--'] : [];
  /** @type {string[]} */
  let argv;
  if (cfg.mode === 'exec') {
    shareSources(cfg.mounts);
    argv = [
      ...nsenter,
      'unshare', '--mount', '--pid', '--fork', '--kill-child', '--propagation', 'unchanged', '--',
      '/bin/sh', '-c', execScript(cfg), 'sh', cfg.command, ...cfg.args,
    ];
  } else {
    argv = [...nsenter, cfg.command, ...cfg.args];
  }
  if (cfg.cgroup && !steps) {
    // Join the task's cgroup before anything of the task runs, so every child it forks is in it too.
    argv = ['/bin/sh', '-c', JOIN_SCRIPT, 'berth-cgroup', ...joinFiles(cfg.cgroup), '--', ...argv];
  }
  const [file, ...args] = argv;
  const start = () =>
    spawn(/** @type {string} */ (file), args, {
      // As Nomad: a raw_exec task runs in its task directory (local/ is ./local); exec's init does `cd /`.
      cwd: cfg.mode === 'exec' ? cfg.stateDir : path.dirname(cfg.taskDir),
      env,
      stdio,
      detached: true,
    });
  try {
    return steps ? forkInGroups(steps, start) : start();
  } finally {
    for (const fd of stdio) if (typeof fd === 'number') fs.closeSync(fd);
  }
}

