// The driver manager and ExternalTaskDriver against Berth's raw_exec driver
// served in-process as a DriverPlugin (BuiltinDriverPlugin), with real task
// processes. The launcher here is a fake whose "process" can be killed, so
// the restart and recovery paths run without the wire; the same paths over
// gRPC with real plugin processes are in test/driverplugins/.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { silentLogger } from '../../lib/index.js';
import {
  DriverPluginError,
  encodeConfig,
  type Capabilities,
  type CreateNetworkResult,
  type DriverPlugin,
  type NetworkIsolationSpec,
  type Spec,
} from '../../plugins/index.js';
import { Collect, DriverHarness, eventually } from '../../../test/support/client-drivers.js';
import { RawExecDriver, type TaskDriver } from '../drivers/index.js';
import { BuiltinDriverPlugin } from './builtin-driver-plugin.js';
import { DriverManager, type DriverPluginEntry, type LaunchedDriverPlugin } from './driver-manager.js';
import type { ExternalTaskDriver } from './external-task-driver.js';

// A stand-in for go-cty msgpack: these tests are about the manager, not the bytes.
const jsonCodec = {
  encode: (_schema: unknown, body: Record<string, unknown>): Uint8Array => Buffer.from(JSON.stringify(body)),
  decode: (bytes: Uint8Array): unknown => JSON.parse(Buffer.from(bytes).toString('utf8')),
};

/** A plugin "process": the driver in-process; kill() makes every call fail as a dead plugin's would. */
class FakeProcess implements LaunchedDriverPlugin {
  readonly driver: DriverPlugin;
  readonly inner: BuiltinDriverPlugin;
  readonly exited: Promise<unknown>;
  #exit!: () => void;
  dead = false;
  readonly #dying = new AbortController();

  constructor(berth: TaskDriver, make: (d: TaskDriver) => BuiltinDriverPlugin = (d) => new BuiltinDriverPlugin(d, { decodeTaskConfig: jsonCodec.decode })) {
    this.inner = make(berth);
    this.exited = new Promise<void>((r) => (this.#exit = r));
    const shutDown = (): DriverPluginError => new DriverPluginError('DRIVER_PLUGIN_SHUTDOWN', 'plugin shut down');
    const guard = <T>(call: () => T): T => {
      if (this.dead) throw shutDown();
      return call();
    };
    const inner = this.inner;
    const dying = this.#dying.signal;
    const isDead = (): boolean => this.dead;
    // Every call of a dead plugin fails at once; a call in flight when it dies fails then (as a closed channel does).
    this.driver = new Proxy(inner, {
      get(target, prop) {
        const v = Reflect.get(target, prop) as unknown;
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) =>
          guard(() => {
            const r = (v as (...a: unknown[]) => unknown).apply(target, args);
            if (r && typeof (r as Promise<unknown>).then === 'function') {
              return Promise.race([r, new Promise((_res, rej) => dying.addEventListener('abort', () => rej(shutDown()), { once: true }))]);
            }
            if (r && Symbol.asyncIterator in (r as object)) {
              return (async function* () {
                for await (const x of r as AsyncIterable<unknown>) {
                  if (isDead()) throw shutDown();
                  yield x;
                }
                if (isDead()) throw shutDown();
              })();
            }
            return r;
          });
      },
    }) as DriverPlugin;
  }

  kill(): void {
    this.dead = true;
    this.#dying.abort();
    void this.inner.shutdown();
    this.#exit();
  }

  stopped = false;

  async stop(): Promise<void> {
    this.stopped = true;
    this.kill();
  }
}

describe('driver plugin manager', () => {
  let h: DriverHarness;
  let manager: DriverManager | undefined;
  let launched: FakeProcess[];
  let failNext: string | undefined;
  let entry: DriverPluginEntry;
  let makePlugin: ((d: TaskDriver) => BuiltinDriverPlugin) | undefined;

  beforeEach(() => {
    h = new DriverHarness();
    launched = [];
    failNext = undefined;
    makePlugin = undefined;
    entry = { name: 'berth-raw-exec', file: '/nonexistent/berth-raw-exec', args: [] };
  });

  function build(encode: (schema: unknown, body: Record<string, unknown>) => Uint8Array = jsonCodec.encode): void {
    manager = new DriverManager({
      plugins: [entry],
      launch: async () => {
        if (failNext) throw new Error(failNext);
        // A plugin process keeps its executor state where the previous one did, as `berth driver serve` does.
        const p = new FakeProcess(new RawExecDriver({ stateDir: h.stateDir, cgroups: null }), makePlugin);
        launched.push(p);
        return p;
      },
      encodeConfig: encode,
      logger: silentLogger(),
      node: { name: 'node-1' },
      backoff: { maxAttempts: Infinity, initialDelayMs: 1, maxDelayMs: 5, multiplier: 2, jitter: 0 },
    });
  }

  afterEach(async () => {
    await manager?.stop();
    await h.cleanup();
  });

  async function started(): Promise<ExternalTaskDriver> {
    build();
    const { failed } = await (manager as DriverManager).start();
    assert.deepEqual(failed, []);
    const driver = (manager as DriverManager).drivers().get('raw_exec');
    assert.ok(driver, 'the plugin registers under its PluginInfo name');
    return driver;
  }

  it('runs a task through the plugin: its output lands in the log files the host made before StartTask', async () => {
    const driver = await started();
    const cfg = h.config('web', 'echo hello-from-plugin; echo oops >&2');
    const handle = await driver.startTask(cfg);
    assert.equal((handle as { version: number }).version, 2);
    const exit = await driver.waitTask(cfg.id);
    assert.equal(exit.exitCode, 0);
    assert.match(readFileSync(path.join(h.logDir, 'web.stdout.0'), 'utf8'), /hello-from-plugin/);
    assert.match(readFileSync(path.join(h.logDir, 'web.stderr.0'), 'utf8'), /oops/);
    assert.equal(driver.inspectTask(cfg.id).state, 'exited');
    await driver.destroyTask(cfg.id);
  });

  it('reports health and attributes from the fingerprint stream', async () => {
    const driver = await started();
    const info = await eventually('a healthy fingerprint', async () => {
      const i = await driver.fingerprint();
      return i.healthy ? i : undefined;
    });
    assert.equal(info.external, true);
    assert.equal(info.attributes?.['driver.raw_exec'], 'true');
  });

  it('a plugin killed while a task runs: calls fail with "plugin shut down", the plugin comes back and the task is recovered', async () => {
    const driver = await started();
    const cfg = h.config('sleeper', 'sleep 30');
    await driver.startTask(cfg);
    const waiting = driver.waitTask(cfg.id);
    (launched[0] as FakeProcess).kill();
    await assert.rejects(driver.taskStats(cfg.id), (err: Error & { code?: string }) => err.code === 'DRIVER_SHUT_DOWN' && /shut down/.test(err.message));
    const m = manager as DriverManager;
    await eventually('the plugin restarted', () => m.status()[0]?.state === 'running' && launched.length === 2);
    assert.equal(m.status()[0]?.restarts, 1);
    const stats = await driver.taskStats(cfg.id);
    assert.ok(stats.pids.length > 0, 'the restarted plugin knows the recovered task');
    await driver.stopTask(cfg.id, { timeoutMs: 2000 });
    const exit = await waiting;
    assert.equal(exit.signal, 'SIGTERM');
  });

  it('exec through the plugin streams output and gives the exit code', async () => {
    const driver = await started();
    const cfg = h.config('shell', 'sleep 30');
    await driver.startTask(cfg);
    const out = new Collect();
    const r = await driver.execTaskStreaming(cfg.id, { command: ['/bin/sh', '-c', 'echo in-task; exit 3'], stdout: out, stderr: out });
    assert.equal(r.exitCode, 3);
    assert.match(out.text, /in-task/);
    await driver.stopTask(cfg.id, { timeoutMs: 2000 });
  });

  it('a plugin that fails to launch is reported by name and the manager keeps going', async () => {
    failNext = 'the handshake line was garbage';
    build();
    const m = manager as DriverManager;
    const { failed } = await m.start();
    assert.equal(failed.length, 1);
    assert.match(failed[0]?.error ?? '', /berth-raw-exec.*garbage/);
    // It stands as an unhealthy driver whose reason names it: no job is placed on it, no built-in runs them instead.
    const standIn = m.drivers().get('berth-raw-exec');
    assert.ok(standIn, 'the failed plugin still names a driver');
    const info = await standIn.fingerprint();
    assert.equal(info.healthy, false);
    assert.match(info.healthReason, /driver plugin berth-raw-exec failed: .*garbage/);
  });

  it('a task whose config does not fit fails to start and is not retried', async () => {
    const driver = await started();
    const cfg = { ...h.config('bad', 'true'), driverConfig: { args: ['x'] } };
    await assert.rejects(driver.startTask(cfg), (err: Error & { recoverable?: boolean }) => err.recoverable === false && /command/.test(err.message));
  });

  it('a plugin config its schema refuses stops the start, naming its line in the agent config and the field', async () => {
    entry = { ...entry, config: { bogus: true }, locate: (p) => (p.startsWith('config') ? 'client.hcl:7:5' : undefined) };
    build((schema, body) => encodeConfig(schema as Spec | undefined, body, { path: 'config' }));
    const m = manager as DriverManager;
    await assert.rejects(m.start(), (err: Error & { code?: string }) => err.code === 'DRIVER_MANAGER_CONFIG_INVALID' && /^client\.hcl:7:5: plugin "berth-raw-exec" config: .*bogus/.test(err.message));
    assert.equal(m.status()[0]?.state, 'stopped');
    assert.equal(launched[0]?.stopped, true, 'the plugin process is stopped');
  });

  it('a driver that must initiate the network makes and removes the group namespace (CreateNetwork/DestroyNetwork)', async () => {
    const calls: string[] = [];
    makePlugin = (d) =>
      new (class extends BuiltinDriverPlugin {
        override async capabilities(): Promise<Capabilities> {
          return { ...(await super.capabilities()), mustInitiateNetwork: true };
        }
        override async createNetwork(allocId: string): Promise<CreateNetworkResult> {
          calls.push(`create ${allocId}`);
          return { spec: { mode: 'group', path: `/var/run/netns/${allocId}`, labels: {} }, created: true };
        }
        override async destroyNetwork(allocId: string, spec: NetworkIsolationSpec | undefined): Promise<void> {
          calls.push(`destroy ${allocId} ${spec?.path}`);
        }
      })(d, { decodeTaskConfig: jsonCodec.decode });
    const driver = await started();
    assert.equal(driver.capabilities.mustInitiateNetwork, true);
    assert.deepEqual(await driver.createNetwork('alloc-9', 'alloc-9'), { path: '/var/run/netns/alloc-9', labels: {} });
    await driver.destroyNetwork('alloc-9', '/var/run/netns/alloc-9');
    assert.deepEqual(calls, ['create alloc-9', 'destroy alloc-9 /var/run/netns/alloc-9']);
  });
});
