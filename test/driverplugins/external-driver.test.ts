// Tasks on an external task-driver plugin, end to end through the CLI: a
// client agent whose plugin_dir holds a wrapper script running
// `berth driver serve raw_exec` (so the external raw_exec replaces the
// built-in, as in Nomad). On it: the hostpath CSI plugin, a volume created
// through it, a writer and a reader that reads back what was written (the
// volume reaches the tasks through the driver), `alloc exec`, a kill -9 of
// the plugin (it comes back and keeps its task), and an agent restart that
// recovers the task from the handle the client persisted.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import { mountsUnder, pidsWith, until } from '../support/runtime-cluster.js';
import { BERTH, EXAMPLES, startAgent, tempDir, type AgentUnderTest, type Result } from '../agent/_agent.js';

const MGMT = 'dp-mgmt-token-0123456789';
const NODE = 'dp-node-token-0123456789';
const MARKER = `dp-external-task-${process.pid}`;

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

/** The hostpath plugin job of the examples, with `berth` spelled out (an external driver's tasks get no PATH shim). */
function hostpathJob(dataRoot: string): string {
  return `job "hostpath-plugin" {
  type = "system"
  group "plugin" {
    restart {
      attempts = 5
      interval = "5m"
      delay    = "1s"
      mode     = "delay"
    }
    task "plugin" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args = ["-c", "exec '${process.execPath}' '${BERTH}' plugin hostpath --endpoint \\"$CSI_ENDPOINT\\" --node-id \\"$BERTH_NODE_ID\\" --data-dir '${dataRoot}'/\\"$BERTH_NODE_ID\\""]
      }
      csi_plugin {
        id        = "hostpath"
        type      = "monolith"
        mount_dir = "/csi"
      }
      resources {
        memory = 256
      }
    }
  }
}
`;
}

const SLEEPER = `job "sleeper" {
  group "s" {
    task "sleep" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo started; while true; do sleep 1; done # ${MARKER}"]
      }
    }
  }
}
`;

describe('a job on an external driver plugin (berth driver serve raw_exec from plugin_dir)', { timeout: 300_000 }, () => {
  let dir = '';
  let server: AgentUnderTest;
  let client: AgentUnderTest;
  let clientConfig = '';

  const startClient = async (): Promise<AgentUnderTest> => {
    const c = await startAgent(['--client', '--server-address', server.addr, '--config', clientConfig]).ready(false);
    c.token = MGMT;
    return c;
  };

  before(async () => {
    dir = await tempDir('bdp-');
    const pluginDir = path.join(dir, 'plugins');
    mkdirSync(pluginDir);
    // What a user puts in plugin_dir: an executable named after the driver.
    const wrapper = path.join(pluginDir, 'raw_exec');
    writeFileSync(wrapper, `#!/bin/sh\nexec '${process.execPath}' '${BERTH}' driver serve raw_exec --state-dir '${path.join(dir, 'drv')}' "$@"\n`);
    chmodSync(wrapper, 0o755);
    writeFileSync(path.join(dir, 'server.hcl'), `data_dir = "server-data"\nports {\n  http = 0\n}\ntokens {\n  management = ["${MGMT}"]\n  node = ["${NODE}"]\n}\n`);
    server = await startAgent(['--server', '--config', path.join(dir, 'server.hcl')]).ready(false);
    server.token = MGMT;
    clientConfig = path.join(dir, 'client.hcl');
    writeFileSync(
      clientConfig,
      `data_dir = "c1"\nports {\n  http = 0\n}\nplugin_dir = "plugins"\nplugin "raw_exec" {\n  config {}\n}\nclient {\n  node_name = "dp-client"\n  token = "${NODE}"\n}\ncsi {\n  probe_interval = "1s"\n}\n`,
    );
    client = await startClient();
  });

  after(async () => {
    for (const job of ['sleeper', 'reader', 'writer']) await server?.cli(['job', 'stop', '-purge', job]).catch(() => undefined);
    await server?.cli(['volume', 'delete', 'shared-data']).catch(() => undefined);
    await client?.stop('SIGINT').catch(() => undefined);
    await server?.stop('SIGINT').catch(() => undefined);
    for (const pid of pidsWith(MARKER)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
  });

  const allocOf = async (job: string): Promise<Api.AllocationListStub> =>
    until(`an allocation of ${job}`, async () => (await server.get<Api.AllocationListStub[]>(`/v1/job/${job}/allocations`)).find((a) => a.DesiredStatus === 'run'));

  it('the node reports raw_exec from the plugin: external, healthy, with the plugin’s attributes', async () => {
    const stub = await until('the node with a healthy external raw_exec', async () =>
      (await server.get<Api.NodeListStub[]>('/v1/nodes')).find((n) => n.Name === 'dp-client' && n.Status === 'ready' && n.Drivers?.['raw_exec']?.Healthy && n.Drivers['raw_exec'].BerthExternal),
    );
    const node = await server.get<Api.Node>(`/v1/node/${stub.ID}`);
    assert.equal(node.Attributes?.['driver.raw_exec'], 'true', 'the plugin’s own attribute');
    assert.equal(node.Attributes?.['driver.raw_exec.cgroups'] !== undefined, true);
    assert.equal(node.Drivers?.['raw_exec']?.Attributes?.['driver.raw_exec.cgroups'] !== undefined, true, 'and in the driver’s own attributes');
    // The TaskConfigSchema reaches the server: the next test's validation refuses a config by it.
  });

  it('a task config the driver schema refuses is rejected by job validate, naming the field', async () => {
    const bad = path.join(dir, 'bad.hcl');
    writeFileSync(bad, `job "bad" {\n  group "g" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n        args = ["x"]\n      }\n    }\n  }\n}\n`);
    const r = await server.cli(['job', 'validate', bad]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr + r.stdout, /config.*command/);
  });

  it('runs the hostpath plugin on the external driver, and a reader reads back what a writer wrote to a CSI volume', async () => {
    const hostpath = path.join(dir, 'hostpath.hcl');
    writeFileSync(hostpath, hostpathJob(path.join(dir, 'hostpath-data')));
    ok(await server.cli(['job', 'run', hostpath]), 'job run hostpath');
    await until('the hostpath plugin to be healthy', async () => /Nodes Healthy\s+1\n/.test((await server.cli(['plugin', 'status', 'hostpath'])).stdout), 120_000);
    ok(await server.cli(['volume', 'create', path.join(EXAMPLES, 'volume.hcl')]), 'volume create');
    ok(await server.cli(['job', 'run', path.join(EXAMPLES, 'writer.hcl')]), 'job run writer');
    const writer = await allocOf('writer');
    await until('the writer to complete', async () => (await server.get<Api.Allocation>(`/v1/allocation/${writer.ID}`)).ClientStatus === 'complete', 120_000);
    ok(await server.cli(['job', 'stop', 'writer']), 'job stop writer');
    ok(await server.cli(['job', 'run', path.join(EXAMPLES, 'reader.hcl')]), 'job run reader');
    const reader = await allocOf('reader');
    const logs = await until('the reader to print what the writer wrote', async () => {
      const out = (await server.cli(['alloc', 'logs', reader.ID, 'read'])).stdout;
      return out.includes('written by') ? out : undefined;
    }, 120_000);
    assert.match(logs, new RegExp(`written by ${writer.ID}`));
  });

  it('alloc exec reaches a task through the plugin; a kill -9 of the plugin is survived and the task keeps running', async () => {
    const sleeper = path.join(dir, 'sleeper.hcl');
    writeFileSync(sleeper, SLEEPER);
    ok(await server.cli(['job', 'run', sleeper]), 'job run sleeper');
    const alloc = await allocOf('sleeper');
    await until('the sleeper to run', async () => (await server.get<Api.Allocation>(`/v1/allocation/${alloc.ID}`)).ClientStatus === 'running');
    const exec = await server.cli(['alloc', 'exec', alloc.ID, '--', 'sh', '-c', 'echo "in $BERTH_TASK_NAME"; exit 4']);
    assert.equal(exec.code, 4, exec.stderr);
    assert.equal(exec.stdout, 'in sleep\n');
    const [taskPid] = pidsWith(MARKER);
    assert.ok(taskPid, 'the task process runs');

    const plugins = pidsWith('driver serve raw_exec');
    assert.ok(plugins.length > 0, 'the plugin process runs');
    for (const pid of plugins) process.kill(pid, 'SIGKILL');
    await until('the plugin to run again', () => pidsWith('driver serve raw_exec').some((p) => !plugins.includes(p)));
    const again = await until('alloc exec to work through the restarted plugin', async () => {
      const r = await server.cli(['alloc', 'exec', alloc.ID, '--', 'echo', 'back']);
      return r.code === 0 ? r : undefined;
    }, 120_000);
    assert.equal(again.stdout, 'back\n');
    assert.deepEqual(pidsWith(MARKER), [taskPid], 'the same task process, never restarted');
    assert.equal((await server.get<Api.Allocation>(`/v1/allocation/${alloc.ID}`)).ClientStatus, 'running');
  });

  it('a client agent restart recovers the external driver’s task from its persisted handle', async () => {
    const alloc = await allocOf('sleeper');
    const [taskPid] = pidsWith(MARKER);
    await client.stop('SIGTERM');
    assert.deepEqual(pidsWith(MARKER), [taskPid], 'the task outlives the agent');
    client = await startClient();
    const exec = await until('alloc exec to work after the restart', async () => {
      const r = await server.cli(['alloc', 'exec', alloc.ID, '--', 'echo', 'recovered']);
      return r.code === 0 ? r : undefined;
      // The agent's start, the plugin's launch and the task's recovery: past 30 s on a loaded machine.
    }, 120_000);
    assert.equal(exec.stdout, 'recovered\n');
    assert.deepEqual(pidsWith(MARKER), [taskPid], 'recovered, not restarted');
    assert.equal((await server.get<Api.Allocation>(`/v1/allocation/${alloc.ID}`)).ClientStatus, 'running');
  });
});
