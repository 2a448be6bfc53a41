// Bad days on a cluster of real processes: three servers on a three-member
// etcd, one client agent with the hostpath plugin, a single-node-writer
// volume written by a workload every 100 ms.
//   - the leader is paused with SIGSTOP for longer than the node heartbeat
//     TTL: while it stays paused, a job submitted to the new leader runs,
//     and a stopped job's claim is released (the client's allocation watch,
//     status reports and node connection leave the silent server); the
//     new leader's `node status` says the node's link to it is up;
//   - two of three etcd members are stopped for twice the client's
//     fencing window (stop_after_server_disconnect = 5 s, longer than a
//     failover, which must not fence either): the servers
//     answer STORE_UNAVAILABLE, which renews the lease (docs/csi-rules.md),
//     so the writer is never fenced, restarted or replaced;
//   - a server stopped after that exits by itself (SIGTERM, exit 0).

import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { mountsUnder, ok, until } from '../support/agent-run.js';
import { hostpathVolumeHcl, perNodeHostpathPluginJob, rawExecJob } from '../support/runtime-cluster.js';
import { Cluster, type ServerProc } from '../support/process-cluster.js';

/** Appends "<pid> <counter> <ns since epoch>" every 100 ms: a restart shows as a new pid, a stall as a gap. */
const COUNTER = 'i=0; while true; do i=$((i+1)); echo "$$ $i $(date +%s%N)" >> "$BERTH_TASK_DIR/data/counter"; sleep 0.1; done';

/** What the test reads of a row of `GET /v1/job/:id/allocations` (Nomad's AllocationListStub). */
interface AllocRow {
  ID: string;
  ClientStatus: string;
  DesiredStatus: string;
  TaskStates: Record<string, { Restarts: number; Events: Array<{ Type: string; Message: string; DisplayMessage: string }> | null }> | null;
}

const cluster = new Cluster();

before(async () => {
  // write_timeout 2s: without quorum a write is refused after 2 s, not 5.
  await cluster.start({ etcdMembers: 3, servers: 3, clients: 1, leaseTtl: '2s', heartbeatTtl: '4s', stopAfterServerDisconnect: '5s', etcdWriteTimeout: '2s' });
});

after(async () => {
  await cluster.close();
});

function volumeFile(id: string): string {
  const file = path.join(cluster.dir, `${id}.hcl`);
  writeFileSync(file, hostpathVolumeHcl(id, 'dg-n1'));
  return file;
}

function job(id: string, volume: string | undefined, script: string): string {
  return cluster.writeJson(`${id}.json`, rawExecJob(id, volume, script));
}

const allocs = (jobId: string, via?: ServerProc): Promise<AllocRow[]> => cluster.read<AllocRow[]>(`/v1/job/${jobId}/allocations`, via);
const claimsOf = async (volume: string, via?: ServerProc): Promise<unknown[]> => (await cluster.read<{ BerthClaims: unknown[] }>(`/v1/volume/csi/${volume}`, via)).BerthClaims;

async function running(jobId: string, via?: ServerProc): Promise<AllocRow> {
  return until(`job ${jobId} running`, async () => (await allocs(jobId, via).catch(() => [])).find((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running'));
}

/** The writer's counter file, through its mount on node 1. */
function counterLines(allocId: string): Array<{ pid: string; n: number; ns: bigint }> {
  const mount = mountsUnder(path.join(cluster.dir, 'n1')).find((m) => m.includes(allocId) && m.endsWith('/data'));
  if (!mount) return [];
  return readFileSync(path.join(mount, 'counter'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [pid, n, ns] = l.split(' ');
      return { pid: pid as string, n: Number(n), ns: BigInt(ns ?? '0') };
    });
}

/** The longest pause between two lines of the counter, in seconds. */
function longestGap(lines: ReadonlyArray<{ ns: bigint }>): number {
  let gap = 0n;
  for (let i = 1; i < lines.length; i++) gap = (lines[i] as { ns: bigint }).ns - (lines[i - 1] as { ns: bigint }).ns > gap ? (lines[i] as { ns: bigint }).ns - (lines[i - 1] as { ns: bigint }).ns : gap;
  return Number(gap / 1_000_000n) / 1000;
}

describe('a degraded cluster: a frozen leader, lost etcd quorum', { timeout: 300_000 }, () => {
  let writer: AllocRow;

  it('a single-node-writer volume is written by a workload; another volume is held by a job to stop later', async () => {
    await until('the node ready', async () => (await cluster.read<Array<{ Status: string }>>('/v1/nodes')).some((n) => n.Status === 'ready'));
    const leader = await cluster.leader();
    ok(await leader.run.cli(['job', 'run', cluster.writeJson('plugin.json', perNodeHostpathPluginJob({ dir: cluster.dir, nodeIdPrefix: 'dg-' }))]), 'job run plugin');
    await until('the plugin healthy', async () => (await cluster.read<{ NodesHealthy: number }>('/v1/plugin/csi/hostpath').catch(() => ({ NodesHealthy: 0 }))).NodesHealthy === 1);
    for (const v of ['vol-w', 'vol-s']) ok(await leader.run.cli(['volume', 'create', volumeFile(v)]), `volume create ${v}`);
    ok(await leader.run.cli(['job', 'run', '--detach', job('counter', 'vol-w', COUNTER)]), 'job run counter');
    ok(await leader.run.cli(['job', 'run', '--detach', job('stopme', 'vol-s', 'exec sleep 600')]), 'job run stopme');
    writer = await running('counter');
    await running('stopme');
    await until('the counter counts', () => counterLines(writer.ID).length > 5);
    assert.equal((await claimsOf('vol-s')).length, 1);
  });

  it('the leader paused past the heartbeat TTL: a job submitted meanwhile runs and a stopped job releases its claim while it stays paused', async (t) => {
    const paused = await cluster.leader();
    const others = (): ServerProc[] => cluster.live().filter((s) => s !== paused);
    paused.run.child!.kill('SIGSTOP');
    const pausedAt = Date.now();
    try {
      const next = await until('another server leads', async () => {
        for (const s of others()) if ((await cluster.status(s))?.isLeader) return s;
        return undefined;
      });
      t.diagnostic(`${next.name} leads ${Date.now() - pausedAt} ms after the SIGSTOP of ${paused.name}`);
      // Sent to the new leader itself: the CLI's own failover is another scenario.
      await until('job run accepted by the new leader', async () => (await next.run.cli(['job', 'run', '--detach', job('during', undefined, 'exec sleep 600')], { addr: next.url })).code === 0);
      await until('job stop accepted by the new leader', async () => (await next.run.cli(['job', 'stop', 'stopme'], { addr: next.url })).code === 0);
      await running('during', next);
      t.diagnostic(`the job submitted during the pause runs ${Date.now() - pausedAt} ms after the SIGSTOP`);
      await until('the stopped job released its claim', async () => (await claimsOf('vol-s', next)).length === 0);
      t.diagnostic(`the claim was released ${Date.now() - pausedAt} ms after the SIGSTOP`);
      const link = await until('the node connected to the new leader', async () => {
        const st = await next.run.cli(['node', 'status', '-verbose'], { addr: next.url });
        return /\bready\s+connected\b/.test(st.stdout) ? st.stdout : undefined;
      });
      assert.match(link, /Leader Link/);
      assert.equal(await cluster.status(paused), undefined, `${paused.name} was paused all along`);
      assert.equal(paused.run.child!.signalCode, null);
    } finally {
      paused.run.child!.kill('SIGCONT');
    }
    await until('the resumed server follows', async () => (await cluster.status(paused))?.isLeader === false);
    assert.equal((await allocs('during')).length, 1, 'placed once');
    assert.equal((await running('counter')).ID, writer.ID, 'the writer kept its allocation');
  });

  it('two etcd members down for two fencing windows: the writer is never fenced, restarted or replaced', async (t) => {
    const lines = counterLines(writer.ID);
    const pid = (lines.at(-1) as { pid: string }).pid;
    const stopped = cluster.etcd.members.slice(0, 2);
    for (const m of stopped) await m.kill();
    const lostAt = Date.now();
    const via = cluster.live()[0] as ServerProc;
    await until('every server refuses writes (no quorum)', async () => {
      const r = await via.run.cli(['job', 'run', '--detach', '--retry-for', '0', job('no-quorum', undefined, 'exec sleep 600')], { addr: via.url });
      return r.code !== 0 && /STORE_UNAVAILABLE|state store/.test(r.stderr);
    });
    // 120 counter lines (12 s or more at 10 a second) is over two fencing windows: a fenced writer stops counting long before.
    const from = counterLines(writer.ID).length;
    await until('the writer counted through two fencing windows without quorum', () => counterLines(writer.ID).length > from + 120, 60_000);
    t.diagnostic(`quorum lost for ${Date.now() - lostAt} ms`);
    for (const m of stopped) await m.start();
    await cluster.leader();
    const now = await running('counter');
    assert.equal(now.ID, writer.ID, 'the same allocation runs');
    const after = counterLines(writer.ID);
    if (after.length < lines.length) {
      const log = readFileSync(path.join(cluster.dir, 'n1', 'agent.log'), 'utf8').split('\n').filter((l) => /"level":(40|50)/.test(l)).slice(-30);
      assert.fail(`the counter file is gone: mounts ${JSON.stringify(mountsUnder(path.join(cluster.dir, 'n1')))}\n${log.join('\n')}`);
    }
    assert.deepEqual([...new Set(after.slice(lines.length - 1).map((l) => l.pid))], [pid], 'one writer process all along (never restarted)');
    const events = Object.values(now.TaskStates ?? {}).flatMap((s) => s.Events ?? []);
    assert.equal(events.filter((e) => /fenc/i.test(`${e.Type} ${e.Message} ${e.DisplayMessage}`)).length, 0, `no fencing event: ${JSON.stringify(events)}`);
    assert.equal((await allocs('counter')).length, 1, 'no replacement was placed');
    t.diagnostic(`the writer's longest pause between two lines: ${longestGap(after.slice(lines.length - 1))} s`);
  });

  it('a server stopped with SIGTERM after the quorum came back exits by itself, not by the entry point\'s last-resort timer', async () => {
    // The outage broke every server's etcd watches many times: the etcd client's retry timers
    // once outlived the store's close() and held the process until main gave up on it.
    const leader = await cluster.leader();
    const follower = cluster.live().find((s) => s !== leader) as ServerProc;
    const exit = await follower.run.stop('SIGTERM', 60_000);
    assert.deepEqual(exit, { code: 0, signal: null }, follower.run.stderr.slice(-2000));
    assert.match(follower.run.stdout, /^==> Berth agent stopped/m);
    assert.doesNotMatch(follower.run.stderr, /something was left open/);
  });
});
