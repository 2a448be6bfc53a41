// The images the docker tests, benchmarks and demo run, built on this machine
// with no network: each is a root filesystem made here and `docker import`ed
// into the rig's dockerd (scripts/docker-rig.mjs), then pushed to the rig's
// registry under the name a job file uses, so jobs pull by registry name as
// users' jobs do. Names are matched by tagging, never by editing job files.
//
//   await buildBusyboxImage(rig.host, 'busybox:1.35')          // local tag
//   await tagAndPush(rig.host, 'busybox:1.35', `${rig.registry}/busybox:1.35`)
//   await buildPauseImage(rig.host)                            // PAUSE_IMAGE
//   await buildPluginImage(rig.host, 'berth-hostpath:dev', { root })
import { execFile as execFileCb, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';

const execFile = promisify(execFileCb);

/** Nomad 1.1's default `infra_image`, the pause container of group networks. */
export const PAUSE_IMAGE = 'gcr.io/google_containers/pause-amd64:3.1';
/** Where Debian's busybox-static puts its binary. */
const BUSYBOX = process.env.BERTH_TEST_BUSYBOX ?? '/bin/busybox';
/** The image PATH of Docker Hub's busybox (and most images): what a task sees instead of the host's. */
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Runs Docker 20.10's CLI (/usr/bin/docker: the 28.x one first on PATH would negotiate a newer API) against `host`. */
export async function docker(host, args, opts = {}) {
  const { stdout } = await execFile('/usr/bin/docker', args, {
    env: { ...process.env, DOCKER_HOST: host }, maxBuffer: 64 * 1024 * 1024, ...opts,
  });
  return stdout.trim();
}

/** `docker import` of directory `rootfs` as `ref`, with Dockerfile-style `changes` (ENV, CMD, ENTRYPOINT…). */
async function importRootfs(host, rootfs, ref, changes) {
  const tar = spawnSync('tar', ['-C', rootfs, '--numeric-owner', '-c', '.'], { maxBuffer: 1024 * 1024 * 1024 });
  if (tar.status !== 0) throw new Error(`tar of ${rootfs}: ${tar.stderr}`);
  const args = ['import', ...changes.flatMap((c) => ['--change', c]), '-', ref];
  return new Promise((res, rej) => {
    const child = execFileCb('/usr/bin/docker', args, { env: { ...process.env, DOCKER_HOST: host } }, (err, stdout, stderr) => {
      if (err) rej(new Error(`docker import ${ref}: ${stderr || err.message}`)); else res(stdout.trim());
    });
    child.stdin.end(tar.stdout);
  });
}

/** A minimal root filesystem: busybox and its applet links in /bin, /etc/passwd and /etc/group, /tmp. */
function busyboxRootfs(dir) {
  // Debian's dynamic `busybox` package also installs /bin/busybox; it would not run without its libc in the image.
  if (sharedLibraries(BUSYBOX).length > 0) throw new Error(`${BUSYBOX} is dynamically linked; install busybox-static (node scripts/ensure-docker.mjs)`);
  for (const d of ['bin', 'etc', 'tmp', 'root', 'usr/bin', 'sbin', 'proc', 'sys', 'dev']) mkdirSync(join(dir, d), { recursive: true });
  copyFileSync(BUSYBOX, join(dir, 'bin', 'busybox'));
  // The links point at /bin/busybox, where it sits in the image.
  for (const applet of spawnSync(BUSYBOX, ['--list'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean)) {
    if (applet !== 'busybox') symlinkSync('/bin/busybox', join(dir, 'bin', applet));
  }
  writeFileSync(join(dir, 'etc', 'passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n');
  writeFileSync(join(dir, 'etc', 'group'), 'root:x:0:\nnogroup:x:65534:\n');
}

async function withTemp(fn) {
  const dir = mkdtempSync(join(tmpdir(), 'berth-image-'));
  try { return await fn(dir); } finally { rmSync(dir, { recursive: true, force: true }); }
}

/** Builds a busybox image tagged `ref` (default `busybox:1.35`), PATH set and `sh` as its command like Docker Hub's. */
export async function buildBusyboxImage(host, ref = 'busybox:1.35') {
  return withTemp(async (dir) => {
    busyboxRootfs(dir);
    return importRootfs(host, dir, ref, [`ENV PATH=${IMAGE_PATH}`, 'CMD ["sh"]']);
  });
}

/**
 * Builds the pause image (`ref`, default Nomad's infra_image name): PID 1
 * that holds the group's network namespace and exits on SIGTERM/SIGINT.
 * busybox's sh as PID 1 with a trap, since PID 1 gets no default handlers.
 */
export async function buildPauseImage(host, ref = PAUSE_IMAGE) {
  return withTemp(async (dir) => {
    busyboxRootfs(dir);
    return importRootfs(host, dir, ref, [
      `ENV PATH=${IMAGE_PATH}`,
      'ENTRYPOINT ["/bin/sh", "-c", "trap \'exit 0\' TERM INT; while :; do sleep 3600 & wait $!; done"]',
    ]);
  });
}

/** The shared libraries `ldd` names for `bin`, with the dynamic loader (absolute host paths). */
function sharedLibraries(bin) {
  const out = spawnSync('ldd', [bin], { encoding: 'utf8' }).stdout ?? '';
  return [...out.matchAll(/(\/\S+) \(0x/g)].map((m) => m[1]);
}

/** Copies host file `path` to the same path under `root`, and when it is a symlink the file it names too. */
function copyHostFile(root, path) {
  const dest = join(root, path);
  mkdirSync(dirname(dest), { recursive: true });
  if (!existsSync(dest)) copyFileSync(realpathSync(path), dest);
}

/**
 * Builds the image that runs Berth's hostpath CSI plugin in a container
 * (tagged `ref`): the `node` binary with the libraries it links, Berth's
 * build (`dist/`, `bin/berth.js`, package.json) and its production
 * node_modules, busybox for a shell. The entrypoint is `berth plugin
 * hostpath`, so a plugin job gives the same args as examples/hostpath-plugin.hcl
 * (`--endpoint=${CSI_ENDPOINT}`, `--node-id`, `--data-dir`). `root` is the
 * repository (dist/ must be built: node scripts/build.mjs).
 */
export async function buildPluginImage(host, ref = 'berth-hostpath:dev', { root = resolve(new URL('..', import.meta.url).pathname), node = process.execPath } = {}) {
  if (!existsSync(join(root, 'dist'))) throw new Error(`${join(root, 'dist')} is missing: run node scripts/build.mjs first`);
  return withTemp(async (dir) => {
    busyboxRootfs(dir);
    const app = join(dir, 'opt', 'berth');
    mkdirSync(app, { recursive: true });
    mkdirSync(join(dir, 'usr', 'local', 'bin'), { recursive: true });
    copyFileSync(node, join(dir, 'usr', 'local', 'bin', 'node'));
    for (const lib of sharedLibraries(node)) copyHostFile(dir, lib);
    cpSync(join(root, 'dist'), join(app, 'dist'), { recursive: true });
    cpSync(join(root, 'bin'), join(app, 'bin'), { recursive: true });
    copyFileSync(join(root, 'package.json'), join(app, 'package.json'));
    // Only what the built plugin imports at run time: the runtime dependencies
    // (package.json "dependencies") and what they need. node_modules may be a
    // symlink (a worktree's); cp follows it to the real tree.
    const modules = join(root, 'node_modules');
    // Native addons ship their C/C++ sources and prebuilt binaries for other
    // platforms (node-pty, better-sqlite3: ~80 MB); the image needs neither.
    const needed = (src) => !/\/node_modules\/(better-sqlite3|node-pty)\/(src|deps|third_party)(\/|$)|\/prebuilds\/(?!linux-x64)[^/]+(\/|$)/.test(src);
    for (const name of productionModules(root)) {
      cpSync(join(modules, name), join(app, 'node_modules', name), { recursive: true, dereference: true, filter: needed });
    }
    symlinkSync('/opt/berth/bin/berth.js', join(dir, 'usr', 'local', 'bin', 'berth'));
    return importRootfs(host, dir, ref, [
      `ENV PATH=${IMAGE_PATH}`,
      'WORKDIR /opt/berth',
      'ENTRYPOINT ["/usr/local/bin/node", "/opt/berth/bin/berth.js", "plugin", "hostpath"]',
    ]);
  });
}

/** The package names (folders under node_modules) the runtime dependencies need, transitively, from npm ls. */
function productionModules(root) {
  const r = spawnSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: root, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const base = join(realpathSync(join(root, 'node_modules')));
  const names = new Set();
  for (const line of (r.stdout ?? '').split('\n')) {
    const real = line.trim();
    const at = real.indexOf('/node_modules/');
    if (at < 0) continue;
    // Top-level packages only: nested ones come along inside their parent.
    const rel = real.slice(at + '/node_modules/'.length);
    const parts = rel.split('/');
    const name = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
    if (existsSync(join(base, name))) names.add(name);
  }
  return [...names];
}

/** Tags local image `ref` as `remote` (e.g. `127.0.0.1:PORT/busybox:1.35`), pushes it, and removes the local copy of `remote` when `dropLocal`, so the next run pulls. */
export async function tagAndPush(host, ref, remote, { dropLocal = false } = {}) {
  await docker(host, ['tag', ref, remote]);
  await docker(host, ['push', remote]);
  if (dropLocal) await docker(host, ['rmi', remote]);
  return remote;
}
