// @ts-check
// The node's mount helper: one small long-lived process, started by the
// agent, that runs mount(8)/umount(8) for the allocation directories so the
// agent's event loop never forks (a fork of the agent copies the page tables
// of its ~200 MB: 3-5 ms of its loop per mount on a quiet machine, tens of
// ms under load; a fork of this process costs a fraction of that, and off
// the agent's loop). Plain ESM with JSDoc types: it starts with no
// transpiler, and scripts/build.mjs copies it into dist beside executor.mjs.
//
// Protocol: one JSON line per request on stdin, { id, op, ... }; one JSON
// line per answer on stdout, { id, ok: true, result } or { id, ok: false,
// error }, in any order. Ops:
//   mount   { args, unlessOwnFs? }  mount(8) with args; skipped (mounted:
//           false) when the directory unlessOwnFs already holds a file system
//           of its own, so that a repeated request never stacks a mount
//   unmount { root, keep? }         everything mounted at or under root,
//           deepest first (lazily when busy), except at or under a path of
//           keep; answers { unmounted, left } (mount points still there)
//   sh      { script }              /bin/sh -ec script (several mounts for one spawn)
//   build   { dirs: [[path, mode]], mounts: [{ args, unlessOwnFs }] }  each
//           directory (with its parents) with exactly mode (mkdir(2) under a
//           umask of 0; an existing one is chmodded), then each mount as
//           `mount` would; one answer { mounts: [{ ok, error? }] } (a mount
//           that failed is reported in it; only a directory fails the
//           request): an allocation's directory and its secrets tmpfs in one
//           round trip instead of a dozen file system calls on the agent's loop
// and unmount takes `remove: true` to delete root too once nothing is left
// mounted under it (an allocation directory collected). Mount requests that
// queue up behind the running ones (a burst of allocations, each with its
// secrets tmpfs) go together: one /bin/sh runs their mount(8)s, each
// answered on its own. A mount(8) forked from this process cost 5.3 ms of
// CPU, most of it the fork of a Node process; from a shell, 2.7 ms (9-10 ms
// on a later, slower machine). A tmpfs mount safe to repeat (unlessOwnFs)
// goes to mount(2) instead, through one long-lived process (_tmpfs-mounter.mjs),
// with no process started for it: well under a millisecond; and every
// unmount to umount2(2) through the same process; where that cannot run,
// mount(8) and umount(8) as above.
// It exits when stdin closes (the agent stopped or died) once the requests
// it holds are answered; mounts it made stay, as mount(8)'s would.

import { execFile } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { hasOwnFileSystem, mountPointsUnder } from './mount-table.mjs';
import { TmpfsMounter, translate } from './_tmpfs-mounter.mjs';

/** How many tools run at once; the rest queue. */
const PARALLEL = 4;

/** At most this many queued mount requests go to one shell. */
const MOUNT_BATCH = 64;

/** @param {string} file @param {string[]} args @returns {Promise<void>} */
function run(file, args) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { encoding: 'utf8' }, (err, _stdout, stderr) => {
      if (err) reject(new Error(`${file} ${args.join(' ')}: ${(stderr || err.message).trim()}`));
      else resolve();
    });
  });
}

/**
 * Unmounts `target` (detached when `lazy`, as umount -l): by umount2(2) through
 * the tmpfs mounter, where it runs (no process started), else umount(8).
 * Rejects when it failed.
 * @param {string} target @param {boolean} lazy
 */
async function umount(target, lazy) {
  if (tmpfs) {
    const outcome = await tmpfs.unmount(target, { lazy }).then(
      (why) => ({ why }),
      () => undefined,
    );
    if (outcome) {
      if (outcome.why === undefined) return;
      throw new Error(`umount ${target}: ${outcome.why}`);
    }
  }
  await run('umount', lazy ? ['-l', target] : [target]);
}

/** @param {string} root @param {string[]} keep */
async function unmountUnder(root, keep) {
  const kept = keep.map((k) => {
    try {
      return realpathSync(k);
    } catch {
      return k;
    }
  });
  const ours = () => mountPointsUnder(root).filter((m) => !kept.some((k) => m === k || m.startsWith(`${k}/`)));
  const failed = new Set();
  let unmounted = 0;
  for (let i = 0; i < 256; i++) {
    const next = ours().find((m) => !failed.has(m));
    if (!next) break;
    try {
      await umount(next, false);
      unmounted += 1;
    } catch {
      // Busy: detach it; one that cannot even be detached is reported as left.
      await umount(next, true).then(
        () => (unmounted += 1),
        () => failed.add(next),
      );
    }
  }
  return { unmounted, left: ours() };
}

/**
 * The answer to request `id` once `work` settles: its result, or its error's message.
 * @param {unknown} id @param {Promise<unknown>} work
 */
function answerOf(id, work) {
  return work.then(
    (result) => ({ id, ok: true, result }),
    (err) => ({ id, ok: false, error: err instanceof Error ? err.message : String(err) }),
  );
}

/**
 * Each directory with exactly its mode, in order: one mkdir(2) under a umask
 * of 0 (the mode is not cut, so no chmod follows), where the directory is new
 * and its parent exists (the usual case: a tree listed parents first); an
 * existing directory is chmodded to the mode, and one whose parents are
 * missing made as `mkdir -p` makes them (the parents with the process's
 * umask), then chmodded. Synchronous: the umask is 0 only while no other
 * work of this process (a child's start) can run. Throws what mkdir threw.
 * @param {Array<[string, number]>} dirs
 */
function makeDirs(dirs) {
  const umask = process.umask(0);
  try {
    for (const [dir, mode] of dirs) {
      try {
        mkdirSync(dir, { mode });
        continue;
      } catch (err) {
        const code = /** @type {NodeJS.ErrnoException} */ (err).code;
        if (code === 'EEXIST' && lstatSync(dir).isDirectory()) {
          chmodSync(dir, mode);
          continue;
        }
        if (code !== 'ENOENT') throw err;
      }
      process.umask(umask);
      mkdirSync(dir, { recursive: true });
      chmodSync(dir, mode);
      process.umask(0);
    }
  } finally {
    process.umask(umask);
  }
}

/**
 * One mount request as it would be served alone: a tmpfs safe to repeat by
 * mount(2) through the tmpfs mounter, else mount(8).
 * @param {any} req
 */
function mountOne(req) {
  const m = tmpfs && !tmpfs.broken && req.unlessOwnFs ? translate(req.args) : undefined;
  return m ? mountTmpfs(req, m) : handle(req);
}

/** @param {any} req @returns {Promise<unknown>} */
async function handle(req) {
  switch (req.op) {
    case 'mount':
      if (req.unlessOwnFs && hasOwnFileSystem(req.unlessOwnFs)) return { mounted: false };
      await run('mount', req.args);
      return { mounted: true };
    case 'unmount': {
      const r = await unmountUnder(req.root, req.keep ?? []);
      if (req.remove && r.left.length === 0) rmSync(req.root, { recursive: true, force: true });
      return r;
    }
    case 'build': {
      makeDirs(req.dirs);
      const mounts = await Promise.all(
        req.mounts.map((/** @type {any} */ m) =>
          mountOne({ op: 'mount', ...m }).then(
            () => ({ ok: true }),
            (err) => ({ ok: false, error: err instanceof Error ? err.message : String(err) }),
          ),
        ),
      );
      return { mounts };
    }
    case 'sh':
      await run('/bin/sh', ['-ec', req.script]);
      return {};
    default:
      throw new Error(`unknown op ${JSON.stringify(req.op)}`);
  }
}

/** @param {string} s */
function q(s) {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * Several mount requests in one /bin/sh: each mount(8) with its stderr in a
 * file of its own and its exit status on stdout. Resolves with one answer a
 * request, as handle() would have given it alone.
 * @param {any[]} reqs
 * @returns {Promise<Array<{ id: unknown, ok: boolean, result?: unknown, error?: string }>>}
 */
async function mountBatch(reqs) {
  /** @type {Map<unknown, { id: unknown, ok: boolean, result?: unknown, error?: string }>} */
  const answers = new Map();
  const todo = [];
  /** Requests for a directory an earlier one of the batch mounts: answered by that one's outcome. */
  const repeats = [];
  const first = new Map();
  for (const req of reqs) {
    if (req.unlessOwnFs && first.has(req.unlessOwnFs)) repeats.push(req);
    else if (req.unlessOwnFs && hasOwnFileSystem(req.unlessOwnFs)) answers.set(req.id, { id: req.id, ok: true, result: { mounted: false } });
    else {
      todo.push(req);
      if (req.unlessOwnFs) first.set(req.unlessOwnFs, req);
    }
  }
  if (todo.length > 0) {
    const dir = mkdtempSync(path.join(tmpdir(), 'berth-mounts-'));
    try {
      const script = todo.map((req, i) => `mount ${req.args.map(q).join(' ')} 2>"$0/${i}"; echo "${i} $?"`).join('\n');
      const stdout = await new Promise((resolve) => {
        execFile('/bin/sh', ['-c', script, dir], { encoding: 'utf8' }, (err, out, stderr) => resolve(err && !out ? { failed: (stderr || err.message).trim() } : out));
      });
      /** @type {Map<number, number>} */
      const codes = new Map();
      if (typeof stdout === 'string') {
        for (const line of stdout.split('\n')) {
          const [i, code] = line.split(' ');
          if (i !== undefined && code !== undefined) codes.set(Number(i), Number(code));
        }
      }
      todo.forEach((req, i) => {
        const code = codes.get(i);
        if (code === 0) {
          answers.set(req.id, { id: req.id, ok: true, result: { mounted: true } });
          return;
        }
        let why = typeof stdout === 'string' ? `exit status ${code ?? 'unknown'}` : stdout.failed;
        try {
          why = readFileSync(path.join(dir, String(i)), 'utf8').trim() || why;
        } catch {
          // the shell never got to it
        }
        answers.set(req.id, { id: req.id, ok: false, error: `mount ${req.args.join(' ')}: ${why}` });
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  for (const req of repeats) {
    const earlier = answers.get(first.get(req.unlessOwnFs).id);
    answers.set(req.id, earlier?.ok ? { id: req.id, ok: true, result: { mounted: false } } : { ...earlier, id: req.id, ok: false });
  }
  return reqs.map((req) => /** @type {{ id: unknown, ok: boolean }} */ (answers.get(req.id)));
}

const tmpfs = TmpfsMounter.available() ? new TmpfsMounter() : undefined;
/** tmpfs mounts on their way to mount(2), by directory: a repeat waits for the first rather than stacking a second. @type {Map<string, Promise<unknown>>} */
const tmpfsInFlight = new Map();

/**
 * A mount request safe to repeat, of a tmpfs mount(2) can make, through the
 * tmpfs mounter; mount(8) when the mounter cannot serve (missing, died).
 * @param {any} req
 * @param {{ source: string, target: string, flags: number, data: string }} m
 * @returns {Promise<unknown>}
 */
async function mountTmpfs(req, m) {
  const dir = req.unlessOwnFs;
  const earlier = tmpfsInFlight.get(dir);
  if (earlier) {
    await earlier;
    return { mounted: false };
  }
  const done = (async () => {
    if (hasOwnFileSystem(dir)) return { mounted: false };
    const outcome = await /** @type {TmpfsMounter} */ (tmpfs).mount(m).then(
      (why) => ({ why }),
      () => undefined,
    );
    if (outcome?.why !== undefined) throw new Error(`mount ${req.args.join(' ')}: ${outcome.why}`);
    if (outcome) return { mounted: true };
    return handle(req);
  })();
  tmpfsInFlight.set(dir, done);
  try {
    return await done;
  } finally {
    tmpfsInFlight.delete(dir);
  }
}

let running = 0;
/** Requests served outside the queue (tmpfs mounts by mount(2)). */
let direct = 0;
let closed = false;
/** @type {any[]} */
const queue = [];

let cacheSaved = false;
/** @param {{ id: unknown, ok: boolean }} answer */
function answer(answer) {
  process.stdout.write(`${JSON.stringify(answer)}\n`);
  if (cacheSaved) return;
  // Started from a build (dist/mount-helper.cjs, src/warm-start/helper-main.ts): once it has answered, its code
  // cache holds what serving a request compiles; written once, after the answer, unless V8 took one at load.
  cacheSaved = true;
  const w = /** @type {{ saveCache(): string } | undefined} */ (/** @type {any} */ (globalThis)[Symbol.for('berth.warm-start')]);
  if (w) setImmediate(() => w.saveCache());
}

function pump() {
  while (running < PARALLEL && queue.length) {
    const req = queue.shift();
    running++;
    // Mount requests waiting behind this one go with it.
    const more = req.op === 'mount' ? queue.filter((r) => r.op === 'mount').slice(0, MOUNT_BATCH - 1) : [];
    if (more.length > 0) {
      for (const r of more) queue.splice(queue.indexOf(r), 1);
      mountBatch([req, ...more])
        .catch((err) => [req, ...more].map((r) => ({ id: r.id, ok: false, error: err instanceof Error ? err.message : String(err) })))
        .then((answers) => {
          running--;
          answers.forEach(answer);
          pump();
        });
      continue;
    }
    answerOf(req.id, handle(req)).then((a) => {
      running--;
      answer(a);
      pump();
    });
  }
  if (closed && running === 0 && direct === 0 && queue.length === 0) {
    tmpfs?.close();
    process.stdout.write('', () => process.exit(0));
  }
}

// The agent is gone: nobody to answer.
process.stdout.on('error', () => process.exit(0));

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    return;
  }
  // Once the mounter is lost, mount(8) through the queue as before (a burst's mounts to one shell).
  const m = tmpfs && !tmpfs.broken && req.op === 'mount' && req.unlessOwnFs ? translate(req.args) : undefined;
  if (m) {
    // Not queued: mount(2) takes no process, and a burst's mounts would otherwise wait behind the tools running.
    direct++;
    answerOf(req.id, mountTmpfs(req, m)).then((a) => {
      direct--;
      answer(a);
      pump();
    });
    return;
  }
  queue.push(req);
  pump();
});
lines.on('close', () => {
  closed = true;
  pump();
});
