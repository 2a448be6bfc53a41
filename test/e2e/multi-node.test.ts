// One server and two client agents on this machine, as a user would run
// them: `berth agent --server --config server.hcl` and `berth agent --client
// --config ...` (one HCL, one JSON config), separate data dirs and ports.
//   - the hostpath plugin runs on both nodes as a system job;
//   - a volume is created for each node (topology_request pins it there) and
//     a workload on each claims and writes into its volume;
//   - a client agent is killed with SIGKILL and restarted: its workload
//     keeps running with its mount; the server is restarted: nothing lost;
//   - the jobs stop: every claim is released, no workload mount is left;
//   - the volume is claimable again: a new job reads back what was written;
//   - at the end (agents stopped with SIGINT) nothing is mounted under the
//     test's directory and nothing of it runs.
// The hostpath plugin keeps its volumes on the node that created them, so
// each node runs its own controller (a monolith plugin instance): a volume
// lives where its controller created it, workloads follow its accessible
// topology, and the server sends its ControllerPublish/Unpublish to the
// controller on that node (the one inside the volume's topology). The
// client configs hold no API token: `alloc logs` with the cluster's
// management token reaches a client agent, which checks it with the server.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub, CSIPlugin, CSIVolume, VolumeClaimState } from '../../src/api/index.js';
import { AgentRun, freePort, mountsUnder, ok, until } from '../support/agent-run.js';
import { hostpathVolumeHcl, perNodeHostpathPluginJob, rawExecJob } from '../support/runtime-cluster.js';
import { pidsWith } from '../support/procs.js';

const dir = mkdtempSync('/tmp/bmn-');
const MGMT = `mn-mgmt-${process.pid}-0123456789`;
const NODE = `mn-node-${process.pid}-0123456789`;

let server: AgentRun;
const clients: AgentRun[] = [];
let serverPort = 0;

/** What the test reads of a row of `GET /v1/nodes` (Nomad's NodeListStub). */
interface NodeRow {
  ID: string;
  Name: string;
  Status: string;
}
/** A row of `GET /v1/job/:id/allocations` (Nomad's AllocationListStub). */
type AllocRow = AllocationListStub;

/** A read of the server's API (polling through the CLI would cost a process start per poll). */
async function read<T>(p: string): Promise<T> {
  const res = await fetch(server.addr + p, { headers: { authorization: `Bearer ${MGMT}` } });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${p}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

async function nodes(): Promise<NodeRow[]> {
  return read<NodeRow[]>('/v1/nodes');
}

async function allocs(job: string): Promise<AllocRow[]> {
  return read<AllocRow[]>(`/v1/job/${job}/allocations`);
}

async function pluginStatus(): Promise<CSIPlugin> {
  return read('/v1/plugin/csi/hostpath');
}

async function running(job: string): Promise<AllocRow> {
  try {
    return await until(`job ${job} running`, async () => (await allocs(job)).find((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running'), 45_000);
  } catch (err) {
    const status = await server.cli(['job', 'status', job]);
    const alloc = (await allocs(job).catch(() => []))[0];
    const detail = alloc ? (await server.cli(['alloc', 'status', alloc.ID])).stdout : '';
    throw new Error(`${(err as Error).message}\n${status.stdout}${status.stderr}\n${detail}`);
  }
}

async function claimsOf(volume: string): Promise<VolumeClaimState[]> {
  return (await read<CSIVolume>(`/v1/volume/csi/${volume}`)).BerthClaims;
}

function writeJson(name: string, value: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify(value, null, 2));
  return file;
}

/** The hostpath plugin on every node; node n1/n2 is told from the allocation's directory. */
function pluginJob(): string {
  return writeJson('plugin.json', perNodeHostpathPluginJob({ dir: dir, nodeIdPrefix: 'mn-' }));
}

function volumeFile(id: string, node: string): string {
  const file = path.join(dir, `${id}.hcl`);
  writeFileSync(file, hostpathVolumeHcl(id, node));
  return file;
}

function workloadJob(id: string, volume: string, type: 'service' | 'batch', script: string): string {
  return writeJson(`${id}.json`, rawExecJob(id, volume, script, type));
}

const WRITER = 'echo "hello from $BERTH_ALLOC_ID" > "$BERTH_TASK_DIR/data/hello.txt" && exec sleep 600';

before(async () => {
  serverPort = await freePort();
  mkdirSync(path.join(dir, 'n1'));
  mkdirSync(path.join(dir, 'n2'));
  const serverConfig = path.join(dir, 'server.hcl');
  writeFileSync(
    serverConfig,
    `data_dir  = "${dir}/server"
bind_addr = "127.0.0.1"
ports {
  http = ${serverPort}
}
tokens {
  management = ["${MGMT}"]
  node       = ["${NODE}"]
}
log_level = "debug"
`,
  );
  server = new AgentRun(['--server', '--config', serverConfig]);
  await server.start();
  server.token = MGMT;

  // node 1 in HCL, node 2 in JSON (the canonical camelCase names): both forms of the same config.
  const c1 = path.join(dir, 'client-1.hcl');
  writeFileSync(
    c1,
    `data_dir = "${dir}/n1"
ports {
  http = ${await freePort()}
}
client {
  node_name      = "mn-node-1"
  server_address = "http://127.0.0.1:${serverPort}"
  token          = "${NODE}"
  options = {
    "driver.raw_exec.enable" = true
  }
}
csi {
  probe_interval = "1s"
  health_timeout = "20s"
}
log_level = "debug"
`,
  );
  const c2 = writeJson('client-2.json', {
    dataDir: `${dir}/n2`,
    ports: { http: await freePort() },
    client: { nodeName: 'mn-node-2', serverAddress: `http://127.0.0.1:${serverPort}`, token: NODE, options: { 'driver.raw_exec.enable': true } },
    csi: { probeInterval: '1s', healthTimeout: '20s' },
    logLevel: 'debug',
  });
  for (const config of [c1, c2]) {
    const c = new AgentRun(['--client', '--config', config]);
    await c.start();
    c.token = MGMT;
    clients.push(c);
  }
});

after(async () => {
  for (const c of clients) await c.stop('SIGINT').catch(() => undefined);
  await server?.stop('SIGINT').catch(() => undefined);
  for (const pid of pidsWith(dir)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
  rmSync(dir, { recursive: true, force: true });
});

describe('one server and two client agents', { timeout: 240_000 }, () => {
  let nodeIds: Record<'mn-node-1' | 'mn-node-2', string>;
  let baseline: string[];
  const mounted = new Map<string, string>();

  it('both client agents join the server', async () => {
    const ready = await until('two ready nodes', async () => {
      const list = await nodes();
      return list.filter((n) => n.Status === 'ready').length === 2 ? list : undefined;
    });
    nodeIds = Object.fromEntries(ready.map((n) => [n.Name, n.ID])) as typeof nodeIds;
    const table = ok(await server.cli(['node', 'status']), 'node status');
    assert.match(table, /\sdc1\s+mn-node-1\s+<none>\s+false\s+eligible\s+ready$/m);
    assert.match(table, /\sdc1\s+mn-node-2\s+<none>\s+false\s+eligible\s+ready$/m);
    assert.deepEqual(Object.keys(nodeIds).sort(), ['mn-node-1', 'mn-node-2']);
  });

  it('runs the hostpath plugin on both nodes as a system job: healthy controllers and nodes on each', async () => {
    ok(await server.cli(['job', 'run', pluginJob()]), 'job run plugin');
    const plugin = await until('the plugin healthy on both nodes', async () => {
      const p = await pluginStatus();
      return p.NodesHealthy === 2 && p.ControllersHealthy === 2 ? p : undefined;
    });
    assert.equal(plugin.NodesHealthy, 2);
    assert.match(ok(await server.cli(['plugin', 'status']), 'plugin status'), /hostpath\s+hostpath\.csi\.berth\.dev\s+2\/2\s+2\/2/);
    baseline = mountsUnder(dir);
  });

  it('a volume on each node, each claimed by a workload placed on that node', async () => {
    for (const [vol, node] of [
      ['vol-n1', 'mn-n1'],
      ['vol-n2', 'mn-n2'],
    ] as const) {
      ok(await server.cli(['volume', 'create', volumeFile(vol, node)]), `volume create ${vol}`);
    }
    ok(await server.cli(['job', 'run', '--detach', workloadJob('w1', 'vol-n1', 'service', WRITER)]), 'job run w1');
    ok(await server.cli(['job', 'run', '--detach', workloadJob('w2', 'vol-n2', 'service', WRITER)]), 'job run w2');
    const w1 = await running('w1');
    const w2 = await running('w2');
    assert.equal(w1.NodeID, nodeIds['mn-node-1'], 'vol-n1 is only reachable on node 1');
    assert.equal(w2.NodeID, nodeIds['mn-node-2'], 'vol-n2 is only reachable on node 2');
    for (const [a, n] of [
      [w1, 'n1'],
      [w2, 'n2'],
    ] as const) {
      const target = await until(`the volume mounted for ${a.ID}`, () => mountsUnder(path.join(dir, n)).find((m) => m.includes(a.ID) && m.endsWith('/data')));
      mounted.set(a.ID, target);
      await until(`${a.ID} wrote its file`, () => readFileSync(path.join(target, 'hello.txt'), 'utf8').includes(a.ID));
    }
    // Each claim was attached by its own node's controller (ControllerPublish to the node inside the volume's topology).
    for (const vol of ['vol-n1', 'vol-n2']) {
      const claims = await claimsOf(vol);
      assert.equal(claims.length, 1);
      assert.equal(claims[0]!.ControllerPublish, 'published', `${vol} was published by its controller`);
    }
  });

  it('a client agent killed with SIGKILL and restarted keeps its workload and its mount', async () => {
    const before1 = await running('w1');
    const c1 = clients[0] as AgentRun;
    const killed = await c1.stop('SIGKILL');
    assert.equal(killed.signal, 'SIGKILL');
    // While the agent is down, the workload and its mount stay.
    assert.ok(mountsUnder(path.join(dir, 'n1')).includes(mounted.get(before1.ID) as string));
    await c1.start();
    await until('node 1 ready again', async () => (await nodes()).find((n) => n.Name === 'mn-node-1' && n.Status === 'ready'));
    const after1 = await running('w1');
    if (after1.ID !== before1.ID) {
      // Say why it was replaced: the old allocation's status and the node's events tell (node down, a failed restore...).
      const old = (await server.cli(['alloc', 'status', before1.ID])).stdout;
      const node = (await server.cli(['node', 'status', nodeIds['mn-node-1'] as string])).stdout;
      assert.fail(`the same allocation runs: ${before1.ID} was replaced by ${after1.ID}\n${old}\n${node}`);
    }
    assert.ok(mountsUnder(path.join(dir, 'n1')).includes(mounted.get(before1.ID) as string));
    assert.equal((await claimsOf('vol-n1')).length, 1, 'still one claim');
  });

  it('the server restarted: nodes, plugin, allocations and claims are all still there', async () => {
    const stopped = await server.stop('SIGINT');
    assert.equal(stopped.code, 0);
    await server.start();
    await until('two ready nodes after the server restart', async () => (await nodes()).filter((n) => n.Status === 'ready').length === 2);
    await until('the plugin healthy after the server restart', async () => {
      const p = await pluginStatus();
      return p.NodesHealthy === 2 && p.ControllersHealthy === 2;
    });
    for (const job of ['w1', 'w2']) await running(job);
    assert.equal((await claimsOf('vol-n1')).length, 1);
    assert.equal((await claimsOf('vol-n2')).length, 1);
  });

  it('stopping the jobs releases every claim and leaves no workload mount', async () => {
    ok(await server.cli(['job', 'stop', 'w1']), 'job stop w1');
    ok(await server.cli(['job', 'stop', 'w2']), 'job stop w2');
    for (const vol of ['vol-n1', 'vol-n2']) await until(`every claim on ${vol} released`, async () => (await claimsOf(vol)).length === 0);
    // Only the stopped allocations' own secrets dirs may stay until their directories are collected.
    await until('no volume mount left', () => mountsUnder(dir).every((m) => baseline.includes(m) || m.endsWith('/secrets')));
    for (const target of mounted.values()) assert.ok(!mountsUnder(dir).includes(target));
  });

  it('each volume is claimable again and holds what was written', async () => {
    const reader = 'cat "$BERTH_TASK_DIR/data/hello.txt"';
    ok(await server.cli(['job', 'run', workloadJob('r1', 'vol-n1', 'batch', reader)]), 'job run r1');
    const done = await until('r1 complete', async () => (await allocs('r1')).find((a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed'));
    assert.equal(done.ClientStatus, 'complete');
    assert.equal(done.NodeID, nodeIds['mn-node-1']);
    const writer = [...mounted.keys()][0] as string;
    const logs = await server.cli(['alloc', 'logs', done.ID, 'main']);
    assert.equal(ok(logs, 'alloc logs r1').trim(), `hello from ${writer}`);
    ok(await server.cli(['job', 'stop', 'r1']), 'job stop r1');
    await until('the reader claim released', async () => (await claimsOf('vol-n1')).length === 0);
  });

  it('agents stopped with SIGINT leave nothing mounted', async () => {
    for (const c of clients) assert.equal((await c.stop('SIGINT')).code, 0);
    assert.equal((await server.stop('SIGINT')).code, 0);
    assert.deepEqual(mountsUnder(dir), []);
    assert.deepEqual(pidsWith(`${dir}/hp-`), [], 'no plugin process left');
  });
});
