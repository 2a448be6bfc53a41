// Ctrl-C of a client agent while a workload's CSI volume has no plugin
// serving to unmount it (CSI unpublishes only through the plugin). A server
// and one client, the hostpath plugin as a system job.
//   - No plugin will come (its job was stopped first, then the workload's):
//     the agent used to retry the unmount for about 40 s, then exit 0
//     ("Berth agent stopped") with the volume still mounted and claimed, and
//     forget it. Now it exits at once (exit 1), naming the volume it kept;
//     the claim stays, and the agent started again with the plugin running
//     again unmounts the volume and releases it; a new workload claims it.
//   - The plugin's allocation is being replaced when the agent comes back
//     (the old one died while the node was down, the new one is starting)
//     and the server dropped the workload meanwhile: the drain used to miss
//     the workload being destroyed, stop the new plugin before it
//     registered, and retry the unmount for 40 s, leaving the volume mounted.
//     Now it waits for that plugin, unmounts through it, then stops it: exit 0.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import type { Allocation, AllocationListStub, CSIPlugin, CSIVolume } from '../../src/api/index.js';
import { cleanupUnder, hostpathPluginJob, hostpathVolumeHcl, mountsUnder, pidsWith, rawExecJob, until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

const MGMT = 'sp-mgmt-token-0123456789';
const NODE = 'sp-node-token-0123456789';

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

const WRITER = 'while :; do date >> "$BERTH_TASK_DIR/data/log"; sleep 1; done';
/** The second workload's writer, told apart by its command line. */
const MARKED_WRITER = `: berth-next-writer; ${WRITER}`;

describe('Ctrl-C of a client agent whose workload holds a volume no plugin serves', () => {
  let dir = '';
  let clientDir = '';
  let server: AgentUnderTest;
  let client: AgentUnderTest | undefined;

  before(async () => {
    dir = await tempDir('bsp-');
    clientDir = path.join(dir, 'c1');
    writeFileSync(path.join(dir, 'nodes.tokens'), `${NODE}\n`);
    writeFileSync(
      path.join(dir, 'server.hcl'),
      `data_dir = "server-data"\nports {\n  http = 0\n}\nserver {\n  heartbeat_ttl = "3s"\n  heartbeat_grace = "1s"\n}\ntokens {\n  management = ["${MGMT}"]\n  node_file  = "nodes.tokens"\n}\n`,
    );
    writeFileSync(
      path.join(dir, 'c1.json'),
      JSON.stringify({ data_dir: clientDir, ports: { http: 0 }, client: { node_name: 'c1', token: NODE, options: { 'driver.raw_exec.enable': true }, stop_after_server_disconnect: '1s' }, csi: { probe_interval: '1s' } }),
    );
    server = await startAgent(['--server', '--config', path.join(dir, 'server.hcl')]).ready(false);
    server.token = MGMT;
  });
  after(async () => {
    await client?.stop('SIGINT').catch(() => undefined);
    await server?.stop('SIGINT').catch(() => undefined);
    cleanupUnder(dir);
  });

  const file = (name: string, body: unknown): string => {
    const p = path.join(dir, name);
    writeFileSync(p, typeof body === 'string' ? body : JSON.stringify(body));
    return p;
  };
  const startClient = async (): Promise<AgentUnderTest> => {
    client = await startAgent(['--client', '--server-address', server.addr, '--config', path.join(dir, 'c1.json')]).ready(false);
    return client;
  };
  const nodeStatus = async (): Promise<string | undefined> => (await server.get<Api.NodeListStub[]>('/v1/nodes')).find((n) => n.Name === 'c1')?.Status;
  const nodesHealthy = async (): Promise<number> => (await server.get<CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined))?.NodesHealthy ?? 0;
  const claimsOf = async (allocId: string): Promise<unknown[]> =>
    (await server.get<CSIVolume>('/v1/volume/csi/kept')).BerthClaims.filter((c) => c.AllocationID === allocId);
  const published = (allocId: string): string[] => mountsUnder(clientDir).filter((m) => m.includes(`/per-alloc/${allocId}/`));
  const staged = (): string[] => mountsUnder(clientDir).filter((m) => m.includes('/staging/'));
  const hp = (): string => path.join(dir, 'hp');
  // Without ControllerPublish: a claim on a down node is then released without the node (whose plugin is the only controller).
  const pluginJob = (): { groups: Array<{ tasks: Array<{ config: { command: string; args: string[] } }> }> } => {
    const job = hostpathPluginJob({ id: 'hostpath-plugin', driver: 'raw_exec', dataDir: hp() }) as ReturnType<typeof pluginJob>;
    job.groups[0]!.tasks[0]!.config.args.push('--no-publish-unpublish');
    return job;
  };
  const pluginFile = (): string => file('plugin.json', { job: pluginJob() });

  it('exits at once naming the kept volume (exit 1); started again with the plugin, it unmounts the volume and releases the claim', async () => {
    await startClient();
    await until('the client ready', async () => (await nodeStatus()) === 'ready');
    ok(await server.cli(['job', 'run', pluginFile()]), 'job run hostpath-plugin');
    await until('the plugin healthy', async () => (await nodesHealthy()) === 1, 60_000);
    ok(await server.cli(['volume', 'create', file('vol.hcl', hostpathVolumeHcl('kept'))]), 'volume create');
    ok(await server.cli(['job', 'run', file('user.json', { job: rawExecJob('user', 'kept', WRITER) })]), 'job run user');
    const [alloc] = await server.get<AllocationListStub[]>('/v1/job/user/allocations');
    assert.ok(alloc && published(alloc.ID).length === 1, 'the volume is published for the workload');

    // The plugin goes first, then the workload: nothing on the node can unpublish its volume now.
    ok(await server.cli(['job', 'stop', 'hostpath-plugin']), 'job stop hostpath-plugin');
    await until('the plugin gone from the node', async () => (await nodesHealthy()) === 0, 60_000);
    ok(await server.cli(['job', 'stop', 'user']), 'job stop user');
    await until('the workload stopped', async () => (await server.get<Allocation>(`/v1/allocation/${alloc.ID}`)).ClientStatus === 'complete');

    const stopped = await (client as AgentUnderTest).stop('SIGINT');
    assert.equal(stopped.code, 1, stopped.stdout + stopped.stderr);
    assert.match(
      stopped.stdout,
      new RegExp(
        `allocation ${alloc.ID} \\(job user\\): volume "kept" stays mounted and claimed: no instance of its node plugin "hostpath" runs on this node; ` +
          'the agent unmounts and releases it when it starts again and the plugin runs',
      ),
    );
    assert.match(stopped.stderr, /error: the drain did not finish: 1 allocation\(s\) not stopped or released/);
    assert.equal(published(alloc.ID).length, 1, 'the volume is left as it was, for the next start');
    assert.equal((await claimsOf(alloc.ID)).length, 1, 'and so is its claim');

    // Started again; once the plugin runs again, the kept volume is unmounted and its claim released.
    await startClient();
    ok(await server.cli(['job', 'run', pluginFile()]), 'job run hostpath-plugin again');
    // On a loaded machine the server may have marked the stopped node down meanwhile and released the
    // claim itself (no controller publishes here); the node then unstages after: wait for all three.
    await until(
      'the volume unpublished, unstaged and its claim released',
      async () => published(alloc.ID).length === 0 && staged().length === 0 && (await claimsOf(alloc.ID)).length === 0,
      120_000,
    );
    // The volume can be claimed again.
    ok(await server.cli(['job', 'run', file('next.json', { job: rawExecJob('next', 'kept', MARKED_WRITER) })]), 'job run next');
  });

  it("waits for the plugin's new allocation to serve, unmounts through it the volume of a workload the server dropped, then stops it: exit 0", async () => {
    const [next] = await server.get<AllocationListStub[]>('/v1/job/next/allocations');
    assert.ok(next && published(next.ID).length === 1, 'the second workload has the volume');
    // The agent stops leaving its tasks running (its executor stops the writer a second later), and the node
    // is marked down: the server releases the workload's claim once its fence ends; the plugin's process dies meanwhile.
    ok(await (client as AgentUnderTest).stop('SIGTERM'), 'SIGTERM of the client');
    await until('the node down', async () => (await nodeStatus()) === 'down', 60_000);
    await until("the workload's claim released by the server", async () => (await claimsOf(next.ID)).length === 0, 60_000);
    for (const pid of pidsWith(`--data-dir ${hp()}`)) process.kill(pid, 'SIGKILL');
    // Its job is purged (the allocation goes with it), and the plugin job gets a new version whose
    // task waits for a file before it starts the plugin.
    ok(await server.cli(['job', 'stop', '--purge', 'next']), 'job stop --purge next');
    const go = path.join(dir, 'go');
    const gated = pluginJob();
    const { command, args } = gated.groups[0]!.tasks[0]!.config;
    gated.groups[0]!.tasks[0]!.config = { command: '/bin/sh', args: ['-c', `while [ ! -e ${go} ]; do sleep 0.1; done; exec ${[command, ...args].join(' ')}`] };
    ok(await server.cli(['job', 'run', '--detach', file('gated.json', { job: gated })]), 'job run the new plugin version');

    // The agent comes back: it stops the dropped workload (its volume waits for a plugin) and starts the new plugin allocation.
    const c = await startClient();
    await until('the dropped workload stopped', () => pidsWith('berth-next-writer').length === 0, 60_000);
    await until('the new plugin allocation starting', () => pidsWith(`[ ! -e ${go} ]`).length > 0, 60_000);
    c.child.kill('SIGINT');
    await until('the agent draining', () => c.stdout.includes('Caught SIGINT'));
    writeFileSync(go, '');
    // One Ctrl-C only (a second one exits at once).
    const stopped = await c.exited;
    assert.equal(stopped.code, 0, stopped.stdout + stopped.stderr);
    assert.match(stopped.stdout, /==> Berth agent stopped\n/);
    assert.deepEqual(published(next.ID), [], 'unpublished through the new plugin allocation before it was stopped');
    assert.deepEqual(staged(), [], 'unstaged too');
  });
});
