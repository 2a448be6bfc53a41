// The docker driver against a real dockerd and registry: the rig of
// scripts/run-tests.mjs (BERTH_TEST_DOCKER_HOST, BERTH_TEST_DOCKER_REGISTRY);
// without one these tests are skipped, saying so. The image is made here
// from Debian's busybox-static (docker import, as the rig's own builder
// does) and pushed to the registry, so tasks name it as users name theirs.

import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import Dockerode from 'dockerode';
import { type DriverError } from '../driver-error.js';
import type { TaskConfig } from '../task-driver.js';
import { ManualClock, silentLogger } from '../../../lib/index.js';
import { ImageCollector } from './_images.js';
import { DockerDriver, type DockerTaskHandle } from './docker-driver.js';
import { busyboxImage, importBusybox } from '../../../../test/support/busybox-image.js';

const HOST = process.env['BERTH_TEST_DOCKER_HOST'];
const REGISTRY = process.env['BERTH_TEST_DOCKER_REGISTRY'];
const skip = HOST && REGISTRY ? undefined : 'no docker rig (BERTH_TEST_DOCKER_HOST/BERTH_TEST_DOCKER_REGISTRY; scripts/run-tests.mjs starts one)';

function until<T>(what: string, f: () => T | undefined | Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  return (async () => {
    for (;;) {
      const v = await f();
      if (v !== undefined && v !== false) return v;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
}

function httpGet(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/', timeout: 2000 }, (res) => {
      let b = '';
      res.on('data', (c: Buffer) => (b += c.toString()));
      res.on('end', () => resolve(b));
    })
      .on('error', reject)
      .end();
  });
}

describe('docker driver', { skip }, () => {
  const docker = new Dockerode({ socketPath: (HOST ?? '').replace(/^unix:\/\//, '') });
  let image = '';
  let work = '';
  let n = 0;
  const drivers: DockerDriver[] = [];
  const newDriver = (pluginConfig: Record<string, unknown> = {}, stateDir = path.join(work, 'state')): DockerDriver => {
    const d = new DockerDriver({ stateDir, pluginConfig: { endpoint: HOST, ...pluginConfig } });
    drivers.push(d);
    return d;
  };

  /** A task's config and directories, as the task runner gives them. */
  const task = (config: Record<string, unknown>, extra: Partial<TaskConfig> = {}): TaskConfig => {
    const allocId = `0000000${++n}-aaaa-bbbb-cccc-${String(Date.now()).padStart(12, '0')}`.slice(-36);
    const allocDir = path.join(work, allocId);
    const taskName = 'web';
    for (const d of ['alloc/logs', 'alloc/data', `${taskName}/local`, `${taskName}/secrets`]) mkdirSync(path.join(allocDir, d), { recursive: true });
    return {
      id: `${allocId}.${taskName}.1`,
      allocId,
      taskName,
      command: '',
      args: [],
      env: { NOMAD_ALLOC_DIR: '/alloc', NOMAD_TASK_DIR: '/local', NOMAD_SECRETS_DIR: '/secrets', NOMAD_TASK_NAME: taskName },
      taskDir: path.join(allocDir, taskName, 'local'),
      allocDir,
      secretsDir: path.join(allocDir, taskName, 'secrets'),
      mounts: [],
      logs: { disabled: false, dir: path.join(allocDir, 'alloc/logs'), maxFiles: 3, maxFileSizeMb: 1 },
      killTimeoutMs: 2000,
      resources: { cpuMhz: 100, memoryMb: 64 },
      driverConfig: { image, ...config },
      jobId: 'web-job',
      groupName: 'g',
      ...extra,
    };
  };
  const stdout = (cfg: TaskConfig): string => {
    const f = path.join(cfg.logs.dir, `${cfg.taskName}.stdout.0`);
    return existsSync(f) ? readFileSync(f, 'utf8') : '';
  };
  const containersOf = async (allocId: string): Promise<string[]> =>
    (await docker.listContainers({ all: true, filters: { label: [`com.hashicorp.nomad.alloc_id=${allocId}`] } })).map((c) => c.Names[0] ?? '');

  before(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'berth-docker-'));
    image = await busyboxImage(docker, REGISTRY ?? '');
  });

  after(async () => {
    for (const d of drivers) await d.shutdown();
    const left = await docker.listContainers({ all: true, filters: { label: ['com.hashicorp.nomad.job_id=web-job'] } });
    for (const c of left) await docker.getContainer(c.Id).remove({ force: true });
    rmSync(work, { recursive: true, force: true });
  });

  test('fingerprint: healthy with the daemon version and what the agent allows; unhealthy naming the endpoint when dockerd is not there', async () => {
    const info = await newDriver({ allow_privileged: true, volumes: [{ enabled: true }] }).fingerprint();
    assert.equal(info.healthy, true, info.healthReason);
    assert.match(info.attributes?.['driver.docker.version'] ?? '', /^\d+\.\d+/);
    assert.equal(info.attributes?.['driver.docker.privileged.enabled'], 'true');
    assert.equal(info.attributes?.['driver.docker.volumes.enabled'], 'true');
    assert.equal(info.mustInitiateNetwork, true);
    const none = await new DockerDriver({ stateDir: path.join(work, 'x'), pluginConfig: { endpoint: 'unix:///nonexistent/docker.sock' } }).fingerprint();
    assert.equal(none.healthy, false);
    assert.match(none.healthReason, /Failed to connect to docker daemon at unix:\/\/\/nonexistent\/docker.sock/);
  });

  test('a wrong plugin config is refused naming the field', () => {
    assert.throws(() => new DockerDriver({ stateDir: work, pluginConfig: { endpoint: HOST, allow_privileged: 'yes', tls: [{}] } }), (err: DriverError) => {
      assert.match(err.message, /config\.allow_privileged: must be a bool/);
      assert.match(err.message, /config\.tls: is not supported/);
      return true;
    });
  });

  test('a task pulls its image by registry name (progress in events), sees /alloc, /local, /secrets and its env, and its output lands in the log files', async () => {
    await docker.getImage(image).remove().catch(() => undefined);
    const driver = newDriver();
    const cfg = task({ command: 'sh', args: ['-c', 'set -- $(ls -d /alloc/logs /local /secrets); echo "dirs $* task=$NOMAD_TASK_NAME path=$PATH"; echo oops >&2; exit 3'] });
    writeFileSync(path.join(cfg.taskDir, 'hello'), 'hi');
    const events: string[] = [];
    let spawned: unknown;
    const handle = await driver.startTask(cfg, { onEvent: (e) => events.push(`${e.type}: ${e.message}`), onSpawned: (h) => (spawned = h) });
    assert.deepEqual(spawned, handle);
    assert.ok(events.some((e) => e.startsWith(`Driver: Downloading image ${image}`)), events.join('\n'));
    const exit = await driver.waitTask(cfg.id);
    assert.equal(exit.exitCode, 3);
    assert.equal(stdout(cfg), `dirs /alloc/logs /local /secrets task=web path=/usr/sbin:/usr/bin:/sbin:/bin\n`);
    assert.equal(readFileSync(path.join(cfg.logs.dir, 'web.stderr.0'), 'utf8'), 'oops\n');
    const [c] = await docker.listContainers({ all: true, filters: { label: [`com.hashicorp.nomad.alloc_id=${cfg.allocId}`] } });
    assert.equal(c?.Labels['com.hashicorp.nomad.task_name'], 'web');
    assert.equal(c?.Labels['com.hashicorp.nomad.job_id'], 'web-job');
    await driver.destroyTask(cfg.id);
    assert.deepEqual(await containersOf(cfg.allocId), []);
  });

  test('an image that does not exist fails the start with the pull error, not to be retried, leaving no container', async () => {
    const driver = newDriver();
    const cfg = task({ image: `${REGISTRY}/berth-driver-test/nope:1` });
    await assert.rejects(driver.startTask(cfg), (err: DriverError) => {
      assert.equal(err.code, 'DRIVER_START_FAILED');
      assert.match(err.message, /failed to pull image .*nope:1: .*(not found|unknown)/i);
      assert.equal(err.recoverable, false);
      return true;
    });
    assert.deepEqual(await containersOf(cfg.allocId), []);
  });

  test('privileged and host volumes are refused unless the agent allows them; allowed, the container is privileged', async () => {
    const strict = newDriver();
    await assert.rejects(strict.startTask(task({ privileged: true, command: 'true' })), /privileged mode is disabled on this agent/);
    await assert.rejects(strict.startTask(task({ volumes: ['/etc:/host-etc'], command: 'true' })), /volumes are not enabled on this agent/);
    await assert.rejects(strict.startTask(task({ cap_add: ['SYS_ADMIN'], command: 'true' })), /capabilities on this agent \(allow_caps\): sys_admin/);
    const open = newDriver({ allow_privileged: true, volumes: [{ enabled: true }] });
    const cfg = task({ privileged: true, volumes: ['/etc/hostname:/host-hostname:ro'], command: 'sh', args: ['-c', 'cat /host-hostname; ls /dev | grep -c . '] });
    await open.startTask(cfg);
    assert.equal((await open.waitTask(cfg.id)).exitCode, 0);
    assert.equal(stdout(cfg).split('\n')[0], readFileSync('/etc/hostname', 'utf8').trim());
    const [c] = await docker.listContainers({ all: true, filters: { label: [`com.hashicorp.nomad.alloc_id=${cfg.allocId}`] } });
    assert.equal((await docker.getContainer(c?.Id ?? '').inspect()).HostConfig.Privileged, true);
    await open.destroyTask(cfg.id);
  });

  test('ports = ["http"] publishes the allocation port on its host IP; stop sends SIGTERM then removes nothing until destroy', async () => {
    const driver = newDriver();
    const port = 20000 + Math.floor(Math.random() * 10000);
    const cfg = task({ command: 'httpd', args: ['-f', '-p', '8080', '-h', '/local'], ports: ['http'] }, { ports: [{ label: 'http', value: port, to: 8080, hostIp: '127.0.0.1' }] });
    writeFileSync(path.join(cfg.taskDir, 'index.html'), 'hello from the container\n');
    await driver.startTask(cfg);
    assert.equal(await until('httpd', () => httpGet(port).catch(() => undefined)), 'hello from the container\n');
    assert.equal(driver.inspectTask(cfg.id).state, 'running');
    await driver.stopTask(cfg.id, { timeoutMs: 2000 });
    assert.equal(driver.inspectTask(cfg.id).state, 'exited');
    assert.equal((await containersOf(cfg.allocId)).length, 1);
    await driver.destroyTask(cfg.id);
    assert.deepEqual(await containersOf(cfg.allocId), []);
  });

  test('signals reach the task; exec runs in it with a TTY; stats come from its cgroup', async () => {
    const driver = newDriver();
    const cfg = task({ command: 'sh', args: ['-c', 'trap "echo got-usr1" USR1; while true; do sleep 0.1; done'] });
    await driver.startTask(cfg);
    await until('trap set', async () => (await driver.execTaskStreaming(cfg.id, { command: ['true'], stdout: new PassThrough() })).exitCode === 0 || undefined);
    await driver.signalTask(cfg.id, 'SIGUSR1');
    await until('the trap ran', () => stdout(cfg).includes('got-usr1') || undefined);
    await assert.rejects(driver.signalTask(cfg.id, 'SIGNOPE'), /unknown signal/);

    let out = '';
    const sink = new Writable({ write: (c: Buffer, _e, cb) => ((out += c.toString()), cb()) });
    // Printed after a pause: the terminal's output must outlast a caller that gave no stdin.
    const r = await driver.execTaskStreaming(cfg.id, { command: ['sh', '-c', 'sleep 0.3; tty; exit 7'], tty: true, stdout: sink, size: { cols: 100, rows: 30 } });
    assert.equal(r.exitCode, 7);
    assert.match(out, /\/dev\/pts\/\d+/);
    // A TTY session's stdin ends as a terminal's does, with Ctrl-D: `cat` reads its line, then ends.
    let typed = '';
    const rt = await driver.execTaskStreaming(cfg.id, { command: ['sh', '-c', 'sleep 0.3; cat; echo done-$?'], tty: true, stdin: ['hello\n'], stdout: new Writable({ write: (c: Buffer, _e, cb) => ((typed += c.toString()), cb()) }) });
    assert.equal(rt.exitCode, 0);
    assert.match(typed, /hello\r?\n(.|\n)*done-0/);
    let piped = '';
    const r2 = await driver.execTaskStreaming(cfg.id, { command: ['cat'], stdin: ['through ', 'stdin'], stdout: new Writable({ write: (c: Buffer, _e, cb) => ((piped += c.toString()), cb()) }) });
    assert.equal(r2.exitCode, 0);
    assert.equal(piped, 'through stdin');

    const s = await driver.taskStats(cfg.id);
    assert.ok(s.memory.usageBytes > 0);
    assert.ok(s.cpu.totalMs >= 0);
    await driver.stopTask(cfg.id, { timeoutMs: 1000, signal: 'SIGKILL' });
    await driver.destroyTask(cfg.id);
  });

  test('after an agent restart the task is recovered by its handle, its log resumed without repeating lines; containers no task owns are reaped', async () => {
    const stateDir = path.join(work, 'restart-state');
    const first = newDriver({}, stateDir);
    const cfg = task({ command: 'sh', args: ['-c', 'i=0; while [ $i -lt 40 ]; do echo line-$i; i=$((i+1)); sleep 0.05; done; while [ ! -f /local/go ]; do sleep 0.05; done; cat /local/go; echo end'] });
    const orphan = task({ command: 'sleep', args: ['600'] });
    const handle = (await first.startTask(cfg)) as DockerTaskHandle;
    await first.startTask(orphan);
    await until('some output', () => stdout(cfg).includes('line-5') || undefined);
    await first.shutdown(); // the agent dies; the containers run on
    await until('more output written while no agent ran', async () => (await docker.getContainer(handle.containerId).logs({ stdout: true })).toString().includes('line-39') || undefined);
    writeFileSync(path.join(cfg.taskDir, 'go'), 'released\n');

    const second = newDriver({}, stateDir);
    const recovered = await second.recoverTask(JSON.parse(JSON.stringify(handle)) as DockerTaskHandle);
    assert.equal((recovered as DockerTaskHandle).containerId, handle.containerId);
    assert.deepEqual(await second.reapOrphans(new Set([`${cfg.allocId}.${cfg.taskName}`])), [`${orphan.allocId}.web`]);
    assert.deepEqual(await containersOf(orphan.allocId), []);
    assert.equal((await second.waitTask(cfg.id)).exitCode, 0);
    const lines = stdout(cfg).trim().split('\n');
    assert.deepEqual(lines, [...Array.from({ length: 40 }, (_, i) => `line-${i}`), 'released', 'end']);
    await second.destroyTask(cfg.id);

    await assert.rejects(second.recoverTask(handle), (err: DriverError) => err.code === 'DRIVER_TASK_NOT_RECOVERABLE' && /is gone/.test(err.message));
  });

  test('a group network: a pause container holds the namespace, tasks join it, destroyNetwork removes it', async () => {
    // A pause image of our own (busybox sleeping), named by the plugin config's infra_image.
    await importBusybox(docker, 'berth-driver-test/pause', ['sleep', '2147483647']);
    const driver = newDriver({ infra_image: 'berth-driver-test/pause:1' });
    const cfg = task({ command: 'sh', args: ['-c', 'hostname; cat /proc/net/dev | grep -c :'] });
    const { path: netns } = await driver.createNetwork(cfg.allocId, 'alloc-host');
    assert.ok(netns.length > 0);
    assert.deepEqual(await driver.createNetwork(cfg.allocId, 'alloc-host'), { path: netns }, 'repeatable');
    await driver.startTask({ ...cfg, networkNamespacePath: netns, networkMode: 'none' });
    assert.equal((await driver.waitTask(cfg.id)).exitCode, 0);
    // Only the loopback interface: the pause container's namespace of mode none, shared.
    assert.equal(stdout(cfg), 'alloc-host\n1\n');
    await driver.destroyTask(cfg.id);
    await driver.destroyNetwork(cfg.allocId);
    await driver.destroyNetwork(cfg.allocId);
    assert.deepEqual(await containersOf(cfg.allocId), []);
  });

  test('gc.image: an image no task uses is removed image_delay after the last one let go, unless taken up again', async () => {
    await importBusybox(docker, 'berth-driver-test/gc', ['sh']);
    const id = (await docker.getImage('berth-driver-test/gc:1').inspect()).Id;
    const present = async (): Promise<boolean> => docker.getImage(id).inspect().then(() => true, () => false);
    const clock = new ManualClock(0);
    const gc = new ImageCollector({ docker: async () => docker, clock, logger: silentLogger(), enabled: true, delayMs: 180_000 });
    gc.acquire(id, 't1');
    gc.acquire(id, 't2');
    gc.release(id, 't1');
    await clock.advance(180_000);
    assert.equal(await present(), true, 'another task still uses it');
    gc.release(id, 't2');
    await clock.advance(179_000);
    gc.acquire(id, 't3');
    await clock.advance(10_000);
    assert.equal(await present(), true, 'taken up again before the delay ran out');
    gc.release(id, 't3');
    await clock.advance(180_000);
    await until('the image removed', async () => !(await present()) || undefined);
    gc.stop();
  });
});
