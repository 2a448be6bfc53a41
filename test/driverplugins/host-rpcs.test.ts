// The host side against Berth's own raw_exec served as a plugin process
// (`berth driver serve raw_exec`, gRPC on a unix socket): every RPC of the
// base and driver services, and the faults a host must survive: the plugin
// killed with SIGKILL while a StartTask, a TaskStats stream or an exec is in
// flight. Each in-flight call is made certain by stopping the plugin
// (SIGSTOP) before the call and killing it after: the call then fails with
// "plugin shut down" instead of hanging, and so does every later call.

import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { silentLogger } from '../../src/lib/index.js';
import { encodeConfig, launchDriverPlugin, type DriverPluginClient, type TaskConfig } from '../../src/plugins/index.js';
import type { PluginProcess } from '../../src/plugins/goplugin/index.js';
import { BERTH } from '../agent/_agent.js';
import { pidsWith, until } from '../support/runtime-cluster.js';

const MARKER = `dp-host-rpcs-${process.pid}`;
const isShutDown = (err: unknown): boolean => (err as { code?: string }).code === 'DRIVER_PLUGIN_SHUTDOWN';

let dir = '';
let wrapper = '';

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'bdh-'));
  wrapper = path.join(dir, 'raw_exec');
  writeFileSync(wrapper, `#!/bin/sh\nexec '${process.execPath}' '${BERTH}' driver serve raw_exec --log-level warn --state-dir '${path.join(dir, 'st')}'\n`);
  chmodSync(wrapper, 0o755);
});

after(() => {
  for (const pid of pidsWith(MARKER)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  rmSync(dir, { recursive: true, force: true, maxRetries: 10 }); // a task state dir may still be going away
});

async function launch(): Promise<{ driver: DriverPluginClient; proc: PluginProcess }> {
  const { driver, process: proc } = await launchDriverPlugin({ path: wrapper, logger: silentLogger() });
  const schema = await driver.configSchema();
  await driver.setConfig({ apiVersion: 'v0.1.0', pluginConfig: encodeConfig(schema, {}) });
  return { driver, proc };
}

let seq = 0;
async function taskConfig(driver: DriverPluginClient, script: string): Promise<TaskConfig> {
  const name = `t${++seq}`;
  const allocDir = path.join(dir, 'alloc');
  const logs = path.join(allocDir, 'alloc', 'logs');
  for (const d of [logs, path.join(allocDir, name, 'local'), path.join(allocDir, name, 'secrets')]) mkdirSync(d, { recursive: true });
  const stdoutPath = path.join(logs, `${name}.stdout.0`);
  const stderrPath = path.join(logs, `${name}.stderr.0`);
  for (const f of [stdoutPath, stderrPath]) writeFileSync(f, '');
  return {
    id: `a1/${name}/0`,
    jobName: 'j',
    jobId: 'j',
    taskGroupName: 'g',
    parentJobId: '',
    name,
    namespace: 'default',
    nodeName: 'n',
    nodeId: 'n',
    env: { GREETING: 'hello' },
    deviceEnv: {},
    devices: [],
    mounts: [],
    user: '',
    allocDir,
    msgpackDriverConfig: encodeConfig(await driver.taskConfigSchema(), { command: '/bin/sh', args: ['-c', `${script} # ${MARKER}`] }),
    stdoutPath,
    stderrPath,
    allocId: 'a1',
  };
}

/** Stops the plugin in its tracks, runs `call`, kills the plugin: the call is certainly in flight when the plugin dies. */
async function killDuring<T>(proc: PluginProcess, call: () => Promise<T>): Promise<unknown> {
  process.kill(proc.pid as number, 'SIGSTOP');
  const pending = call().then(
    () => undefined,
    (err: unknown) => err,
  );
  process.kill(proc.pid as number, 'SIGKILL');
  return pending;
}

describe('the driver plugin host against `berth driver serve raw_exec`', { timeout: 120_000 }, () => {
  it('answers every RPC of the base and driver services', async () => {
    const { driver, proc } = await launch();
    try {
      const info = await driver.pluginInfo();
      assert.deepEqual({ type: info.type, name: info.name, api: info.pluginApiVersions }, { type: 'driver', name: 'raw_exec', api: ['v0.1.0'] });
      const taskSchema = await driver.taskConfigSchema();
      assert.equal(taskSchema?.kind, 'object');
      const caps = await driver.capabilities();
      assert.equal(caps.exec, true);
      assert.equal(caps.mustInitiateNetwork, false);
      assert.ok(caps.netIsolationModes.includes('host'));

      const ac = new AbortController();
      for await (const fp of driver.fingerprint({ signal: ac.signal })) {
        assert.equal(fp.health, 'healthy');
        assert.equal(fp.attributes['driver.raw_exec']?.bool, true);
        ac.abort();
      }

      const events = new AbortController();
      const eventsEnded = (async () => {
        for await (const _ of driver.taskEvents({ signal: events.signal })) void _;
      })();

      const cfg = await taskConfig(driver, 'echo "$GREETING from task"; trap "echo got-usr1" USR1; while true; do sleep 0.1; done');
      const { handle } = await driver.startTask(cfg);
      assert.equal(handle.config.id, cfg.id);
      assert.equal((await driver.inspectTask(cfg.id)).state, 'running');
      await until('the task output in its log file', () => readFileSync(cfg.stdoutPath, 'utf8').includes('hello from task'));

      const statsAc = new AbortController();
      for await (const u of driver.taskStats(cfg.id, 200, { signal: statsAc.signal })) {
        assert.ok(Object.keys(u.pids).length > 0);
        statsAc.abort();
      }

      await driver.signalTask(cfg.id, 'SIGUSR1');
      await until('the task to see SIGUSR1', () => readFileSync(cfg.stdoutPath, 'utf8').includes('got-usr1'));

      const ex = await driver.execTask(cfg.id, ['/bin/sh', '-c', 'echo out; echo err >&2; exit 3'], 10_000);
      assert.deepEqual([Buffer.from(ex.stdout).toString(), Buffer.from(ex.stderr).toString(), ex.exitResult.exitCode], ['out\n', 'err\n', 3]);

      let streamed = '';
      const exit = await driver.execTaskStreaming(cfg.id, {
        command: ['/bin/cat'],
        tty: false,
        stdin: (async function* () {
          yield Buffer.from('through the stream\n');
        })(),
        stdout: (d) => (streamed += Buffer.from(d).toString()),
        stderr: () => undefined,
      });
      assert.equal(exit.exitCode, 0);
      assert.equal(streamed, 'through the stream\n');

      // What `berth alloc exec -t` sends: a terminal, with its size.
      let onTty = '';
      const ttyExit = await driver.execTaskStreaming(cfg.id, {
        command: ['/bin/sh', '-c', 'tty'],
        tty: true,
        resize: (async function* () {
          yield { width: 91, height: 17 };
        })(),
        stdout: (d) => (onTty += Buffer.from(d).toString()),
        stderr: (d) => (onTty += Buffer.from(d).toString()),
      });
      assert.equal(ttyExit.exitCode, 0, onTty);
      assert.match(onTty, /\/dev\/pts\/\d+/);

      await assert.rejects(driver.createNetwork('a1', { hostname: 'h' }), /does not create networks/);

      const waiting = driver.waitTask(cfg.id);
      await driver.stopTask(cfg.id, 2000, 'SIGTERM');
      const result = await waiting;
      assert.equal(result.signal, 15);
      await driver.destroyTask(cfg.id, false);
      await assert.rejects(driver.inspectTask(cfg.id));

      events.abort();
      await eventsEnded;
    } finally {
      await proc.shutdown();
      driver.close();
    }
  });

  it('a task outlives its plugin and a new plugin process recovers it from the handle (RecoverTask)', async () => {
    const first = await launch();
    const cfg = await taskConfig(first.driver, 'while true; do sleep 0.1; done');
    const { handle } = await first.driver.startTask(cfg);
    await first.proc.shutdown();
    first.driver.close();
    const second = await launch();
    try {
      await second.driver.recoverTask(handle);
      assert.equal((await second.driver.inspectTask(cfg.id)).state, 'running');
      await second.driver.destroyTask(cfg.id, true);
    } finally {
      await second.proc.shutdown();
      second.driver.close();
    }
  });

  it('kill -9 during StartTask: the call fails with "plugin shut down", and so does every later call', async () => {
    const { driver, proc } = await launch();
    const cfg = await taskConfig(driver, 'sleep 100');
    const err = await killDuring(proc, () => driver.startTask(cfg));
    assert.ok(isShutDown(err), `StartTask ended with ${String(err)}`);
    await assert.rejects(driver.capabilities(), isShutDown);
    await assert.rejects(driver.inspectTask(cfg.id), isShutDown);
    driver.close();
  });

  it('kill -9 during a TaskStats stream: the stream ends with "plugin shut down", later streams fail at once', async () => {
    const { driver, proc } = await launch();
    const cfg = await taskConfig(driver, 'while true; do sleep 0.1; done');
    await driver.startTask(cfg);
    const err = await killDuring(proc, async () => {
      for await (const _ of driver.taskStats(cfg.id, 100)) void _;
    });
    assert.ok(isShutDown(err), `the stream ended with ${String(err)}`);
    await assert.rejects(async () => {
      for await (const _ of driver.taskStats(cfg.id, 100)) void _;
    }, isShutDown);
    driver.close();
  });

  it('kill -9 during an exec: the exec fails with "plugin shut down" instead of hanging', async () => {
    const { driver, proc } = await launch();
    const cfg = await taskConfig(driver, 'while true; do sleep 0.1; done');
    await driver.startTask(cfg);
    const err = await killDuring(proc, () =>
      driver.execTaskStreaming(cfg.id, {
        command: ['/bin/sleep', '100'],
        tty: false,
        stdout: () => undefined,
        stderr: () => undefined,
      }),
    );
    assert.ok(isShutDown(err), `the exec ended with ${String(err)}`);
    driver.close();
  });
});

