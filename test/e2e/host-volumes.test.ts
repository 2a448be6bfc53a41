// Nomad's dynamic host volumes (Nomad 1.10), as an operator uses them: a
// dev agent (the real bin/berth.js), volume files with `type = "host"`
// created by the built-in `mkdir` plugin and by an external plugin (our own
// shell script written to Nomad's plugin specification), used by a job
// whose task writes into it, kept across a kill -9 of the agent, deleted
// (its directory gone); bad input refused with Nomad's words and nothing
// changed.

import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { HostVolume, HostVolumeStub } from '../../src/api/index.js';
import { AgentRun, freePort, killProcessesUnder, ok, until } from '../support/agent-run.js';

// An external plugin as Nomad's docs write one: the verb in $1 and DHV_OPERATION,
// the volume in DHV_* variables, JSON on stdout. It records what it was told.
const PLUGIN = `#!/bin/sh
set -eu
log="$(dirname "$0")/../calls.log"
echo "$1 op=$DHV_OPERATION" >> "$log"
case "$1" in
  fingerprint)
    echo '{"version": "1.2.3"}' ;;
  create)
    echo "create id=$DHV_VOLUME_ID name=$DHV_VOLUME_NAME ns=$DHV_NAMESPACE node=$DHV_NODE_ID pool=$DHV_NODE_POOL min=$DHV_CAPACITY_MIN_BYTES max=$DHV_CAPACITY_MAX_BYTES params=$DHV_PARAMETERS plugin_dir=$DHV_PLUGIN_DIR" >> "$log"
    if [ "$DHV_VOLUME_NAME" = "refused" ]; then echo '{"error": "no room on this disk"}'; exit 1; fi
    target="$DHV_VOLUMES_DIR/ext-$DHV_VOLUME_ID"
    mkdir -p "$target"
    printf '{"path": "%s", "bytes": 1048576}' "$target" ;;
  delete)
    echo "delete id=$DHV_VOLUME_ID created=$DHV_CREATED_PATH" >> "$log"
    rm -rf "$DHV_CREATED_PATH" ;;
  *)
    echo "unknown operation $1" >&2; exit 1 ;;
esac
`;

const jobFile = (jobId: string, source: string, command: string, type = 'service'): string => `
job "${jobId}" {
  type = "${type}"
  group "g" {
    volume "d" {
      type   = "host"
      source = "${source}"
    }
    task "t" {
      driver = "exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "${command}"]
      }
      volume_mount {
        volume      = "d"
        destination = "/srv"
      }
    }
  }
}
`;

describe('dynamic host volumes (Nomad 1.10) on a dev agent', { timeout: 300_000 }, () => {
  let root = '';
  let dataDir = '';
  let pluginDir = '';
  let agent: AgentRun;
  let port = 0;

  const write = (name: string, text: string): string => {
    const p = path.join(root, name);
    writeFileSync(p, text);
    return p;
  };
  const hostVolumes = async (): Promise<HostVolumeStub[]> => JSON.parse(ok(await agent.cli(['volume', 'status', '--type', 'host', '--json']), 'volume status --type host')) as HostVolumeStub[];
  const byName = async (name: string): Promise<HostVolume> => {
    const stub = (await hostVolumes()).find((v) => v.Name === name);
    assert.ok(stub, `host volume ${name} is listed`);
    return JSON.parse(ok(await agent.cli(['volume', 'status', '--type', 'host', stub.ID, '--json']), 'volume status <id>')) as HostVolume;
  };
  const startAgent = async (): Promise<void> => {
    agent = await new AgentRun(['--dev', '--data-dir', dataDir, '--port', String(port), '--config', path.join(root, 'agent.hcl')]).start();
  };

  before(async () => {
    root = mkdtempSync(path.join(tmpdir(), 'berth-dhv-'));
    dataDir = path.join(root, 'data');
    pluginDir = path.join(root, 'plugins');
    mkdirSync(pluginDir);
    writeFileSync(path.join(pluginDir, 'ext-dir'), PLUGIN);
    chmodSync(path.join(pluginDir, 'ext-dir'), 0o755);
    write('agent.hcl', `client {\n  host_volume_plugin_dir = "${pluginDir}"\n  host_volumes_dir = "${path.join(root, 'volumes')}"\n}\n`);
    port = await freePort();
    await startAgent();
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    killProcessesUnder(root);
    rmSync(root, { recursive: true, force: true });
  });

  it('creates a volume with the built-in mkdir plugin (its mode applied) that a job writes into', async () => {
    const out = ok(
      await agent.cli(['volume', 'create', write('mkdir.hcl', 'name = "data"\ntype = "host"\nplugin_id = "mkdir"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\nparameters {\n  mode = "0751"\n}\n')]),
      'volume create mkdir.hcl',
    );
    assert.match(out, /^Created host volume data with ID [0-9a-f-]{36}$/m);
    const vol = await byName('data');
    assert.equal(vol.State, 'ready');
    assert.equal(vol.PluginID, 'mkdir');
    assert.equal(vol.HostPath, path.join(root, 'volumes', vol.ID));
    assert.equal(statSync(vol.HostPath).mode & 0o777, 0o751);

    // The node reports it, as Nomad's Node.HostVolumes.
    const status = ok(await agent.cli(['volume', 'status']), 'volume status');
    assert.match(status, /Dynamic Host Volumes[\s\S]*data\s+default\s+mkdir[\s\S]*ready/);

    ok(await agent.cli(['job', 'run', write('writer.hcl', jobFile('writer', 'data', 'echo written-by-task > /srv/out.txt', 'batch'))]), 'job run writer');
    await until('the task wrote into the host volume', () => existsSync(path.join(vol.HostPath, 'out.txt')) && readFileSync(path.join(vol.HostPath, 'out.txt'), 'utf8') === 'written-by-task\n');
  });

  it('creates a volume with an external plugin called with Nomad\'s verbs, environment and JSON', async () => {
    const spec = write(
      'ext.hcl',
      'name = "ext"\ntype = "host"\nplugin_id = "ext-dir"\ncapacity_min = "1MiB"\ncapacity_max = "2MiB"\nparameters {\n  tier = "fast"\n}\n',
    );
    const out = ok(await agent.cli(['volume', 'create', spec]), 'volume create ext.hcl');
    assert.match(out, /Created host volume ext with ID/);
    const vol = await byName('ext');
    assert.equal(vol.State, 'ready');
    assert.equal(vol.CapacityBytes, 1048576);
    assert.equal(vol.HostPath, path.join(root, 'volumes', `ext-${vol.ID}`));
    const calls = readFileSync(path.join(root, 'calls.log'), 'utf8');
    assert.match(calls, /^fingerprint op=fingerprint$/m);
    assert.ok(
      calls.includes(`create id=${vol.ID} name=ext ns=default node=${vol.NodeID} pool=default min=1048576 max=2097152 params={"tier":"fast"} plugin_dir=${pluginDir}`),
      calls,
    );

    ok(await agent.cli(['job', 'run', write('ext-writer.hcl', jobFile('ext-writer', 'ext', 'echo ext > /srv/e.txt', 'batch'))]), 'job run ext-writer');
    await until('the task wrote into the external volume', () => existsSync(path.join(vol.HostPath, 'e.txt')));
  });

  it('keeps both volumes across a kill -9 of the agent, and a job still lands on them', async () => {
    const before = (await hostVolumes()).map((v) => v.ID).sort();
    await agent.stop('SIGKILL');
    killProcessesUnder(dataDir);
    await startAgent();
    const afterKill = await until('both volumes ready again after the restart', async () => {
      const vols = await hostVolumes();
      return vols.length === 2 && vols.every((v) => v.State === 'ready') ? vols : false;
    });
    assert.deepEqual(afterKill.map((v) => v.ID).sort(), before);
    const vol = await byName('data');
    ok(await agent.cli(['job', 'run', write('writer2.hcl', jobFile('writer2', 'data', 'echo again > /srv/again.txt', 'batch'))]), 'job run writer2');
    await until('the task wrote after the restart', () => existsSync(path.join(vol.HostPath, 'again.txt')));
  });

  it('shows a volume whose plugin is gone after a restart as unavailable, places nothing on it, and is ready again once the plugin is back', async () => {
    const plugin = path.join(pluginDir, 'ext-dir');
    const aside = path.join(root, 'ext-dir.aside');
    renameSync(plugin, aside);
    await agent.stop('SIGKILL');
    killProcessesUnder(dataDir);
    await startAgent();
    await until('ext unavailable, data ready', async () => {
      const vols = await hostVolumes();
      return vols.find((v) => v.Name === 'ext')?.State === 'unavailable' && vols.find((v) => v.Name === 'data')?.State === 'ready';
    });
    const r = await agent.cli(['job', 'run', write('on-unavailable.hcl', jobFile('on-unavailable', 'ext', 'true', 'batch'))]);
    assert.notEqual(r.code, 0);
    assert.match(r.stdout + r.stderr, /Constraint "missing compatible host volumes": 1 node excluded by filter/);
    ok(await agent.cli(['job', 'stop', '-purge', 'on-unavailable']), 'job stop on-unavailable');

    renameSync(aside, plugin);
    await agent.stop('SIGKILL');
    killProcessesUnder(dataDir);
    await startAgent();
    await until('ext ready again', async () => (await hostVolumes()).find((v) => v.Name === 'ext')?.State === 'ready');
  });

  it('places a job only where its host volume is: an unknown name is not placed, with Nomad\'s reason', async () => {
    const r = await agent.cli(['job', 'run', write('nowhere.hcl', jobFile('nowhere', 'no-such-volume', 'true'))]);
    assert.notEqual(r.code, 0);
    assert.match(r.stdout + r.stderr, /Constraint "missing compatible host volumes": 1 node excluded by filter/);
    ok(await agent.cli(['job', 'stop', '-purge', 'nowhere']), 'job stop nowhere');
  });

  it('refuses bad input with clear errors and changes nothing', async () => {
    const count = (await hostVolumes()).length;
    const dirs = readdirSync(path.join(root, 'volumes')).sort();
    const unknownPlugin = await agent.cli(['volume', 'create', write('bad-plugin.hcl', 'name = "x"\ntype = "host"\nplugin_id = "no-such-plugin"\n')]);
    assert.notEqual(unknownPlugin.code, 0);
    assert.match(unknownPlugin.stderr, /could not place volume "x": no node meets constraints: 0 nodes had existing volume, 0 nodes filtered by node pool governance, 1 nodes were infeasible/);

    const noNode = await agent.cli(['volume', 'create', write('bad-node.hcl', 'name = "x"\ntype = "host"\nplugin_id = "mkdir"\nnode_id = "00000000-0000-0000-0000-000000000000"\n')]);
    assert.notEqual(noNode.code, 0);
    assert.match(noNode.stderr, /node "00000000-0000-0000-0000-000000000000" does not exist/);

    const refused = await agent.cli(['volume', 'create', write('refused.hcl', 'name = "refused"\ntype = "host"\nplugin_id = "ext-dir"\n')]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /error creating volume "[0-9a-f-]{36}" with plugin "ext-dir": exit status 1: no room on this disk/);

    const badParam = await agent.cli(['volume', 'create', write('bad-param.hcl', 'name = "y"\ntype = "host"\nplugin_id = "mkdir"\nparameters {\n  colour = "blue"\n}\n')]);
    assert.notEqual(badParam.code, 0);
    assert.match(badParam.stderr, /unknown mkdir parameter: "colour"/);

    const again = await agent.cli(['volume', 'create', path.join(root, 'mkdir.hcl')]);
    assert.notEqual(again.code, 0, 'a second volume "data" on the one node');
    assert.match(again.stderr, /could not place volume "data": no node meets constraints: 1 nodes had existing volume/);

    const badFile = await agent.cli(['volume', 'create', write('bad-mode.hcl', 'name = "z"\ntype = "host"\ncapability {\n  access_mode = "multi-node-multi-writer"\n  attachment_mode = "file-system"\n}\n')]);
    assert.notEqual(badFile.code, 0);
    assert.match(badFile.stderr, /bad-mode\.hcl:4:3: capability\.access_mode: access_mode must be one of single-node-reader-only/);

    assert.equal((await hostVolumes()).length, count, 'no volume was recorded');
    assert.deepEqual(readdirSync(path.join(root, 'volumes')).sort(), dirs, 'no directory was left by the refused creates');
  });

  it('registers an existing directory on a node as a volume a job writes into, and forgets it on delete (the directory stays)', async () => {
    const existing = path.join(root, 'existing');
    mkdirSync(existing);
    const nodeId = (await byName('data')).NodeID;
    const missing = await agent.cli(['volume', 'register', write('reg-missing.hcl', `name = "reg"\ntype = "host"\nnode_id = "${nodeId}"\nhost_path = "${existing}-nope"\n`)]);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /could not verify host path for "reg"/);
    const noNode = await agent.cli(['volume', 'register', write('reg-nonode.hcl', `name = "reg"\ntype = "host"\nhost_path = "${existing}"\n`)]);
    assert.notEqual(noNode.code, 0);
    assert.match(noNode.stderr, /Node ID is required for registering/);

    const out = ok(await agent.cli(['volume', 'register', write('reg.hcl', `name = "reg"\ntype = "host"\nnode_id = "${nodeId}"\nhost_path = "${existing}"\n`)]), 'volume register reg.hcl');
    assert.match(out, /^Registered host volume reg with ID [0-9a-f-]{36}$/m);
    const vol = await until('the registered volume ready', async () => {
      const v = await byName('reg');
      return v.State === 'ready' ? v : false;
    });
    assert.equal(vol.HostPath, existing);
    assert.equal(vol.PluginID, '');
    ok(await agent.cli(['job', 'run', write('reg-writer.hcl', jobFile('reg-writer', 'reg', 'echo reg > /srv/r.txt', 'batch'))]), 'job run reg-writer');
    await until('the task wrote into the registered directory', () => existsSync(path.join(existing, 'r.txt')));
    ok(await agent.cli(['volume', 'delete', '--type', 'host', 'reg']), 'volume delete reg');
    assert.equal((await hostVolumes()).some((v) => v.Name === 'reg'), false);
    assert.ok(existsSync(path.join(existing, 'r.txt')), 'a registered volume\'s directory is the operator\'s: delete leaves it');
  });

  it('refuses to delete a volume a running allocation uses, then deletes it through its plugin once the job stopped', async () => {
    const vol = await byName('ext');
    ok(await agent.cli(['job', 'run', '-detach', write('user.hcl', jobFile('user', 'ext', 'sleep 300'))]), 'job run user');
    await until('the allocation using the volume runs', async () => (await byName('ext')).Allocations?.some((a) => a.ClientStatus === 'running') ?? false);
    const inUse = await agent.cli(['volume', 'delete', '--type', 'host', vol.ID]);
    assert.notEqual(inUse.code, 0);
    assert.match(inUse.stderr, new RegExp(`volume ${vol.ID} in use by allocations: \\[[0-9a-f-]{36}\\]`));
    assert.ok(existsSync(vol.HostPath), 'the refused delete left the directory');
    assert.equal((await byName('ext')).State, 'ready');

    ok(await agent.cli(['job', 'stop', 'user']), 'job stop user');
    await until('the allocation stopped', async () => !((await byName('ext')).Allocations ?? []).length);
    const out = ok(await agent.cli(['volume', 'delete', '--type', 'host', vol.ID]), 'volume delete ext');
    assert.match(out, new RegExp(`Successfully deleted volume "${vol.ID}"!`));
    assert.equal(existsSync(vol.HostPath), false, 'the plugin removed the directory');
    assert.match(readFileSync(path.join(root, 'calls.log'), 'utf8'), new RegExp(`delete id=${vol.ID} created=${vol.HostPath}`));
    assert.equal((await hostVolumes()).some((v) => v.ID === vol.ID), false);

    const data = await byName('data');
    ok(await agent.cli(['volume', 'delete', '--type', 'host', 'data']), 'volume delete data (by name)');
    assert.equal(existsSync(data.HostPath), false, 'mkdir removed its directory');
  });
});
