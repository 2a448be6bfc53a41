import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FIXTURE_START_MS, pluginDir, tsPlugin } from '../../../test/support/plugin-fixtures.js';
import { eventually } from '../../../test/support/eventually.js';
import { encodeConfig, hclspec } from '../hclspec/index.js';
import { DriverPluginError, launchDriverPlugin, type LaunchedDriverPlugin, type TaskConfig } from './index.js';

// The fake driver (test/support/fake-driver-plugin.ts) served by Berth's serve
// side in its own process, hosted by Berth's host side: every RPC crosses a
// real unix socket.
const FAKE = `
import { serveDriverPlugin } from '@berth/plugins/index.ts';
import { FakeDriver } from '@berth/../test/support/fake-driver-plugin.ts';
const server = await serveDriverPlugin(new FakeDriver());
await server.stopped;
process.exit(0);
`;

function taskConfig(name: string, over: Partial<TaskConfig> = {}): TaskConfig {
  return {
    id: `alloc1/${name}/0001`,
    jobName: 'web',
    jobId: 'web',
    taskGroupName: 'g',
    parentJobId: '',
    name,
    namespace: 'default',
    nodeName: 'node1',
    nodeId: 'n-1',
    env: { GREETING: 'hi' },
    deviceEnv: {},
    resources: {
      allocated: { cpuShares: 500, memoryMb: 256, memoryMaxMb: 512, networks: [] },
      linux: { cpuPeriod: 100000, cpuQuota: 50000, cpuShares: 500, memoryLimitBytes: 268435456, oomScoreAdj: 0, cpusetCpus: '', cpusetCgroupPath: '/sys/fs/cgroup/berth/x', percentTicks: 0.1 },
      ports: [{ label: 'http', value: 24000, to: 8080, hostIp: '127.0.0.1' }],
    },
    devices: [],
    mounts: [{ taskPath: '/data', hostPath: '/var/lib/berth/csi/vol1', readonly: false, propagationMode: 'host-to-task', selinuxLabel: '', requestName: 'data' }],
    user: 'nobody',
    allocDir: '/var/lib/berth/alloc/alloc1',
    msgpackDriverConfig: encodeConfig(hclspec.object({ command: hclspec.attr('command', 'string', true), args: hclspec.attr('args', 'list(string)') }), { command: '/bin/app', args: ['-v'] }),
    stdoutPath: '/var/lib/berth/alloc/alloc1/alloc/logs/web.stdout.0',
    stderrPath: '/var/lib/berth/alloc/alloc1/alloc/logs/web.stderr.0',
    allocId: 'alloc1',
    networkIsolation: { mode: 'group', path: '/var/run/netns/alloc1', labels: {} },
    ...over,
  };
}

const isShutdown = (err: unknown): boolean => {
  assert.ok(err instanceof DriverPluginError, String(err));
  assert.equal(err.code, 'DRIVER_PLUGIN_SHUTDOWN', err.message);
  assert.match(err.message, /plugin shut down/);
  return true;
};

describe('an external driver plugin, every RPC over a real socket', () => {
  const tmp = pluginDir();
  let file = '';
  let p: LaunchedDriverPlugin;
  before(async () => {
    file = tsPlugin(tmp.dir, 'fake-driver', FAKE);
    p = await launchDriverPlugin({ path: file, startTimeoutMs: FIXTURE_START_MS });
  });
  after(async () => {
    await p?.process.shutdown();
    tmp.remove();
  });

  it('describes itself and takes its config as go-cty msgpack (PluginInfo, ConfigSchema, SetConfig)', async () => {
    assert.deepEqual(p.info, { type: 'driver', pluginApiVersions: ['v0.1.0'], pluginVersion: '0.0.1', name: 'fake' });
    const schema = await p.driver.configSchema();
    assert.ok(schema);
    const bytes = encodeConfig(schema, { enabled: true });
    await p.driver.setConfig({ apiVersion: 'v0.1.0', pluginConfig: bytes, agentConfig: { driver: { clientMinPort: 14000, clientMaxPort: 14512 } } });
    const first = await firstOf(p.driver.fingerprint());
    const seen = JSON.parse(first.attributes['driver.fake.config']?.string ?? 'null') as Record<string, unknown>;
    assert.equal(seen.hex, '82a7656e61626c6564c3aa6e6f5f6367726f757073c2', 'the plugin got the bytes the issue gives');
    assert.deepEqual(seen.decoded, { enabled: true, no_cgroups: false });
    assert.deepEqual(seen.agent, { driver: { clientMinPort: 14000, clientMaxPort: 14512 } });
    assert.equal(seen.apiVersion, 'v0.1.0');
  });

  it('reports its task schema, capabilities and a healthy fingerprint (TaskConfigSchema, Capabilities, Fingerprint)', async () => {
    const schema = await p.driver.taskConfigSchema();
    assert.deepEqual(schema, hclspec.object({ command: hclspec.attr('command', 'string', true), args: hclspec.attr('args', 'list(string)') }));
    assert.deepEqual(await p.driver.capabilities(), {
      sendSignals: true, exec: true, fsIsolation: 'chroot', netIsolationModes: ['host', 'group', 'task'], mustInitiateNetwork: true, mountConfigs: 'all', disableLogCollection: false, dynamicWorkloadUsers: true,
    });
    const ac = new AbortController();
    const fp = await firstOf(p.driver.fingerprint({ signal: ac.signal }));
    ac.abort();
    assert.equal(fp.health, 'healthy');
    assert.deepEqual(fp.attributes['driver.fake'], { bool: true });
    assert.deepEqual(fp.attributes['driver.fake.cores'], { int: 4 });
    assert.deepEqual(fp.attributes['driver.fake.load'], { float: 0.5, unit: 'ratio' });
  });

  it('starts, inspects, signals, execs, stops and destroys a task (StartTask ... DestroyTask, TaskEvents, TaskStats)', async () => {
    const events = p.driver.taskEvents();
    const eventIter = events[Symbol.asyncIterator]();
    const nextEvent = eventIter.next();
    const cfg = taskConfig('web');
    const { handle, network } = await p.driver.startTask(cfg);
    assert.deepEqual(network, { portMap: { http: 8080 }, ip: '10.0.0.2', autoAdvertise: true });
    assert.equal(handle.version, 1);
    assert.equal(handle.state, 'running');
    assert.deepEqual(handle.config, cfg, 'the task config survives the round trip through the plugin');

    const ev = (await nextEvent).value;
    assert.equal(ev.message, 'Started by the fake driver');
    assert.equal(ev.taskId, cfg.id);
    assert.deepEqual(ev.annotations, { fake: 'yes' });
    await eventIter.return?.();

    const status = await p.driver.inspectTask(cfg.id);
    assert.equal(status.state, 'running');
    assert.deepEqual(JSON.parse(status.driverAttributes.driverConfig as string), { command: '/bin/app', args: ['-v'] });
    assert.deepEqual(JSON.parse(status.driverAttributes.mounts as string), cfg.mounts, 'volume mounts reach the driver with their propagation mode');
    assert.deepEqual(JSON.parse(status.driverAttributes.env as string), { GREETING: 'hi' });
    assert.equal(status.driverAttributes.user, 'nobody');
    assert.equal(status.driverAttributes.logs, `${cfg.stdoutPath} ${cfg.stderrPath}`);
    assert.deepEqual(status.networkOverride, { portMap: { http: 8080 }, ip: '10.0.0.2', autoAdvertise: true });

    const ac = new AbortController();
    const samples = [];
    for await (const s of p.driver.taskStats(cfg.id, 10, { signal: ac.signal })) {
      samples.push(s);
      if (samples.length === 2) ac.abort();
    }
    assert.equal(samples.length, 2, 'the stream ends quietly when the caller aborts');
    assert.equal(samples[1]?.resourceUsage.memory?.rss, 2048);
    assert.deepEqual(samples[0]?.resourceUsage.cpu?.measured, ['percent', 'total_ticks']);
    assert.equal(samples[0]?.pids['4242']?.memory?.rss, 1024);

    await p.driver.signalTask(cfg.id, 'SIGHUP');
    const ran = await p.driver.execTask(cfg.id, ['echo', 'x'], 5000);
    assert.equal(Buffer.from(ran.stdout).toString(), 'ran echo x within 5000');
    assert.equal(Buffer.from(ran.stderr).toString(), 'warn');
    assert.deepEqual(ran.exitResult, { exitCode: 3, signal: 0, oomKilled: false });

    const waiting = p.driver.waitTask(cfg.id);
    await p.driver.stopTask(cfg.id, 2500, 'SIGTERM');
    assert.deepEqual(await waiting, { exitCode: 0, signal: 15, oomKilled: false });
    const stopped = await p.driver.inspectTask(cfg.id);
    assert.equal(stopped.state, 'exited');
    assert.equal(stopped.driverAttributes.stopTimeoutMs, '2500');
    assert.equal(stopped.driverAttributes.stopSignal, 'SIGTERM');
    assert.equal(stopped.driverAttributes.lastSignal, 'SIGHUP');
    assert.deepEqual(stopped.exitResult, { exitCode: 0, signal: 15, oomKilled: false });

    await p.driver.destroyTask(cfg.id, false);
    await assert.rejects(p.driver.inspectTask(cfg.id), (err: unknown) => err instanceof DriverPluginError && err.code === 'DRIVER_PLUGIN_TASK_NOT_FOUND');
  });

  it('recovers a task from its persisted handle (RecoverTask)', async () => {
    const { handle } = await p.driver.startTask(taskConfig('db'));
    await p.driver.destroyTask(handle.config.id, true);
    await p.driver.recoverTask(handle);
    const status = await p.driver.inspectTask(handle.config.id);
    assert.equal(status.driverAttributes.recovered, 'true');
    assert.deepEqual(JSON.parse(status.driverAttributes.recoveredState as string), { pid: 4242, command: '/bin/app' });
  });

  it('reads StartTask failures with the recoverable detail (the restart policy decides from it)', async () => {
    await assert.rejects(p.driver.startTask(taskConfig('fail-recoverable')), (err: unknown) => {
      assert.ok(err instanceof DriverPluginError);
      assert.equal(err.code, 'DRIVER_PLUGIN_FAILED');
      assert.equal(err.recoverable, true);
      assert.match(err.message, /image pull timed out/);
      return true;
    });
    await assert.rejects(p.driver.startTask(taskConfig('fail-fatal')), (err: unknown) => err instanceof DriverPluginError && err.recoverable === false && /no such image/.test(err.message));
  });

  it('streams an interactive exec both ways (ExecTaskStreaming)', async () => {
    const { handle } = await p.driver.startTask(taskConfig('shell'));
    const out: string[] = [];
    const err: string[] = [];
    async function* stdin(): AsyncIterable<Uint8Array> {
      yield Buffer.from('hello ');
      yield Buffer.from('world');
    }
    async function* resize(): AsyncIterable<{ height: number; width: number }> {
      yield { height: 24, width: 80 };
    }
    const exit = await p.driver.execTaskStreaming(handle.config.id, {
      command: ['/bin/sh'],
      tty: true,
      stdin: stdin(),
      resize: resize(),
      stdout: (d) => out.push(Buffer.from(d).toString()),
      stderr: (d) => err.push(Buffer.from(d).toString()),
    });
    assert.equal(exit.exitCode, 7);
    assert.equal(out.join(''), 'ready /bin/sh tty=true\nHELLO WORLD');
    assert.deepEqual(err, ['size 80x24\n']);
  });

  it('creates and destroys the group network for drivers that must (CreateNetwork, DestroyNetwork)', async () => {
    const net = await p.driver.createNetwork('alloc9', { hostname: 'web-1' });
    assert.deepEqual(net, { spec: { mode: 'group', path: '/var/run/netns/alloc9', labels: { by: 'fake' }, hostsConfig: { hostname: 'web-1', address: '10.0.0.2' } }, created: true });
    await p.driver.destroyNetwork('alloc9', net.spec);
  });
});

describe('a driver plugin that dies (kill -9)', () => {
  const tmp = pluginDir();
  let file = '';
  before(() => {
    file = tsPlugin(tmp.dir, 'fake-driver', FAKE);
  });
  after(() => tmp.remove());

  const kill = (p: LaunchedDriverPlugin): void => void process.kill(p.process.pid as number, 'SIGKILL');

  it('during a TaskStats stream: the stream fails with "plugin shut down", then every call does at once', async () => {
    const p = await launchDriverPlugin({ path: file, startTimeoutMs: FIXTURE_START_MS });
    const { handle } = await p.driver.startTask(taskConfig('web'));
    let seen = 0;
    await assert.rejects(
      (async () => {
        for await (const _ of p.driver.taskStats(handle.config.id, 10)) {
          if (++seen === 1) kill(p);
        }
      })(),
      isShutdown,
    );
    assert.ok(seen >= 1);
    await p.process.exited;
    await assert.rejects(p.driver.capabilities(), isShutdown);
    await assert.rejects(p.driver.inspectTask(handle.config.id), isShutdown);
    await assert.rejects(firstOf(p.driver.taskStats(handle.config.id, 10)), isShutdown);
    await p.process.shutdown();
  });

  it('during StartTask: the start fails with a recoverable "plugin shut down"', async () => {
    const p = await launchDriverPlugin({ path: file, startTimeoutMs: FIXTURE_START_MS });
    const starting = p.driver.startTask(taskConfig('hang'));
    // The plugin has the call once InspectTask of another task answers after it (calls are served in order).
    await assert.rejects(p.driver.inspectTask('nope'), (err: unknown) => (err as DriverPluginError).code === 'DRIVER_PLUGIN_TASK_NOT_FOUND');
    kill(p);
    await assert.rejects(starting, (err: unknown) => isShutdown(err) && (err as DriverPluginError).recoverable === true);
    await p.process.shutdown();
  });

  it('during exec streaming: the exec fails with "plugin shut down"', async () => {
    const p = await launchDriverPlugin({ path: file, startTimeoutMs: FIXTURE_START_MS });
    const { handle } = await p.driver.startTask(taskConfig('web'));
    const out: string[] = [];
    const execing = p.driver.execTaskStreaming(handle.config.id, { command: ['hang'], tty: false, stdout: (d) => out.push(Buffer.from(d).toString()), stderr: () => undefined });
    await eventually('the exec running in the plugin', () => out.join('').includes('ready hang'));
    kill(p);
    await assert.rejects(execing, isShutdown);
    await p.process.shutdown();
  });
});

async function firstOf<T>(it: AsyncIterable<T>): Promise<T> {
  for await (const v of it) return v;
  throw new Error('stream ended empty');
}

describe('a plugin that is not a driver', () => {
  const tmp = pluginDir();
  after(() => tmp.remove());

  it('is refused after PluginInfo, and stopped', async () => {
    const file = tsPlugin(
      tmp.dir,
      'device-plugin',
      `
import { servePlugin, NOMAD_HANDSHAKE } from '@berth/plugins/index.ts';
import { basePluginService } from '@berth/plugins/base/index.ts';
import { BasePluginDefinition } from '@berth/gen/nomad/plugins/base/proto/base.ts';
const impl = { pluginInfo: async () => ({ type: 'device', pluginApiVersions: ['v0.1.0'], pluginVersion: '1', name: 'gpu' }), configSchema: async () => undefined, setConfig: async () => {} };
const server = await servePlugin({ handshake: NOMAD_HANDSHAKE, register: (s) => s.add(BasePluginDefinition, basePluginService(impl)) });
await server.stopped;
process.exit(0);
`,
    );
    await assert.rejects(launchDriverPlugin({ path: file, startTimeoutMs: FIXTURE_START_MS }), (err: unknown) => err instanceof DriverPluginError && err.code === 'DRIVER_PLUGIN_INVALID' && /is a device plugin, not a driver/.test(err.message));
  });
});
