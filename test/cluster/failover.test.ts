// Three servers on a three-member etcd and two client agents, all real
// processes, as a user runs them. The hostpath plugin runs on both nodes; a
// single-node-writer volume is in use by a workload on node 1.
//   - the leader is killed with SIGKILL: another server leads, the workload
//     keeps running with its mount and its one claim, the nodes stay ready
//     and reconnect to the new leader, and a job submitted during the
//     failover is placed once;
//   - the leader is killed while ControllerPublish is in flight (the fake
//     CSI plugin holds it) and while ControllerUnpublish is: after failover
//     the claim completes once, then is released without leaking, and the
//     volume can be claimed again;
//   - a leader paused with SIGSTOP and resumed after another leads writes
//     nothing: the nodes it would have marked down (their heartbeats went
//     elsewhere while it was paused) stay as they were;
//   - one etcd member killed: nothing changes; two killed: writes are refused
//     with STORE_UNAVAILABLE (CLI exit code and message); restarted: writes
//     work and nothing was lost.

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { CSIPlugin, CSIVolume, VolumeClaimState } from '../../src/api/index.js';
import { mountsUnder, ok, REPO, until } from '../support/agent-run.js';
import { hostpathVolumeHcl, perNodeHostpathPluginJob, rawExecJob } from '../support/runtime-cluster.js';
import { Cluster, type ServerProc } from '../support/process-cluster.js';
import { TS_LOADER } from '../support/ts-loader.js';

const WRITER = 'echo "hello from $BERTH_ALLOC_ID" > "$BERTH_TASK_DIR/data/hello.txt" && exec sleep 600';

/** What the test reads of a row of `GET /v1/nodes` (Nomad's NodeListStub). */
interface NodeRow {
  ID: string;
  Name: string;
  Status: string;
  ModifyIndex: number;
}
/** What the test reads of a row of `GET /v1/job/:id/allocations` (Nomad's AllocationListStub). */
interface AllocRow {
  ID: string;
  NodeID: string;
  ClientStatus: string;
  DesiredStatus: string;
}

const cluster = new Cluster();

before(async () => {
  // write_timeout 2s: without quorum a write is refused after 2 s, not 5.
  await cluster.start({ etcdMembers: 3, servers: 3, clients: 2, leaseTtl: '2s', etcdWriteTimeout: '2s' });
});

after(async () => {
  await cluster.close();
});

function pluginJob(): string {
  return cluster.writeJson('plugin.json', perNodeHostpathPluginJob({ dir: cluster.dir, nodeIdPrefix: 'cl-' }));
}

function volumeFile(id: string, node: string): string {
  const file = path.join(cluster.dir, `${id}.hcl`);
  writeFileSync(file, hostpathVolumeHcl(id, node));
  return file;
}

function workloadJob(id: string, volume: string | undefined, script: string, type: 'service' | 'batch' = 'service'): string {
  return cluster.writeJson(`${id}.json`, rawExecJob(id, volume, script, type));
}

/** The fake CSI plugin on both nodes; its first ControllerPublish and first ControllerUnpublish hang (see _gated-plugin.ts). */
function fakePluginJob(): string {
  const dir = cluster.dir;
  const script = [
    'case "$BERTH_ALLOC_DIR" in */n1/*) n=n1 ;; */n2/*) n=n2 ;; *) echo "unknown node: $BERTH_ALLOC_DIR" >&2; exit 1 ;; esac',
    `exec "${process.execPath}" --import "${TS_LOADER}" "${REPO}/test/cluster/_gated-plugin.ts" "$CSI_ENDPOINT" "fake-$n" "$n" "${dir}/fake-$n.json"`,
  ].join('\n');
  return cluster.writeJson('fake-plugin.json', {
    job: {
      id: 'fake-plugin',
      type: 'system',
      groups: [
        {
          name: 'plugin',
          restart: { attempts: 5, interval: '1m', delay: '500ms', mode: 'delay' },
          tasks: [
            {
              name: 'plugin',
              driver: 'raw_exec',
              config: { command: '/bin/sh', args: ['-c', script] },
              csiPlugin: { id: 'fake', type: 'monolith', mountDir: '/csi', healthTimeout: '30s' },
              resources: { cpuMhz: 100, memoryMb: 256 },
            },
          ],
        },
      ],
    },
  });
}

interface FakeState {
  unpublishArmed: boolean;
  calls: Record<string, number>;
  controllerPublished: Record<string, string[]>;
  volumes: string[];
}

function fakeState(node: 'n1' | 'n2'): FakeState | undefined {
  try {
    return JSON.parse(readFileSync(path.join(cluster.dir, `fake-${node}.json`), 'utf8')) as FakeState;
  } catch {
    return undefined;
  }
}

function fakeVolumeFile(id: string, zone: string): string {
  const file = path.join(cluster.dir, `${id}.hcl`);
  writeFileSync(
    file,
    `id        = "${id}"
name      = "${id}"
type      = "csi"
plugin_id = "fake"
capacity_min = "1MiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

topology_request {
  required {
    topology {
      segments = { "topology.fake.csi.berth.dev/zone" = "${zone}" }
    }
  }
}
`,
  );
  return file;
}

/** SIGKILLs the leader; resolves once another leads, with both. */
async function killLeader(): Promise<{ old: ServerProc; next: ServerProc }> {
  const old = await cluster.leader();
  await old.run.stop('SIGKILL');
  return { old, next: await cluster.leader() };
}

const nodes = (): Promise<NodeRow[]> => cluster.read<NodeRow[]>('/v1/nodes');
const allocs = (job: string): Promise<AllocRow[]> => cluster.read<AllocRow[]>(`/v1/job/${job}/allocations`);
const claimsOf = async (volume: string): Promise<VolumeClaimState[]> => (await cluster.read<CSIVolume>(`/v1/volume/csi/${volume}`)).BerthClaims;

async function running(job: string): Promise<AllocRow> {
  try {
    return await until(`job ${job} running`, async () => (await allocs(job)).find((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running'), 60_000);
  } catch (err) {
    const via = cluster.live()[0] as ServerProc;
    const list = await allocs(job).catch(() => []);
    const details = await Promise.all(list.map(async (a) => (await via.run.cli(['alloc', 'status', a.ID], { addr: via.url })).stdout));
    const volumes = await via.run.cli(['volume', 'status'], { addr: via.url });
    throw new Error(`${(err as Error).message}\n${details.join('\n')}\n${volumes.stdout}\nfake n1: ${JSON.stringify(fakeState('n1'))}`, { cause: err });
  }
}

/** Runs the CLI against `via` until it succeeds (a user retrying during a failover); returns every attempt's result. */
async function cliUntilOk(via: () => ServerProc, args: readonly string[]): Promise<Array<{ code: number | null; stderr: string }>> {
  const attempts: Array<{ code: number | null; stderr: string }> = [];
  await until(`berth ${args.join(' ')} accepted`, async () => {
    const r = await via().run.cli(args, { addr: via().url });
    attempts.push({ code: r.code, stderr: r.stderr });
    return r.code === 0;
  });
  return attempts;
}

describe('three servers on etcd, two client agents', { timeout: 240_000 }, () => {
  let mount = '';
  let workload: AllocRow;

  it('a single-node-writer volume is in use by a workload on node 1', async () => {
    await until('two ready nodes', async () => (await nodes()).filter((n) => n.Status === 'ready').length === 2);
    const leader = await cluster.leader();
    ok(await leader.run.cli(['job', 'run', pluginJob()]), 'job run plugin');
    await until('the plugin healthy on both nodes', async () => {
      const p = await cluster.read<CSIPlugin>('/v1/plugin/csi/hostpath');
      return p.NodesHealthy === 2 && p.ControllersHealthy === 2;
    });
    // Through a follower: it forwards the writes to the leader.
    const follower = cluster.live().find((s) => s !== leader) as ServerProc;
    ok(await follower.run.cli(['volume', 'create', volumeFile('vol-1', 'cl-n1')], { addr: follower.url }), 'volume create');
    ok(await follower.run.cli(['job', 'run', '--detach', workloadJob('w1', 'vol-1', WRITER)], { addr: follower.url }), 'job run w1');
    workload = await running('w1');
    mount = await until('the volume mounted', () => mountsUnder(path.join(cluster.dir, 'n1')).find((m) => m.includes(workload.ID) && m.endsWith('/data')));
    await until('the workload wrote its file', () => readFileSync(path.join(mount, 'hello.txt'), 'utf8').includes(workload.ID));
    assert.equal((await claimsOf('vol-1')).length, 1);
    const members = ok(await follower.run.cli(['server', 'members'], { addr: follower.url }), 'server members');
    assert.match(members, new RegExp(`${leader.name}\\s+${new URL(leader.url).host.replace(/\./g, '\\.')}\\s+true\\s+alive`));
    assert.equal(members.split('\n').filter((l) => /\balive\b/.test(l)).length, 3);
  });

  it('SIGKILL of the leader: another leads, the workload keeps running with one claim, a job submitted meanwhile is placed once', async (t) => {
    const before = await nodes();
    const old = await cluster.leader();
    const killedAt = Date.now();
    await old.run.stop('SIGKILL');
    const submitted = cliUntilOk(() => cluster.live()[0] as ServerProc, ['job', 'run', '--detach', workloadJob('during', undefined, 'exec sleep 600')]);
    const next = await cluster.leader();
    t.diagnostic(`new leader ${next.name} named by every server ${Date.now() - killedAt} ms after the SIGKILL`);
    assert.notEqual(next, old);
    const attempts = await submitted;
    t.diagnostic(`the job was accepted at attempt ${attempts.length} (${attempts.map((a) => a.code).join(',')})`);
    for (const a of attempts.slice(0, -1)) assert.match(a.stderr, /SERVER_LEADER_UNAVAILABLE|UNAVAILABLE|leader/, 'a refused attempt says why');
    const placed = await running('during');
    // The nodes reconnect to the new leader; none was marked down by the change.
    await until('both nodes connected to the new leader', async () => (await cluster.status(next))?.index !== undefined && (await nodeConnections(next)) === 2);
    const afterNodes = await nodes();
    for (const n of before) assert.equal(afterNodes.find((m) => m.ID === n.ID)?.Status, 'ready', `${n.Name} stayed ready`);
    assert.equal((await allocs('during')).length, 1, 'placed once');
    assert.ok(placed);
    const w = await running('w1');
    assert.equal(w.ID, workload.ID, 'the same allocation runs');
    assert.ok(mountsUnder(path.join(cluster.dir, 'n1')).includes(mount), 'its mount is still there');
    assert.match(readFileSync(path.join(mount, 'hello.txt'), 'utf8'), new RegExp(workload.ID));
    assert.equal((await claimsOf('vol-1')).length, 1, 'one claim, not two');
    // The killed server shows as failed, with since when; the others' uptime reads as a duration.
    const members = await until('the killed server listed as failed since a time', async () => {
      const out = ok(await next.run.cli(['server', 'members'], { addr: next.url }), 'server members');
      return new RegExp(`^${old.name}\\s+\\S+\\s+false\\s+failed\\s+-\\s+\\d{4}-\\d\\d-\\d\\dT`, 'm').test(out) ? out : undefined;
    });
    assert.match(members, new RegExp(`^${next.name}\\s+\\S+\\s+true\\s+alive\\s+\\d+m?\\d*s\\s+-$`, 'm'));
    assert.doesNotMatch(members, /ago\s+-$|circuit breaker/m);
    // The killed server comes back as a follower.
    await old.run.start();
    assert.notEqual(await cluster.leader(), old);
  });

  it('SIGKILL of the leader while ControllerPublish is in flight: after failover the claim completes once', async () => {
    const leader = await cluster.leader();
    ok(await leader.run.cli(['job', 'run', fakePluginJob()], { addr: leader.url }), 'job run fake-plugin');
    await until('the fake plugin healthy on both nodes', async () => {
      const p = await cluster.read<CSIPlugin>('/v1/plugin/csi/fake').catch(() => undefined);
      return p && p.NodesHealthy === 2 && p.ControllersHealthy === 2;
    });
    ok(await leader.run.cli(['volume', 'create', fakeVolumeFile('vol-f', 'n1')], { addr: leader.url }), 'volume create vol-f');
    ok(await leader.run.cli(['job', 'run', '--detach', workloadJob('mc', 'vol-f', 'exec sleep 600')], { addr: leader.url }), 'job run mc');
    await until('ControllerPublish in flight on node 1', () => (fakeState('n1')?.calls['ControllerPublishVolume'] ?? 0) >= 1);
    const { old } = await killLeader();
    const alloc = await running('mc');
    const claims = await claimsOf('vol-f');
    if (claims.length !== 1) await explainClaims('vol-f', claims, alloc.ID);
    assert.deepEqual(claims.map((c) => c.AllocationID), [alloc.ID], 'one claim, by the running allocation');
    const st = fakeState('n1') as FakeState;
    assert.ok((st.calls['ControllerPublishVolume'] ?? 0) >= 2, 'the new leader published again');
    assert.deepEqual(Object.values(st.controllerPublished).map((n) => n.length), [1], 'the volume is published to one node, once');
    assert.equal((await allocs('mc')).length, 1);
    await old.run.start();
  });

  it('SIGKILL of the leader while ControllerUnpublish is in flight: the release completes, nothing leaks, the volume is claimable again', async () => {
    const leader = await cluster.leader();
    const unpublishes = fakeState('n1')?.calls['ControllerUnpublishVolume'] ?? 0;
    const unpublishesOnN2 = fakeState('n2')?.calls['ControllerUnpublishVolume'] ?? 0;
    writeFileSync(path.join(cluster.dir, 'fake-n1.json.hang-unpublish'), '');
    await until('the plugin holds the next ControllerUnpublish', () => fakeState('n1')?.unpublishArmed);
    ok(await leader.run.cli(['job', 'stop', 'mc'], { addr: leader.url }), 'job stop mc');
    await until('ControllerUnpublish in flight on node 1', () => (fakeState('n1')?.calls['ControllerUnpublishVolume'] ?? 0) > unpublishes);
    const { old } = await killLeader();
    await until('the claim released', async () => (await claimsOf('vol-f')).length === 0);
    // Each node's fake controller keeps its own model, where a real plugin's controllers share one
    // backend: the new leader may send the unpublish to node 2's controller (node 1's may not be
    // connected to it yet), which then counts as the volume's unpublish.
    await until(
      'the plugin holds no publication',
      () =>
        Object.values(fakeState('n1')?.controllerPublished ?? { x: [1] }).every((n) => n.length === 0) ||
        (fakeState('n2')?.calls['ControllerUnpublishVolume'] ?? 0) > unpublishesOnN2,
    ).catch(async () => explainClaims('vol-f', [], `none (the plugin still holds ${JSON.stringify(fakeState('n1'))}; node 2's controller: ${JSON.stringify(fakeState('n2'))})`));
    await old.run.start();
    const next = await cluster.leader();
    ok(await next.run.cli(['job', 'run', '--detach', workloadJob('mc2', 'vol-f', 'exec sleep 600')], { addr: next.url }), 'job run mc2');
    const again = await running('mc2');
    const claimsNow = await claimsOf('vol-f');
    if (claimsNow.length !== 1) await explainClaims('vol-f', claimsNow, again.ID);
    assert.deepEqual((await claimsOf('vol-f')).map((c) => c.AllocationID), [again.ID]);
  });

  it('a leader paused with SIGSTOP and resumed after another leads writes nothing', async () => {
    const paused = await cluster.leader();
    const before = await nodes();
    const pausedAt = Date.now();
    paused.run.child!.kill('SIGSTOP');
    const others = (): ServerProc[] => cluster.live().filter((s) => s !== paused);
    const next = await until('another server leads', async () => {
      for (const s of others()) if ((await cluster.status(s))?.isLeader) return s;
      return undefined;
    });
    // Paused longer than the heartbeat TTL (5 s): once resumed, its node TTL watcher would mark every node down.
    await until('the pause outlasted the node heartbeat TTL', () => Date.now() - pausedAt > 6_000, 20_000);
    paused.run.child!.kill('SIGCONT');
    await until('the resumed server follows', async () => {
      const st = await cluster.status(paused);
      return st && !st.isLeader && st.leader === next.url;
    });
    assert.equal((await cluster.status(next))?.isLeader, true, 'the new leader still leads');
    const after = await nodes();
    for (const n of before) {
      const m = after.find((x) => x.ID === n.ID);
      assert.equal(m?.Status, 'ready', `${n.Name} is still ready`);
    }
    await until('the nodes connected to the leader', async () => (await nodeConnections(next)) === 2);
  });

  it('one etcd member killed changes nothing; two refuse writes with STORE_UNAVAILABLE; restarted, all resumes and nothing is lost', async () => {
    // A member that is not etcd's own (raft) leader: killing that one costs an etcd election, during
    // which a write in flight may time out (the store's business, tested in the state store suite).
    const leaderOfEtcd = await etcdRaftLeader();
    const m1 = cluster.etcd.members.find((m) => m.clientUrl !== leaderOfEtcd);
    const m2 = cluster.etcd.members.find((m) => m !== m1);
    await m1!.kill();
    const leader = await cluster.leader();
    ok(await leader.run.cli(['job', 'run', '--detach', workloadJob('one-down', undefined, 'exec sleep 600')], { addr: leader.url }), 'job run with one member down');
    await running('one-down');
    await m2!.kill();
    // Every server refuses, leader or not, and says the state store is unavailable (STORE_UNAVAILABLE).
    let last = '';
    const refused = await until('a write refused by every server', async () => {
      const results = await Promise.all(
        cluster.live().map((via) => via.run.cli(['job', 'run', '--detach', '--retry-for', '0', workloadJob('no-quorum', undefined, 'exec sleep 600')], { addr: via.url })),
      );
      last = results.map((r) => `exit ${r.code}: ${r.stderr}`).join('\n');
      return results.every((r) => r.code !== 0 && /state store \(etcd\) is unavailable/.test(r.stderr)) ? results : undefined;
    }).catch((err: Error) => {
      throw new Error(`${err.message}\nlast answers:\n${last}`);
    });
    for (const r of refused) assert.notEqual(r.code, 0);
    assert.equal((await allocs('no-quorum').catch(() => [])).length, 0, 'nothing was half-written');
    await m1!.start();
    await m2!.start();
    const back = await cluster.leader();
    await cliUntilOk(() => back, ['job', 'run', '--detach', workloadJob('quorum-back', undefined, 'exec sleep 600')]);
    await running('quorum-back');
    for (const job of ['w1', 'during', 'one-down']) assert.equal((await allocs(job)).filter((a) => a.DesiredStatus === 'run').length, 1, `${job} kept its one allocation`);
    assert.equal((await running('w1')).ID, workload.ID);
    assert.equal((await claimsOf('vol-1')).length, 1);
  });
});

/** Fails with what the cluster knows about a volume's claims: the claim events, and the leader's and node 1's log lines about them. */
async function explainClaims(volume: string, claims: unknown[], allocId: string): Promise<never> {
  const via = cluster.live()[0] as ServerProc;
  const events = await via.run.cli(['event', 'stream', '--topic', 'claim', '--index', '0', '--until-now', '--json'], { addr: via.url });
  const leaderNow = await cluster.leader();
  const lines = (file: string): string =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => /claim|publish|release|detach|leading/i.test(l))
      .slice(-40)
      .join('\n');
  assert.fail(
    `claims of ${volume}: ${JSON.stringify(claims)}, running allocation ${allocId}\nevents:\n${events.stdout.slice(-6000)}${events.stderr}\n` +
      `leader ${leaderNow.name} log:\n${lines(path.join(cluster.dir, leaderNow.name, 'agent.log'))}\nnode 1 log:\n${lines(path.join(cluster.dir, 'n1', 'agent.log'))}`,
  );
}

/** The client URL of the etcd member that is etcd's raft leader now. */
async function etcdRaftLeader(): Promise<string> {
  const status = await Promise.all(
    cluster.etcd.members.map(async (m) => {
      const res = await fetch(`${m.clientUrl}/v3/maintenance/status`, { method: 'POST', body: '{}' });
      const body = (await res.json()) as { header: { member_id: string }; leader: string };
      return { url: m.clientUrl, self: body.header.member_id, leader: body.leader };
    }),
  );
  const leader = status.find((s) => s.self === s.leader);
  assert.ok(leader, `no etcd member leads: ${JSON.stringify(status)}`);
  return leader.url;
}

async function nodeConnections(s: ServerProc): Promise<number | undefined> {
  return (await cluster.status(s))?.connectedNodes;
}
