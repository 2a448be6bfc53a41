// docs/csi-rules.md scenario 19: the agent (and its server) die and the agent
// comes back first. Until the server's allocation list arrives the agent
// acts on nothing: the running workload keeps its process and its mounts.
// A server that comes back with OLDER state (a stale list that does not
// know the workload) is not obeyed either. When the real state is back, the
// workload is still the same process with the same single write claim.

import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { after, before, describe, it } from 'node:test';
import type { Allocation, AllocationListStub, CSIPlugin, CSIVolume } from '../../src/api/index.js';
import { volumeRequest } from '../support/csi-api.js';
import { AgentProcess, alive, cleanupUnder, hostpathPluginJob, mountsUnder, REPO, TestServer, until, volumeJob } from '../support/runtime-cluster.js';

const dir = mkdtempSync('/tmp/brs-');
const hpData = path.join(dir, 'hpdata');
const agentDir = path.join(dir, 'a');
const serverDir = path.join(dir, 'server');
const snapshotDir = path.join(dir, 'server-snapshot');
let server: TestServer;
let agent: AgentProcess;

function copyState(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const f of readdirSync(to)) rmSync(path.join(to, f), { force: true });
  for (const f of readdirSync(from)) if (f.startsWith('state.db')) copyFileSync(path.join(from, f), path.join(to, f));
}

/** How many log lines since `offset` carry the message `msg`. */
function logged(offset: number, msg: string): number {
  return agent.log().slice(offset).split('\n').filter((l) => l.includes(`"msg":"${msg}`)).length;
}

/** The allocation-list index the agent has written down as acted on (its client state file). */
function recordedAllocIndex(): number {
  const db = new Database(path.join(agentDir, 'client.db'), { readonly: true, fileMustExist: true });
  try {
    const row = db.prepare<[], { value: string }>("SELECT value FROM records WHERE bucket = 'agent' AND key = 'node'").get();
    return row ? ((JSON.parse(row.value) as { allocIndex?: number }).allocIndex ?? 0) : 0;
  } finally {
    db.close();
  }
}

/** Log lines the agent wrote since `offset` that would mean it acted destructively. */
function destructiveSince(offset: number): string[] {
  return agent
    .log()
    .slice(offset)
    .split('\n')
    .filter((l) => /"msg":"(task stopped|task destroyed|volume unpublished|volume unstaged|volume claim released|allocation destroyed)"/.test(l));
}

before(async () => {
  mkdirSync(hpData, { recursive: true });
  server = new TestServer(serverDir);
  await server.start();
  agent = new AgentProcess(server, { dataDir: agentDir, nodeName: 'rt-restart-node', hostVolumes: { repo: REPO, hpdata: hpData } });
  await agent.start();
});

after(async () => {
  if (server.server.state !== 'running') await server.start().catch(() => undefined);
  await agent?.drain().catch(() => undefined);
  await agent?.kill().catch(() => undefined);
  await server?.stop();
  cleanupUnder(dir);
});

describe('agent restarted before its server (scenario 19)', { timeout: 120_000 }, () => {
  it('acts on no empty or stale list: the workload keeps its process, mounts and only claim', async () => {
    await server.register(hostpathPluginJob({ id: 'hostpath-plugin', driver: 'raw_exec', dataDir: hpData }));
    await until('the plugin to be healthy', async () => {
      const p = await server.call<CSIPlugin>('GET', '/v1/plugin/csi/hostpath');
      return p.status === 200 && p.body.NodesHealthy === 1 && p.body.ControllersHealthy === 1;
    }, 60_000);
    await server.ok(
      'PUT',
      '/v1/volume/csi/db/create',
      volumeRequest('db', { pluginId: 'hostpath', name: 'db', capabilities: [{ accessMode: 'single-node-writer', attachmentMode: 'file-system' }] }),
    );
    // The server's state before the workload existed: what a stale server would come back with.
    await server.stop();
    copyState(serverDir, snapshotDir);
    await server.start();

    const script = 'D="$BERTH_TASK_DIR/data"; echo $$ > "$D/pid"; while true; do date +%s%N >> "$D/ticks"; sleep 0.1; done';
    await server.register(volumeJob({ id: 'db', type: 'service', volumeId: 'db', script }));
    const alloc = await until('the workload to run', async () => (await server.ok<AllocationListStub[]>('GET', '/v1/job/db/allocations')).find((a) => a.ClientStatus === 'running'), 60_000);
    const pidFile = path.join(agentDir, 'alloc', alloc.ID, 'main', 'local', 'data', 'pid');
    const pid = Number(await until('the workload pid', () => (existsSync(pidFile) ? readFileSync(pidFile, 'utf8').trim() : undefined)));
    const mounts = mountsUnder(agentDir).filter((m) => m.includes(alloc.ID));
    assert.ok(mounts.length > 0);
    // The agent has written down a list index that knows the workload: the stale server's
    // state (from before the job) is then older than anything the agent acted on.
    await until('the agent to record a list index that knows the workload', () => recordedAllocIndex() >= alloc.CreateIndex);

    // The agent and the server die together; the agent comes back first.
    await agent.kill();
    await server.stop();
    let offset = agent.log().length;
    await agent.start();
    await until('the agent to restore the workload', () => agent.log().slice(offset).includes('allocation restored'));
    // The window closes once the agent is fully up (restore done, every restored runner waiting
    // for the server) and has tried the server and failed twice: only a server's list could make
    // it act, and anything it did on its own would be logged before these lines.
    await until('the agent to start and fail to reach the server twice', () => logged(offset, 'client started') === 1 && logged(offset, 'registration failed') >= 2);
    assert.ok(alive(pid), 'the workload kept running with no server');
    assert.deepEqual(mountsUnder(agentDir).filter((m) => m.includes(alloc.ID)), mounts, 'its mounts stay with no server');
    assert.deepEqual(destructiveSince(offset), [], 'nothing destructive before the server answers');

    // A server with stale state (it never heard of the workload) answers: the agent does not obey it.
    copyState(snapshotDir, path.join(dir, 'stale'));
    const stale = new TestServer(path.join(dir, 'stale'));
    await stale.start(server.port);
    // The window closes when the agent has refused the stale list and come back for another one,
    // which it refuses again: the handling of the first refusal is over, and nothing was done.
    await until('the agent to refuse the stale list twice', () => logged(offset, 'the server sent an allocation list older than one already seen') >= 2, 30_000);
    assert.ok(alive(pid), 'a stale list does not stop the workload');
    assert.deepEqual(mountsUnder(agentDir).filter((m) => m.includes(alloc.ID)), mounts);
    assert.deepEqual(destructiveSince(offset), []);
    await stale.stop();

    // The real state comes back: the same process, the same mounts, one write claim.
    offset = agent.log().length;
    await server.start(server.port);
    await until('the agent to get the real list', () => agent.log().slice(offset).includes('first allocation list from the server') || agent.log().slice(offset).includes('volumes reconciled'), 30_000);
    await until('the workload to be reported running', async () => (await server.ok<Allocation>('GET', `/v1/allocation/${alloc.ID}`)).ClientStatus === 'running');
    // The window closes when the one step the real list sets off that could unmount, the volume
    // reconcile after the first list, has finished (successfully or not).
    await until('the volume reconcile after the first list to finish', () => logged(offset, 'volumes reconciled with the server') + logged(offset, 'reconciling volumes failed') > 0, 30_000);
    assert.ok(alive(pid), 'the workload is the same process');
    assert.deepEqual(mountsUnder(agentDir).filter((m) => m.includes(alloc.ID)), mounts);
    const claims = (await server.ok<CSIVolume>('GET', '/v1/volume/csi/db')).BerthClaims;
    assert.deepEqual(
      claims.map((c) => [c.AllocationID, c.Mode, c.State]),
      [[alloc.ID, 'write', 'taken']],
    );
    assert.deepEqual(destructiveSince(offset), []);
  });
});
