// Draining the node of a single-writer volume's writer (issue 21): a server
// and two clients, the hostpath plugin (monolith, with ControllerPublish) on
// both nodes over one shared data dir, and a writer that appends
// "<ns since epoch> <alloc id>" to the volume every 100 ms and, on SIGTERM,
// for one more second before it exits (as a database flushing would).
// `berth node drain -enable` on the writer's node, followed to the end:
//   - the writer's claim is released before its replacement on the other
//     node claims the volume (claim events in store order);
//   - the plugin's allocation on the drained node is stopped only after the
//     claim is released (never first, Nomad issues #8080/#11614);
//   - nothing stays mounted on the drained node;
//   - the writers' log shows no two writers at any instant;
//   - the node is drained and ineligible; a new job's placement names it
//     ineligible; `node eligibility -enable` and `node drain -disable` undo it.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import type { Allocation, AllocationListStub, Evaluation } from '../../src/api/index.js';
import type { BerthResult } from '../support/agent-run.js';
import { Cluster } from '../support/process-cluster.js';
import { mountsUnder, until } from '../support/runtime-cluster.js';
import { sharedHostpathPluginHcl, sharedPluginHealthy, singleWriterVolumeHcl, volumeWriterScript, writerLines } from '../support/shared-hostpath.js';

function ok(r: BerthResult, what: string): BerthResult {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

const WRITER = volumeWriterScript(1);

/** One change of the event stream (Nomad's Event); an Allocation event's payload is Nomad's Allocation (src/api EVENT_PAYLOADS). */
interface StreamEvent {
  Index: number;
  Topic: string;
  Type: string;
  Key: string;
  Payload: { Allocation?: Allocation };
}

describe('node drain of a single-writer volume', () => {
  const cluster = new Cluster();
  const dir = cluster.dir;
  const server = {
    get: <T>(p: string): Promise<T> => cluster.read<T>(p),
    cli: (args: readonly string[], opts: { timeoutMs?: number } = {}): Promise<BerthResult> => cluster.servers[0]!.run.cli(args, opts),
  };

  // A server on its own store and two clients, started at once (test/support/process-cluster.ts).
  before(async () => {
    await cluster.start({ etcdMembers: 0, clients: 2 });
  });

  after(async () => {
    for (const job of ['writer', 'probe']) await server.cli(['job', 'stop', '--purge', job]).catch(() => undefined);
    // The plugin unmounts the writer's volume: stopped together, a node may stop its plugin
    // first, and the writer's volume then waits for a plugin that is not coming (the agent's
    // drain would keep it for a next start). So the plugin goes once nothing of the volume is mounted (a wait that gives up
    // quietly: after a failure the plugin is stopped regardless).
    await until("the writer's volume unmounted", () => !mountsUnder(dir).some((m) => m.includes('/ledger/')), 60_000).catch(() => undefined);
    await server.cli(['job', 'stop', '--purge', 'hostpath-plugin']).catch(() => undefined);
    await cluster.close();
  });

  it('moves the writer off the node: claim released before the replacement claims, plugin stopped last, nothing left mounted', async () => {
    await until('both clients ready', async () => (await server.get<Api.NodeListStub[]>('/v1/nodes')).filter((n) => n.Status === 'ready').length === 2);
    const plugin = path.join(dir, 'plugin.hcl');
    const pluginJob = (generation: number): string => sharedHostpathPluginHcl(dir, ['n1', 'n2'], generation);
    const healthy = (generation: number): Promise<void> => sharedPluginHealthy(server.get, 2, generation);
    writeFileSync(plugin, pluginJob(1));
    ok(await server.cli(['job', 'run', plugin]), 'job run plugin');
    await healthy(1);
    const volume = path.join(dir, 'volume.hcl');
    writeFileSync(volume, singleWriterVolumeHcl('ledger'));
    ok(await server.cli(['volume', 'create', volume]), 'volume create');
    // No plugin restart: both instances see the volume through the shared state (it was created through one of them).

    const job = path.join(dir, 'writer.hcl');
    writeFileSync(
      job,
      `job "writer" {\n  migrate {\n    max_parallel = 1\n    health_check = "task_states"\n    min_healthy_time = "1s"\n  }\n  group "w" {\n    volume "data" {\n      type = "csi"\n      source = "ledger"\n      access_mode = "single-node-writer"\n      attachment_mode = "file-system"\n    }\n    task "write" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sh"\n        args = ["-c", ${JSON.stringify(WRITER)}]\n      }\n      volume_mount {\n        volume = "data"\n        destination = "/data"\n      }\n    }\n  }\n}\n`,
    );
    ok(await server.cli(['job', 'run', job]), 'job run writer');
    const first = await until('the writer running', async () => (await server.get<AllocationListStub[]>('/v1/job/writer/allocations')).find((a) => a.ClientStatus === 'running'));
    const log = path.join(dir, 'hp');
    await until('the writer writing', () => writerLines(log).some((l) => l.alloc === first.ID) || undefined, 30_000);
    const nodes = await server.get<Api.NodeListStub[]>('/v1/nodes');
    const drained = nodes.find((n) => n.ID === first.NodeID)!;
    const other = nodes.find((n) => n.ID !== first.NodeID)!;

    const drain = ok(await server.cli(['node', 'drain', '-enable', '-yes', '-deadline', '5m', drained.ID], { timeoutMs: 180_000 }), 'node drain');
    assert.match(drain.stdout, /Ctrl-C to stop monitoring: will not cancel the node drain/);
    assert.match(drain.stdout, new RegExp(`Alloc "${first.ID}" marked for migration`));
    assert.match(drain.stdout, /Drain complete for node/);

    const node = await server.get<Api.Node>(`/v1/node/${drained.ID}`);
    assert.equal(node.DrainStrategy, null, 'the drain ended');
    assert.equal(node.SchedulingEligibility, 'ineligible', 'a drained node stays ineligible');
    assert.equal(node.LastDrain?.Status, 'complete');
    assert.deepEqual(node.Events?.slice(-2).map((e) => e.Message), ['Node drain strategy set', 'Node drain complete']);

    const second = await until('the replacement running on the other node', async () =>
      (await server.get<AllocationListStub[]>('/v1/job/writer/allocations')).find((a) => a.ID !== first.ID && a.ClientStatus === 'running'),
    );
    assert.equal(second.NodeID, other.ID);
    assert.equal((await server.get<Allocation>(`/v1/allocation/${second.ID}`)).PreviousAllocation, first.ID);
    await until('lines from the replacement', () => writerLines(log).some((l) => l.alloc === second.ID) || undefined, 30_000);

    // Claim events in store order: the old claim is deleted before the replacement's is first written.
    const events = await eventsOf(cluster, ['claim', 'Allocation']);
    const oldClaimGone = events.find((e) => e.Topic === 'claim' && e.Type === 'ClaimDeleted' && e.Key.endsWith(`/${first.ID}`));
    const newClaim = events.find((e) => e.Topic === 'claim' && e.Type === 'ClaimUpserted' && e.Key.endsWith(`/${second.ID}`));
    assert.ok(oldClaimGone && newClaim, `both claim events seen: ${JSON.stringify(events.filter((e) => e.Topic === 'claim').map((e) => [e.Index, e.Type, e.Key]))}`);
    assert.ok(oldClaimGone.Index < newClaim.Index, `old claim released (index ${oldClaimGone.Index}) before the new one was taken (index ${newClaim.Index})`);

    // The plugin on the drained node was told to stop only after the old claim was released
    // (the Allocation payload is Nomad's Allocation, as GET /v1/allocation/:id answers it).
    const pluginStop = events.find((e) => {
      const a = e.Payload.Allocation;
      if (e.Topic !== 'Allocation' || e.Type === 'AllocationDeleted' || !a) return false;
      return a.JobID === 'hostpath-plugin' && a.NodeID === drained.ID && a.DesiredStatus === 'stop' && a.DesiredTransition?.Migrate === true;
    });
    assert.ok(pluginStop, 'the plugin allocation on the drained node was stopped by the drain');
    assert.ok(pluginStop.Index > oldClaimGone.Index, `plugin stopped at index ${pluginStop.Index}, after the claim release at ${oldClaimGone.Index}`);
    const pluginAllocs = await server.get<AllocationListStub[]>('/v1/job/hostpath-plugin/allocations');
    assert.ok(pluginAllocs.some((a) => a.NodeID === other.ID && a.DesiredStatus === 'run' && a.ClientStatus === 'running'), 'the plugin still serves the other node');

    // What may stay until garbage collection: stopped allocations' secrets tmpfs and the plugin's
    // mount root. No staging, no publish, no task bind of the volume.
    const left = mountsUnder(cluster.clientDirs[cluster.clientNames.indexOf(drained.Name)]!).filter((m) => !m.endsWith('/secrets') && !m.endsWith('/p/hostpath/mounts'));
    assert.deepEqual(left, [], 'no volume stays mounted on the drained node');

    const lines = writerLines(log);
    const lastOld = Math.max(...lines.filter((l) => l.alloc === first.ID).map((l) => l.at));
    const firstNew = Math.min(...lines.filter((l) => l.alloc === second.ID).map((l) => l.at));
    assert.ok(lastOld < firstNew, `no two writers: the old writer's last line (${lastOld}) precedes the new one's first (${firstNew})`);

    // An ineligible node takes nothing new, and placement says why.
    ok(await server.cli(['node', 'eligibility', '-disable', other.ID]), 'node eligibility -disable');
    const probe = path.join(dir, 'probe.hcl');
    writeFileSync(probe, `job "probe" {\n  group "p" {\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sleep"\n        args = ["300"]\n      }\n    }\n  }\n}\n`);
    await server.cli(['job', 'run', '--detach', probe]);
    const blocked = await until('the probe blocked', async () => (await server.get<Evaluation[]>('/v1/job/probe/evaluations')).find((e) => e.Status === 'blocked'));
    assert.equal(blocked.FailedTGAllocs?.['p']?.ConstraintFiltered?.['were ineligible (node is ineligible: draining or marked ineligible)'], 2, JSON.stringify(blocked));
    ok(await server.cli(['node', 'eligibility', '-enable', other.ID]), 'node eligibility -enable');
    const placed = await until('the probe placed on the eligible node', async () => (await server.get<AllocationListStub[]>('/v1/job/probe/allocations')).find((a) => a.ClientStatus === 'running'));
    assert.equal(placed.NodeID, other.ID);
    const cancel = ok(await server.cli(['node', 'drain', '-disable', drained.ID]), 'node drain -disable');
    assert.match(cancel.stdout, /drain strategy unset/);
    assert.equal((await server.get<Api.Node>(`/v1/node/${drained.ID}`)).SchedulingEligibility, 'eligible');
  });
});

/** Every change of `topics` the server keeps, in every namespace, oldest first. */
async function eventsOf(cluster: Cluster, topics: string[]): Promise<StreamEvent[]> {
  const q = topics.map((t) => `topic=${t}`).join('&');
  const res = await fetch(`${cluster.servers[0]!.url}/v1/event/stream?${q}&index=0&namespace=*&until=now`, { headers: { authorization: `Bearer ${cluster.mgmt}` } });
  const text = await res.text();
  return text
    .split('\n')
    .filter((l) => l.trim() && l !== '{}')
    .flatMap((l) => (JSON.parse(l) as { Events: StreamEvent[] }).Events);
}
