// The node runtime end to end: a real Server, a node agent as its own
// process, the real hostpath CSI plugin run as a raw_exec system job, and
// workloads mounting a CSI volume through it (real processes, real mounts).
//   - a workload writes a file into its volume, a second one reads it back;
//   - the plugin job is updated (two plugin allocations at once) while a
//     workload runs: the workload keeps its mount and keeps writing;
//   - the agent is stopped (SIGTERM) and killed (SIGKILL) and restarted:
//     tasks keep their PIDs, the plugin stays registered, mounts stay, logs
//     continue; a workload stopped while the agent was down is cleaned up
//     and its claim released (docs/csi-rules.md scenarios 13, 18, 19);
//   - the plugin process crashes: restarted, re-registered, existing mounts
//     untouched (scenario 2);
//   - the agent drains on SIGINT: every allocation stops, claims released;
//   - a volume secret that crossed the node connection is in no log or file.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub, CSIPlugin, CSIVolume } from '../../src/api/index.js';
import { volumeRequest } from '../support/csi-api.js';
import { AgentProcess, alive, cleanupUnder, hostpathPluginJob, mountsUnder, pidsWith, REPO, TestServer, until, volumeJob } from '../support/runtime-cluster.js';

const dir = mkdtempSync('/tmp/brt-');
const SECRET = `s3cr3t-${process.pid}-value`;
const hpData = path.join(dir, 'hpdata');
const agentDir = path.join(dir, 'a');
let server: TestServer;
let agent: AgentProcess;


async function allocsOf(jobId: string): Promise<AllocationListStub[]> {
  return server.ok<AllocationListStub[]>('GET', `/v1/job/${jobId}/allocations`);
}

async function liveAlloc(jobId: string): Promise<AllocationListStub | undefined> {
  return (await allocsOf(jobId)).find((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running');
}

async function finished(jobId: string): Promise<AllocationListStub> {
  return until(`job ${jobId} to finish`, async () => (await allocsOf(jobId)).find((a) => a.ClientStatus === 'complete' || a.ClientStatus === 'failed'), 60_000);
}

async function pluginHealthy(): Promise<CSIPlugin> {
  return until('the hostpath plugin to be healthy on the server', async () => {
    const p = await server.call<CSIPlugin>('GET', '/v1/plugin/csi/hostpath');
    return p.status === 200 && p.body.ControllersHealthy >= 1 && p.body.NodesHealthy >= 1 ? p.body : undefined;
  }, 60_000);
}

function describeAlloc(a: AllocationListStub): string {
  return JSON.stringify({ status: a.ClientStatus, desc: a.ClientDescription, events: Object.values(a.TaskStates ?? {}).flatMap((t) => (t.Events ?? []).slice(-4).map((e) => e.DisplayMessage || e.Message)) });
}

/** Where the sleeper writes: resolved from its task dir (raw_exec binds the volume at <task dir>/data). */
function sleeperFile(alloc: AllocationListStub, name: string): string {
  return path.join(agentDir, 'alloc', alloc.ID, 'main', 'local', 'data', name);
}

before(async () => {
  mkdirSync(hpData, { recursive: true });
  server = new TestServer(path.join(dir, 'server'));
  await server.start();
  agent = new AgentProcess(server, { dataDir: agentDir, nodeName: 'rt-node', hostVolumes: { repo: REPO, hpdata: hpData } });
  await agent.start();
});

after(async () => {
  await agent?.drain().catch(() => undefined);
  await agent?.kill().catch(() => undefined);
  await server?.stop();
  // Nothing of ours may stay mounted or running.
  cleanupUnder(dir);
});

describe('node runtime end to end (hostpath plugin as raw_exec)', { timeout: 240_000 }, () => {
  let sleeper: AllocationListStub;
  let sleeperPid = 0;

  it('runs the hostpath plugin as a system job: registered, healthy on the server', async () => {
    await server.register(hostpathPluginJob({ id: 'hostpath-plugin', driver: 'raw_exec', dataDir: hpData }));
    const plugin = await pluginHealthy();
    assert.equal(plugin.ID, 'hostpath');
    const [alloc] = await allocsOf('hostpath-plugin');
    assert.ok(alloc);
    await until('the plugin allocation to be running', async () => (await liveAlloc('hostpath-plugin')) ?? false);
  });

  it('a workload writes a file into its CSI volume and a second workload reads it back', async () => {
    await server.ok(
      'PUT',
      '/v1/volume/csi/shared/create',
      volumeRequest('shared', {
        pluginId: 'hostpath',
        name: 'shared',
        capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }],
        capacityMinBytes: 1024 * 1024,
        // Sent to the plugin's controller through the agent's node connection; never written down there.
        secrets: { api_token: SECRET },
      }),
    );
    const token = `token-${Date.now()}`;
    const find = 'D="$BERTH_TASK_DIR/data"; [ -d "$D" ] || D=/data';
    await server.register(volumeJob({ id: 'writer', type: 'batch', volumeId: 'shared', script: `${find}; echo ${token} > "$D/hello.txt"` }));
    const w = await finished('writer');
    assert.equal(w.ClientStatus, 'complete', describeAlloc(w));
    await until('the writer claim to be released', async () => (await server.ok<CSIVolume>('GET', '/v1/volume/csi/shared')).BerthClaims.length === 0);

    await server.register(volumeJob({ id: 'reader', type: 'batch', volumeId: 'shared', script: `${find}; grep -qx ${token} "$D/hello.txt"` }));
    const r = await finished('reader');
    assert.equal(r.ClientStatus, 'complete', `the reader found the writer's file: ${describeAlloc(r)}`);
    await until('the reader claim to be released', async () => (await server.ok<CSIVolume>('GET', '/v1/volume/csi/shared')).BerthClaims.length === 0);
  });

  it('the plugin job is updated (two plugin allocations at once) while a workload runs: nothing breaks', async () => {
    const script = 'D="$BERTH_TASK_DIR/data"; echo $$ > "$D/pid"; while true; do date +%s%N >> "$D/ticks"; echo tick; sleep 0.1; done';
    await server.register(volumeJob({ id: 'sleeper', type: 'service', volumeId: 'shared', script }));
    sleeper = await until('the sleeper to run', () => liveAlloc('sleeper'), 60_000);
    sleeperPid = Number(await until('the sleeper pid', () => (existsSync(sleeperFile(sleeper, 'pid')) ? readFileSync(sleeperFile(sleeper, 'pid'), 'utf8').trim() : undefined)));
    assert.ok(alive(sleeperPid));
    const oldPlugin = (await liveAlloc('hostpath-plugin'))!;

    // A new version of the plugin job: a new allocation starts beside the old one.
    await server.register(hostpathPluginJob({ id: 'hostpath-plugin', driver: 'raw_exec', dataDir: hpData, env: { VERSION: '2' } }));
    const newPlugin = await until('the new plugin allocation to run', async () => (await allocsOf('hostpath-plugin')).find((a) => a.ID !== oldPlugin.ID && a.ClientStatus === 'running'), 60_000);
    await until('the old plugin allocation to stop', async () => (await allocsOf('hostpath-plugin')).find((a) => a.ID === oldPlugin.ID && a.ClientStatus !== 'running'), 60_000);
    await until('the new allocation to serve the plugin on the server', async () => {
      const p = await server.ok<CSIPlugin>('GET', '/v1/plugin/csi/hostpath');
      return p.Nodes?.[agent.nodeId]?.AllocID === newPlugin.ID && p.Nodes[agent.nodeId]?.Healthy ? p : undefined;
    });
    // Both allocations were registered at once: the newer one took over from the older one.
    assert.ok(agent.log().includes(`is now served by allocation ${newPlugin.ID} (was ${oldPlugin.ID})`), agent.log().split('\n').filter((l) => l.includes('"subsystem":"csi"')).map((l) => (JSON.parse(l) as { msg: string }).msg).join('\n'));

    // The workload never noticed: same process, its volume still mounted, still writing.
    const size = statSync(sleeperFile(sleeper, 'ticks')).size;
    await until('the sleeper to keep writing', () => statSync(sleeperFile(sleeper, 'ticks')).size > size);
    assert.ok(alive(sleeperPid));
    assert.equal((await liveAlloc('sleeper'))?.ID, sleeper.ID);
  });

  it('agent stopped, then SIGKILLed, and restarted: tasks keep their PIDs, plugin stays registered, mounts stay, logs continue', async () => {
    const pluginAlloc = (await liveAlloc('hostpath-plugin'))!;
    const pluginPids = pidsWith(`--data-dir ${hpData}`);
    assert.ok(pluginPids.length >= 1);
    const mountsBefore = mountsUnder(agentDir);
    assert.ok(mountsBefore.some((m) => m.includes(sleeper.ID)), 'the sleeper volume is mounted');
    const logDir = path.join(agentDir, 'alloc', sleeper.ID, 'alloc', 'logs');

    for (const how of ['stop', 'kill'] as const) {
      await agent[how]();
      const ticks = statSync(sleeperFile(sleeper, 'ticks')).size;
      await until('the sleeper to keep writing with no agent', () => statSync(sleeperFile(sleeper, 'ticks')).size > ticks);
      await agent.start();
      await until('the restarted agent to heartbeat', async () => {
        const n = await server.ok<{ Status: string }>('GET', `/v1/node/${agent.nodeId}`);
        return n.Status === 'ready';
      });
      assert.ok(alive(sleeperPid), `the sleeper kept its process across agent ${how}`);
      for (const pid of pluginPids) assert.ok(alive(pid), `the plugin kept its process across agent ${how}`);
      assert.deepEqual(mountsUnder(agentDir).filter((m) => mountsBefore.includes(m)).sort(), [...mountsBefore].sort(), `mounts stay across agent ${how}`);
      await pluginHealthy();
      assert.equal((await liveAlloc('hostpath-plugin'))?.ID, pluginAlloc.ID, 'the same plugin allocation serves');
      assert.equal((await liveAlloc('sleeper'))?.ID, sleeper.ID);
    }
    // Logs continue in the rotated files, written by the task's executor, agent or not.
    const sizeOf = (): number => readdirSizes(logDir);
    const logged = sizeOf();
    assert.ok(logged > 0, 'the sleeper logged');
    await until('the sleeper log to grow after the restarts', () => sizeOf() > logged);
  });

  it('a workload stopped while the agent was down is cleaned up after restart, its claim released', async () => {
    await agent.kill();
    await server.ok('DELETE', `/v1/job/sleeper`);
    assert.ok(alive(sleeperPid), 'nothing acts while the agent is down');
    await agent.start();
    await until('the sleeper process to be stopped', () => !alive(sleeperPid), 60_000);
    // The allocation directory (and its secrets tmpfs) stays until the server garbage-collects the allocation.
    const volumeMounts = (): string[] => mountsUnder(agentDir).filter((m) => m.includes(sleeper.ID) && !m.endsWith('/secrets'));
    await until('the sleeper volume to be unmounted', () => volumeMounts().length === 0, 60_000);
    await until('its claim to be released', async () => (await server.ok<CSIVolume>('GET', '/v1/volume/csi/shared')).BerthClaims.length === 0, 60_000);
  });

  it('the plugin process crashes: it is restarted and re-registered; existing mounts stay', async () => {
    const script = 'D="$BERTH_TASK_DIR/data"; echo $$ > "$D/pid"; while true; do date +%s%N >> "$D/ticks"; sleep 0.1; done';
    await server.register(volumeJob({ id: 'keeper', type: 'service', volumeId: 'shared', script }));
    const keeper = await until('the keeper to run', () => liveAlloc('keeper'), 60_000);
    const mounted = mountsUnder(agentDir).filter((m) => m.includes(keeper.ID));
    assert.ok(mounted.length > 0);
    const before = pidsWith(`--data-dir ${hpData}`);
    for (const pid of before) process.kill(pid, 'SIGKILL');
    await until('a new plugin process', () => pidsWith(`--data-dir ${hpData}`).some((p) => !before.includes(p)), 60_000);
    await pluginHealthy();
    assert.deepEqual(mountsUnder(agentDir).filter((m) => m.includes(keeper.ID)), mounted, 'the crash unmounted nothing');
    const size = statSync(sleeperFile(keeper, 'ticks')).size;
    await until('the keeper to keep writing', () => statSync(sleeperFile(keeper, 'ticks')).size > size);
  });

  it('SIGINT drains the agent: every allocation stops, volumes unmounted, claims released', async () => {
    await agent.drain();
    assert.deepEqual(pidsWith(`--data-dir ${hpData}`), [], 'the plugin stopped');
    assert.deepEqual(
      mountsUnder(agentDir).filter((m) => m.includes('/per-alloc/') || m.includes('/staging/')),
      [],
      'no volume stays mounted',
    );
    await until('every claim to be released', async () => (await server.ok<CSIVolume>('GET', '/v1/volume/csi/shared')).BerthClaims.length === 0, 30_000);
  });

  it('never writes a volume secret into the agent log or any file of the agent (scenario 16)', () => {
    assert.ok(agent.log().includes('csi'), 'the agent logged at debug level');
    assert.ok(!agent.log().includes(SECRET), 'a secret reached the agent log');
    let hits = '';
    try {
      hits = execFileSync('grep', ['-rl', '--binary-files=text', SECRET, agentDir]).toString();
    } catch (err) {
      // grep exits 1 when nothing matches, 2 when a file vanished mid-search: what it found still counts.
      hits = String((err as { stdout?: Buffer }).stdout ?? '');
    }
    assert.equal(hits, '', 'a secret reached a file of the agent');
  });
});

function readdirSizes(d: string): number {
  let total = 0;
  for (const f of readdirSync(d)) total += statSync(path.join(d, f)).size;
  return total;
}
