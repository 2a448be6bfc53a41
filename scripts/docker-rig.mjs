// A private Docker for tests, benchmarks and the container demo: one dockerd
// (Debian's docker.io, 20.10) with its socket, data, exec state, pid file,
// cgroup parent and bridge all its own, and Debian's `docker-registry` on a
// free loopback port, everything under one directory that stop() removes.
// It never touches /var/run/docker.sock, /var/lib/docker or the system
// services (scripts/ensure-docker.mjs installs the packages and leaves them
// stopped).
//
//   const rig = await startDockerRig({ dir: '.tmp/docker-rig' });
//   rig.host        // 'unix:///…/docker.sock' for DOCKER_HOST / plugin "docker" endpoint
//   rig.registry    // '127.0.0.1:PORT' (dockerd treats 127.0.0.0/8 as insecure: plain HTTP)
//   rig.sharedDir   // a directory that is an rshared mount: bind sources for `:rshared`
//   await rig.stop();
//
// Why each dockerd flag:
// - its own bridge (made here, `--bridge`): a second dockerd with the default
//   would fight over `docker0`; the subnet is a 10.251.X.0/24 that no interface
//   on the machine has, checked when the rig starts, so two rigs (the suite's
//   and the developers' one) never collide.
// - `--iptables=false --ip-masq=false --ip-forward=false`: the rig must not
//   rewrite the host's firewall; ports published on 127.0.0.1 go through
//   docker-proxy, which needs none of it; containers get no route out (tests
//   only talk to loopback).
// - a runc wrapper as the default runtime: the sandbox's capability bounding
//   set lacks some capabilities (CAP_SYS_RESOURCE) and `--privileged` asks
//   runc for all of them, which fails with "unable to apply caps". The wrapper
//   deletes the capabilities this host cannot grant from the OCI spec (the
//   bundle's config.json, or the exec's process.json) and execs runc. On a
//   host with a full set it deletes nothing.
// - `--config-file` of its own: /etc/docker/daemon.json is the system's.
//
// The images (busybox, pause, the Berth plugin image) are built by
// scripts/docker-images.mjs and re-exported here.
import { spawn, execFile as execFileCb, spawnSync } from 'node:child_process';
import { createConnection, createServer } from 'node:net';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, openSync, closeSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { promisify } from 'node:util';

export { buildBusyboxImage, buildPauseImage, buildPluginImage, tagAndPush, docker, PAUSE_IMAGE } from './docker-images.mjs';

const execFile = promisify(execFileCb);

/** Linux capability names by bit number (capability.h), for reading the bounding set. */
const CAPS = [
  'CHOWN', 'DAC_OVERRIDE', 'DAC_READ_SEARCH', 'FOWNER', 'FSETID', 'KILL', 'SETGID', 'SETUID', 'SETPCAP',
  'LINUX_IMMUTABLE', 'NET_BIND_SERVICE', 'NET_BROADCAST', 'NET_ADMIN', 'NET_RAW', 'IPC_LOCK', 'IPC_OWNER',
  'SYS_MODULE', 'SYS_RAWIO', 'SYS_CHROOT', 'SYS_PTRACE', 'SYS_PACCT', 'SYS_ADMIN', 'SYS_BOOT', 'SYS_NICE',
  'SYS_RESOURCE', 'SYS_TIME', 'SYS_TTY_CONFIG', 'MKNOD', 'LEASE', 'AUDIT_WRITE', 'AUDIT_CONTROL', 'SETFCAP',
  'MAC_OVERRIDE', 'MAC_ADMIN', 'SYSLOG', 'WAKE_ALARM', 'BLOCK_SUSPEND', 'AUDIT_READ', 'PERFMON', 'BPF',
  'CHECKPOINT_RESTORE',
];

export const DOCKERD = process.env.BERTH_TEST_DOCKERD ?? '/usr/sbin/dockerd';
export const REGISTRY_BIN = process.env.BERTH_TEST_DOCKER_REGISTRY_BIN ?? '/usr/bin/docker-registry';
export const RUNC = process.env.BERTH_TEST_RUNC ?? '/usr/sbin/runc';

/**
 * Why a private dockerd cannot run here, or undefined when it can: it needs
 * root (mounts, bridges, cgroups) and the two Debian programs.
 */
export function dockerUnavailable() {
  if (process.platform !== 'linux') return 'docker tests need Linux';
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'a private dockerd needs root';
  for (const bin of [DOCKERD, REGISTRY_BIN, RUNC]) {
    if (!existsSync(bin)) return `${bin} is missing (node scripts/ensure-docker.mjs installs it)`;
  }
  return undefined;
}

/** The capabilities in the kernel's list that this process's bounding set lacks (CAP_ names). */
export function missingCapabilities() {
  const line = readFileSync('/proc/self/status', 'utf8').split('\n').find((l) => l.startsWith('CapBnd:'));
  const bnd = BigInt(`0x${line.split(/\s+/)[1]}`);
  const lastCap = Number(readFileSync('/proc/sys/kernel/cap_last_cap', 'utf8').trim());
  return CAPS.slice(0, lastCap + 1).filter((_, bit) => (bnd & (1n << BigInt(bit))) === 0n).map((n) => `CAP_${n}`);
}

/** The shell script that stands in for runc: drop `missing` from the spec, then exec the real runc. */
function runcWrapper(missing) {
  // Go's encoding/json writes the spec on one line with no spaces, so exact
  // string edits are enough: the name with the comma before it, after it, or alone.
  const edits = missing.flatMap((cap) => [`-e 's/,"${cap}"//g'`, `-e 's/"${cap}",//g'`, `-e 's/\\["${cap}"\\]/[]/g'`]).join(' ');
  return `#!/bin/sh
# Written by scripts/docker-rig.mjs: the capabilities this host's bounding set
# lacks are deleted from the OCI spec before runc sees it (see that file).
bundle= process=
prev=
for a in "$@"; do
  case "$prev" in
    --bundle|-b) bundle="$a" ;;
    --process|-p) process="$a" ;;
  esac
  case "$a" in
    --bundle=*) bundle="\${a#--bundle=}" ;;
    --process=*) process="\${a#--process=}" ;;
  esac
  prev="$a"
done
${edits ? `[ -n "$bundle" ] && [ -f "$bundle/config.json" ] && sed -i ${edits} "$bundle/config.json"
[ -n "$process" ] && [ -f "$process" ] && sed -i ${edits} "$process"` : ':'}
exec ${RUNC} "$@"
`;
}

/** A free TCP port on 127.0.0.1. */
async function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

/** The IPv4 subnets (a.b.c of each /24) some interface on this machine already has. */
function usedThirdOctets() {
  const out = spawnSync('ip', ['-o', '-4', 'addr', 'show'], { encoding: 'utf8' }).stdout ?? '';
  return new Set([...out.matchAll(/inet 10\.251\.(\d+)\./g)].map((m) => Number(m[1])));
}

function run(cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${(r.stderr || r.stdout || String(r.error)).trim()}`);
  return r.stdout;
}

/**
 * Makes a bridge with a 10.251.X.1/24 address no interface has yet. A name
 * taken by a concurrent rig makes `ip link add` fail; try the next.
 */
function makeBridge() {
  const used = usedThirdOctets();
  for (let x = 1 + Math.floor(Math.random() * 200), tries = 0; tries < 250; x = (x % 250) + 1, tries++) {
    if (used.has(x)) continue;
    const name = `berthdk${x}`;
    if (spawnSync('ip', ['link', 'add', name, 'type', 'bridge'], { stdio: 'ignore' }).status !== 0) continue;
    run('ip', ['addr', 'add', `10.251.${x}.1/24`, 'dev', name]);
    run('ip', ['link', 'set', name, 'up']);
    return { name, cidr: `10.251.${x}.0/24` };
  }
  throw new Error('no free 10.251.X.0/24 subnet for the docker rig bridge');
}

/** Mount points at or below `dir`, deepest first (from /proc/self/mountinfo). */
function mountsUnder(dir) {
  const points = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean)
    .map((l) => l.split(' ')[4].replace(/\\040/g, ' '))
    .filter((p) => p === dir || p.startsWith(`${dir}/`));
  return [...new Set(points)].sort((a, b) => b.length - a.length);
}

/**
 * Spawns `cmd` in its own process group (a Ctrl-C to the tests must not kill
 * it mid-run: stop() does), its output straight into `logFile`: never a pipe,
 * which a parent blocked in spawnSync (scripts/run-tests.mjs) would not drain,
 * and dockerd would stall writing its log.
 */
function startDaemon(cmd, args, logFile) {
  const fd = openSync(logFile, 'a');
  const child = spawn(cmd, args, { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  return { child };
}

/** Waits for a daemon's log file to match `re`, watching the file (the daemon writes straight to it). */
async function waitForLogFile(child, logFile, re, what, ms) {
  const { watch } = await import('node:fs');
  return new Promise((res, rej) => {
    const watcher = watch(logFile);
    const timer = setTimeout(() => done(new Error(`${what} did not start within ${ms} ms:\n${readFileSync(logFile, 'utf8').slice(-3000)}`)), ms);
    const check = () => { if (re.test(readFileSync(logFile, 'utf8'))) done(); };
    const exit = (code, sig) => done(new Error(`${what} exited (${code ?? sig}) before it was ready:\n${readFileSync(logFile, 'utf8').slice(-3000)}`));
    function done(err) {
      clearTimeout(timer);
      watcher.close();
      child.off('exit', exit);
      if (err) rej(err); else res();
    }
    watcher.on('change', check);
    child.on('exit', exit);
    check();
  });
}

/** Sends GET /_ping to the dockerd at `socketPath`; resolves with the body. */
export function pingDocker(socketPath) {
  return new Promise((res, rej) => {
    const sock = createConnection(socketPath);
    let out = '';
    sock.on('connect', () => sock.write('GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n'));
    sock.on('data', (d) => { out += d; });
    sock.on('end', () => res(out.split('\r\n\r\n')[1] ?? ''));
    sock.on('error', rej);
  });
}

/** Terminates a process by pid and waits (by polling its /proc entry on each SIGTERM retry) until it is gone. */
async function terminate(child, pid, ms = 30_000) {
  if (child) {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((res) => child.once('exit', res));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    await gone;
    clearTimeout(timer);
    return;
  }
  // A rig started by another process (the dev rig): only its pid is known.
  try { process.kill(pid, 'SIGTERM'); } catch { return; }
  const deadline = Date.now() + ms;
  while (existsSync(`/proc/${pid}`)) {
    if (Date.now() > deadline) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
    await new Promise((r) => setTimeout(r, 100)); // no exit event for a process we did not start
  }
}

/**
 * Starts dockerd and the registry under `dir` (made if missing; it must not
 * be in use by another rig). `detached: true` leaves both running after this
 * process exits (the developers' rig); stop() then works from the state file.
 * Resolves once dockerd answers /_ping and the registry listens.
 */
export async function startDockerRig({ dir, detached = false, timeoutMs = 60_000 } = {}) {
  const why = dockerUnavailable();
  if (why) throw new Error(why);
  dir = resolve(dir);
  mkdirSync(dir, { recursive: true });
  const state = { dir };
  try {
    // A bind mount of the directory onto itself, made rshared: mounts that
    // containers make under an `:rshared` bind from here come back to the host
    // (`/` is a private mount in this sandbox, and docker refuses rshared
    // propagation from a private source).
    const sharedDir = join(dir, 'shared');
    mkdirSync(sharedDir, { recursive: true });
    run('mount', ['--bind', sharedDir, sharedDir]);
    run('mount', ['--make-rshared', sharedDir]);
    state.sharedDir = sharedDir;

    const missing = missingCapabilities();
    const wrapper = join(dir, 'berth-runc');
    writeFileSync(wrapper, runcWrapper(missing));
    chmodSync(wrapper, 0o755);

    const bridge = makeBridge();
    state.bridge = bridge.name;
    const socketPath = join(dir, 'docker.sock');
    writeFileSync(join(dir, 'daemon.json'), '{}\n');
    const dockerdArgs = [
      `--host=unix://${socketPath}`,
      `--data-root=${join(dir, 'data')}`,
      `--exec-root=${join(dir, 'exec')}`,
      `--pidfile=${join(dir, 'dockerd.pid')}`,
      `--config-file=${join(dir, 'daemon.json')}`,
      '--storage-driver=overlay2',
      `--bridge=${bridge.name}`,
      '--iptables=false', '--ip-masq=false', '--ip-forward=false',
      `--cgroup-parent=/${bridge.name}`,
      `--add-runtime=berth-runc=${wrapper}`, '--default-runtime=berth-runc',
    ];
    const dockerd = startDaemon(DOCKERD, dockerdArgs, join(dir, 'dockerd.log'));
    state.dockerdPid = dockerd.child.pid;
    state.dockerd = dockerd.child;

    const port = await freePort();
    const registry = `127.0.0.1:${port}`;
    writeFileSync(join(dir, 'registry.yml'), [
      'version: 0.1',
      'log: { level: info }',
      `storage: { filesystem: { rootdirectory: ${join(dir, 'registry')} }, delete: { enabled: true } }`,
      `http: { addr: "${registry}" }`,
      '',
    ].join('\n'));
    const reg = startDaemon(REGISTRY_BIN, ['serve', join(dir, 'registry.yml')], join(dir, 'registry.log'));
    state.registryPid = reg.child.pid;
    state.registryChild = reg.child;
    /** Lets this process exit while both run. */
    const unref = () => {
      dockerd.child.unref();
      reg.child.unref();
    };

    await Promise.all([
      waitForLogFile(dockerd.child, join(dir, 'dockerd.log'), /API listen on/, 'dockerd', timeoutMs),
      waitForLogFile(reg.child, join(dir, 'registry.log'), /listening on/, 'docker-registry', timeoutMs),
    ]);
    if (detached) unref();
    const pong = await pingDocker(socketPath);
    if (pong !== 'OK') throw new Error(`dockerd at ${socketPath} answered /_ping with ${JSON.stringify(pong)}`);
    const info = { dir, socketPath, host: `unix://${socketPath}`, registry, sharedDir, bridge: bridge.name, subnet: bridge.cidr,
      dockerdPid: state.dockerdPid, registryPid: state.registryPid, droppedCapabilities: missing };
    writeFileSync(join(dir, 'rig.json'), `${JSON.stringify(info, null, 2)}\n`);
    return { ...info, stop: () => stopRig(state), unref };
  } catch (err) {
    await stopRig(state).catch(() => {});
    throw err;
  }
}

/** The stop() of a rig another process started with `detached: true`, from the rig.json in its dir. */
export async function stopDockerRigAt(dir) {
  dir = resolve(dir);
  const info = JSON.parse(readFileSync(join(dir, 'rig.json'), 'utf8'));
  await stopRig({ dir, sharedDir: info.sharedDir, bridge: info.bridge, dockerdPid: info.dockerdPid, registryPid: info.registryPid });
}

/** Removes every container, stops dockerd and the registry, unmounts what is left under dir, deletes the bridge and dir. */
async function stopRig(state) {
  const { dir } = state;
  const socketPath = join(dir, 'docker.sock');
  if (state.dockerdPid && existsSync(socketPath)) {
    const env = { ...process.env, DOCKER_HOST: `unix://${socketPath}` };
    try {
      const { stdout } = await execFile('/usr/bin/docker', ['ps', '-aq'], { env });
      const ids = stdout.split('\n').filter(Boolean);
      if (ids.length > 0) await execFile('/usr/bin/docker', ['rm', '-f', '-v', ...ids], { env });
    } catch { /* dockerd already gone: its containers die with their shims below */ }
  }
  await terminate(state.dockerd, state.dockerdPid);
  await terminate(state.registryChild, state.registryPid);
  // Shims of containers dockerd could not remove keep running: kill them (they are under dir's exec root).
  for (const pid of shimsUnder(dir)) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
  for (const m of mountsUnder(dir)) spawnSync('umount', ['-l', m], { stdio: 'ignore' });
  if (state.bridge) spawnSync('ip', ['link', 'del', state.bridge], { stdio: 'ignore' });
  if (state.bridge) {
    for (const ctl of ['cpu', 'cpuacct', 'cpuset', 'memory', 'devices', 'freezer', 'blkio', 'pids', 'systemd']) {
      rmCgroup(`/sys/fs/cgroup/${ctl}/${state.bridge}`);
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

/** Removes an (empty of processes) cgroup directory tree, children first. */
function rmCgroup(path) {
  if (!existsSync(path)) return;
  const r = spawnSync('find', [path, '-depth', '-type', 'd', '-exec', 'rmdir', '{}', ';'], { stdio: 'ignore' });
  return r.status === 0;
}

/** Pids of containerd shims whose command line names a path under `dir`. */
function shimsUnder(dir) {
  const r = spawnSync('pgrep', ['-f', `containerd-shim.*${dir}`], { encoding: 'utf8' });
  return (r.stdout ?? '').split('\n').filter(Boolean).map(Number);
}

// As a program: a rig that outlives this process, for developing against by hand.
//   node scripts/docker-rig.mjs start DIR [ENV_FILE]   starts it (detached), builds and pushes
//                                                      busybox:1.35 and the pause image, writes
//                                                      DOCKER_HOST= / REGISTRY= to ENV_FILE
//   node scripts/docker-rig.mjs plugin-image DIR [TAG] [--push]
//                                                      builds Berth's hostpath plugin image from
//                                                      this checkout's dist/ as TAG (default
//                                                      berth/hostpath-plugin:dev); --push also
//                                                      pushes it to the rig's registry, same path
//   node scripts/docker-rig.mjs stop DIR               stops it and removes DIR
if (import.meta.url === `file://${process.argv[1]}`) {
  const [cmd, dir, envFile] = process.argv.slice(2);
  try {
    if (cmd === 'plugin-image' && dir) {
      const info = JSON.parse(readFileSync(join(resolve(dir), 'rig.json'), 'utf8'));
      const { buildPluginImage: build, tagAndPush: push } = await import('./docker-images.mjs');
      const args = process.argv.slice(4);
      const tag = args.find((a) => !a.startsWith('--')) ?? 'berth/hostpath-plugin:dev';
      await build(info.host, tag);
      console.log(args.includes('--push') ? await push(info.host, tag, `${info.registry}/${tag}`) : tag);
      process.exit(0);
    }
    if (cmd === 'start' && dir) {
      const rig = await startDockerRig({ dir, detached: true });
      const { buildBusyboxImage: busybox, buildPauseImage: pause, tagAndPush: push } = await import('./docker-images.mjs');
      await busybox(rig.host);
      await push(rig.host, 'busybox:1.35', `${rig.registry}/busybox:1.35`);
      await pause(rig.host);
      const env = `DOCKER_HOST=${rig.host}\nREGISTRY=${rig.registry}\nSHARED_DIR=${rig.sharedDir}\n`;
      if (envFile) writeFileSync(envFile, env);
      process.stdout.write(env);
      process.exit(0);
    } else if (cmd === 'stop' && dir) {
      await stopDockerRigAt(dir);
    } else {
      console.error('usage: node scripts/docker-rig.mjs start DIR [ENV_FILE] | stop DIR');
      process.exit(2);
    }
  } catch (err) {
    console.error(`docker-rig: ${err.message}`);
    process.exit(1);
  }
}
