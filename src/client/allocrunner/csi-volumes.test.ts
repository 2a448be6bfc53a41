// The plugin supervisor hook and the CSI hook end to end: the real hostpath
// plugin run as a raw_exec task (R1's executor), registered through the
// registry, followed by the CSI manager; workloads that claim (a recording
// claimer fake), mount through the volume manager, write and read real files.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { CsiClient, VolumeCapability } from '../../csi/index.js';
import { SecretMap } from '../../lib/index.js';
import type { Allocation, Job } from '../../structs/index.js';
import type { AllocRunner } from './alloc-runner.js';
import { savedAllocRunners } from './alloc-records.js';
import { reconcileCsiVolumes } from './reconcile-volumes.js';
import { BERTH, eventually, hostpathPluginJob, makeAlloc, makeJob, mountPointsUnder, Node } from '../../../test/support/client-allocrunner.js';

const CSI_VOLUME = [{ volumeId: 'shared', pluginId: 'hostpath', readOnly: false }];

function workloadJob(id: string, type: 'batch' | 'service', script: string): Job {
  return makeJob({
    id,
    type,
    groups: [
      {
        name: 'g',
        restart: { attempts: 0, interval: '1m', delay: '1s', mode: 'fail' },
        volumes: { data: { type: 'csi', source: 'shared', accessMode: 'multi-node-multi-writer' } },
        tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/sh', args: ['-c', script] }, volumeMounts: [{ volume: 'data', destination: '/data' }] }],
      },
    ],
  });
}

/** Starts a plugin allocation and waits until the CSI manager can mount through it. */
async function startPlugin(node: Node, job: Job): Promise<{ runner: AllocRunner; alloc: Allocation }> {
  const alloc = makeAlloc(job);
  const runner = node.runner(alloc, job);
  await runner.run();
  await eventually('the plugin allocation serves', () => node.registry.serving('csi-node', 'hostpath')?.allocId === alloc.id);
  return { runner, alloc };
}

async function mountable(node: Node): Promise<void> {
  await eventually('the plugin can mount', () => {
    try {
      node.csiManager.volumeManagerFor('hostpath');
      return true;
    } catch {
      return false;
    }
  });
}

/** Creates the volume through the plugin's controller and tells the claimer about it. */
async function createVolume(node: Node): Promise<void> {
  const socket = node.registry.serving('csi-controller', 'hostpath')!.socketPath;
  const client = new CsiClient({ endpoint: `unix://${socket}` });
  try {
    const created = await client.createVolume({ name: 'shared', volumeCapabilities: [VolumeCapability.mount('multi-node-multi-writer')] });
    node.claimer.volumes.set('shared', {
      id: 'shared',
      externalId: created.volumeId,
      pluginId: 'hostpath',
      namespace: 'default',
      context: created.volumeContext,
      accessMode: 'multi-node-multi-writer',
      attachmentMode: 'file-system',
    });
  } finally {
    await client.close();
  }
}

/** Mount points of published volumes under the plugin's mount root (not the root's own bind). */
function volumeMounts(node: Node): string[] {
  const root = path.join(node.dir, 'p', 'hostpath', 'mounts');
  return mountPointsUnder(root).filter((m) => m !== root).sort();
}

/** A started node running the hostpath plugin as a task, with the "shared" volume created; cleaned up after the test. */
async function nodeWithVolume(t: TestContext): Promise<{ node: Node; plugin: { runner: AllocRunner; alloc: Allocation } }> {
  const node = new Node();
  t.after(() => node.cleanup());
  await node.start();
  const plugin = await startPlugin(node, hostpathPluginJob(path.join(node.dir, 'hp')));
  await mountable(node);
  await createVolume(node);
  return { node, plugin };
}

const eventTypes = (r: AllocRunner, task: string): string[] => r.status().taskStates[task]!.events.map((e) => e.type);

describe('CSI volumes through allocation runners (hostpath plugin as a raw_exec task)', () => {
  it('a workload waits for the plugin and its claim, writes into its volume; a second allocation reads it back; a plugin crash leaves mounts untouched', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    node.claimer.waitForVolumes = true;
    const exhausted = Object.assign(new Error('volume "shared" has no free write claims'), { code: 'CLAIM_EXHAUSTED' });
    node.claimer.failClaims.push(exhausted, exhausted);

    // The workload comes before its plugin (docs/csi-rules.md scenario 14): it waits, it is not failed.
    const writerJob = workloadJob('writer', 'batch', 'echo "written by $BERTH_ALLOC_ID" > "$BERTH_TASK_DIR/data/hello.txt"');
    const writerAlloc = makeAlloc(writerJob, { csiVolumes: CSI_VOLUME });
    const writer = node.runner(writerAlloc, writerJob);
    const writerRun = writer.run();
    await eventually('the writer waits for the plugin', () => eventTypes(writer, 'main').includes('Volume Waiting'));
    assert.equal(writer.status().clientStatus, 'pending');
    assert.match(writer.status().taskStates['main']!.events.at(-1)!.message, /Waiting for CSI node plugin "hostpath"/);

    const plugin = await startPlugin(node, hostpathPluginJob(path.join(node.dir, 'hp')));
    const pluginEvents = eventTypes(plugin.runner, 'plugin');
    assert.ok(pluginEvents.includes('Plugin Registered'), `plugin events: ${pluginEvents.join(', ')}`);
    const sock = node.registry.serving('csi-node', 'hostpath')!;
    assert.equal(sock.socketPath, path.join(node.dir, 'p', 'hostpath', plugin.alloc.id, 'csi.sock'));
    assert.equal(sock.options.mountRoot, path.join(node.dir, 'p', 'hostpath', 'mounts'));
    assert.deepEqual(node.registry.registrations().map((r) => r.type), ['csi-controller', 'csi-node'], 'a monolith registers both');
    await mountable(node);
    await createVolume(node);
    node.claimer.waitForVolumes = false;

    await writerRun;
    await eventually('the writer completes', () => node.statusOf(writerAlloc.id)?.clientStatus === 'complete');
    await eventually('the writer releases its claim', () => node.claimer.releases.some((r) => r.allocId === writerAlloc.id));
    const writerClaims = node.claimer.claimsOf(writerAlloc.id);
    assert.ok(writerClaims.length >= 3, 'two exhausted claims were retried');
    assert.deepEqual(writerClaims.at(-1), { namespace: 'default', volumeId: 'shared', allocId: writerAlloc.id, mode: 'write', accessMode: 'multi-node-multi-writer', attachmentMode: 'file-system' });
    const types = eventTypes(writer, 'main');
    assert.ok(types.includes('Volume Mounted') && types.includes('Volume Unmounted'), types.join(', '));
    assert.deepEqual(volumeMounts(node), [], 'the writer left no mount behind');
    await writer.destroy();

    // A second allocation reads what the first wrote.
    const readerJob = workloadJob('reader', 'batch', 'cat "$BERTH_TASK_DIR/data/hello.txt" > "$BERTH_TASK_DIR/seen"');
    const readerAlloc = makeAlloc(readerJob, { csiVolumes: CSI_VOLUME });
    const reader = node.runner(readerAlloc, readerJob);
    await reader.run();
    await eventually('the reader completes', () => node.statusOf(readerAlloc.id)?.clientStatus === 'complete');
    assert.equal(readFileSync(path.join(reader.allocDir.task('main').localDir, 'seen'), 'utf8').trim(), `written by ${writerAlloc.id}`);
    await eventually('the reader released its claim', () => !node.claimer.holds('shared', readerAlloc.id));

    // A long-running workload keeps the volume mounted; the plugin process crashes.
    const holderJob = workloadJob('holder', 'service', 'exec sleep 600');
    const holderAlloc = makeAlloc(holderJob, { csiVolumes: CSI_VOLUME });
    const holder = node.runner(holderAlloc, holderJob);
    await holder.run();
    assert.equal(holder.status().clientStatus, 'running');
    const mountsBefore = volumeMounts(node);
    assert.equal(mountsBefore.length, 2, 'a staging and a publication');
    const holderData = path.join(holder.allocDir.task('main').localDir, 'data', 'hello.txt');
    assert.match(readFileSync(holderData, 'utf8'), /written by/);

    const registeredBefore = eventTypes(plugin.runner, 'plugin').filter((e) => e === 'Plugin Registered').length;
    const pid = node.pidOf(plugin.runner, 'plugin');
    process.kill(pid, 'SIGKILL');
    await eventually('the crashed plugin is deregistered', () => eventTypes(plugin.runner, 'plugin').includes('Plugin Deregistered'));
    await eventually(
      'the restarted plugin registers again', () => eventTypes(plugin.runner, 'plugin').filter((e) => e === 'Plugin Registered').length === registeredBefore + 1,
    );
    assert.notEqual(node.pidOf(plugin.runner, 'plugin'), pid, 'a new plugin process');
    const trail = eventTypes(plugin.runner, 'plugin');
    assert.ok(trail.includes('Terminated') && trail.includes('Restarting'), trail.join(', '));
    assert.deepEqual(volumeMounts(node), mountsBefore, 'existing mounts untouched');
    assert.match(readFileSync(holderData, 'utf8'), /written by/);
    assert.equal(holder.status().clientStatus, 'running');

    // Stopping the holder unmounts through the restarted plugin and releases.
    await mountable(node);
    holder.update({ ...holderAlloc, desiredStatus: 'stop' });
    await eventually('the holder releases its claim', () => node.claimer.releases.some((r) => r.allocId === holderAlloc.id));
    assert.deepEqual(volumeMounts(node), []);
    assert.equal(node.claimer.holds('shared', holderAlloc.id), false);
  });

  it('a final claim error fails the allocation clearly and leaves nothing claimed or mounted', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    await startPlugin(node, hostpathPluginJob(path.join(node.dir, 'hp')));
    const job = workloadJob('nope', 'batch', 'true');
    const alloc = makeAlloc(job, { csiVolumes: CSI_VOLUME });
    const r = node.runner(alloc, job);
    await r.run();
    assert.equal(r.status().clientStatus, 'failed');
    assert.match(r.status().clientDescription, /csi: cannot claim CSI volume "shared": volume shared not found/);
    assert.deepEqual(volumeMounts(node), []);
    assert.deepEqual(r.wanted(), []);
  });

  it('the volume is claimed beside the network set-up: a network that cannot be made fails the allocation at once, even while its plugin is not there yet, and nothing stays claimed', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    node.claimer.waitForVolumes = true;
    const base = workloadJob('no-net', 'service', 'exec sleep 600');
    const job = { ...base, groups: base.groups.map((g) => ({ ...g, network: { ...g.network, mode: 'cni/no-such-network' as const } })) };
    const alloc = makeAlloc(job, { csiVolumes: CSI_VOLUME });
    const r = node.runner(alloc, job);
    // No plugin ever registers: only the failed network can end prerun, and it must stop the wait for the plugin.
    await r.run();
    assert.equal(r.status().clientStatus, 'failed');
    assert.match(r.status().clientDescription, /network: .*no-such-network/);
    assert.ok(eventTypes(r, 'main').includes('Volume Waiting'), 'the CSI volume was being set up beside the network');
    assert.equal(node.claimer.holds('shared', alloc.id), false);
    assert.deepEqual(r.wanted(), []);
  });

  it('the plugin allocation is updated (two allocations at once) while a workload runs: no socket collides, the newer serves, the workload keeps its mount', async (t) => {
    const node = new Node();
    t.after(() => node.cleanup());
    await node.start();
    const pluginJob = hostpathPluginJob(path.join(node.dir, 'hp'));
    const p1 = await startPlugin(node, pluginJob);
    await mountable(node);
    await createVolume(node);
    const holderJob = workloadJob('holder', 'service', 'exec sleep 600');
    const holderAlloc = makeAlloc(holderJob, { csiVolumes: CSI_VOLUME });
    const holder = node.runner(holderAlloc, holderJob);
    await holder.run();
    const data = path.join(holder.allocDir.task('main').localDir, 'data');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path.join(data, 'before-update'), 'kept');
    const mountsBefore = volumeMounts(node);

    // The update: a second allocation of the same plugin starts while the first still runs.
    const p2 = await startPlugin(node, pluginJob);
    assert.notEqual(p1.runner.pluginSockets()['plugin'], p2.runner.pluginSockets()['plugin']);
    assert.equal(node.registry.registrations('csi-node', 'hostpath').length, 2, 'both registered at once');
    assert.equal(p1.runner.status().clientStatus, 'running', 'the older one keeps running');
    p1.runner.update({ ...p1.alloc, desiredStatus: 'stop' });
    await eventually('the older one deregisters', () => node.registry.registrations('csi-node', 'hostpath').length === 1);
    assert.equal(node.registry.serving('csi-node', 'hostpath')?.allocId, p2.alloc.id);
    await eventually('the older plugin allocation stops', () => p1.runner.status().clientStatus === 'complete');

    assert.deepEqual(volumeMounts(node), mountsBefore, 'the workload keeps its mount');
    assert.equal(readFileSync(path.join(data, 'before-update'), 'utf8'), 'kept');
    assert.equal(holder.status().clientStatus, 'running');

    await mountable(node);
    holder.update({ ...holderAlloc, desiredStatus: 'stop' });
    await eventually('the holder releases its claim', () => node.claimer.releases.some((r) => r.allocId === holderAlloc.id));
    assert.deepEqual(volumeMounts(node), [], 'unmounted through the newer plugin allocation');
  });

  it('agent restart: tasks keep their pids, the plugin is re-adopted without a new registration, mounts are reconciled not redone; a workload stopped meanwhile is cleaned up and released', async (t) => {
    const { node, plugin } = await nodeWithVolume(t);
    const keepJob = workloadJob('keep', 'service', 'exec sleep 600');
    const keepAlloc = makeAlloc(keepJob, { csiVolumes: CSI_VOLUME });
    const keep = node.runner(keepAlloc, keepJob);
    await keep.run();
    const goneJob = workloadJob('gone', 'service', 'exec sleep 600');
    const goneAlloc = makeAlloc(goneJob, { csiVolumes: CSI_VOLUME });
    const gone = node.runner(goneAlloc, goneJob);
    await gone.run();
    const pids = { plugin: node.pidOf(plugin.runner, 'plugin'), keep: node.pidOf(keep, 'main'), gone: node.pidOf(gone, 'main') };
    const mountsBefore = volumeMounts(node);
    assert.equal(mountsBefore.length, 3, 'one staging, two publications');
    const claimsBefore = node.claimer.claims.length;
    const seqBefore = node.registry.registrations().map((r) => r.seq);

    await node.stopAgent();
    assert.deepEqual(volumeMounts(node), mountsBefore, 'nothing is unmounted when the agent stops');
    await node.startAgentAgain();

    const saved = savedAllocRunners(node.store);
    assert.deepEqual(saved.map((s) => s.alloc.id).sort(), [plugin.alloc.id, keepAlloc.id, goneAlloc.id].sort());
    const restored = new Map<string, AllocRunner>();
    for (const s of saved) {
      const r = node.runner(s.alloc, s.job);
      await r.restore();
      restored.set(s.alloc.id, r);
    }
    const rPlugin = restored.get(plugin.alloc.id)!;
    const rKeep = restored.get(keepAlloc.id)!;
    const rGone = restored.get(goneAlloc.id)!;
    assert.equal(node.pidOf(rPlugin, 'plugin'), pids.plugin);
    assert.equal(node.pidOf(rKeep, 'main'), pids.keep);
    assert.equal(node.pidOf(rGone, 'main'), pids.gone);
    assert.equal(rKeep.status().clientStatus, 'running');
    await eventually('the plugin is re-adopted', () => eventTypes(rPlugin, 'plugin').at(-1) === 'Plugin Healthy');
    assert.match(rPlugin.status().taskStates['plugin']!.events.at(-1)!.message, /re-adopted after the agent restarted/);
    assert.deepEqual(node.registry.registrations().map((r) => r.seq), seqBefore, 'no new registration');
    // Nothing destructive before the server's list: the stopped workload's mount is still there.
    assert.deepEqual(volumeMounts(node), mountsBefore);

    // The server's list arrives: `gone` was stopped while the agent was down.
    rPlugin.update(plugin.alloc);
    rKeep.update(keepAlloc);
    await rGone.destroy();
    node.runners.delete(goneAlloc.id);
    assert.ok(node.claimer.releases.some((r) => r.allocId === goneAlloc.id), 'the stopped workload released its claim');
    const { reports, failed } = await reconcileCsiVolumes({ csiManager: node.csiManager, runners: [rPlugin, rKeep], signal: AbortSignal.timeout(20_000) });
    assert.deepEqual(failed, []);
    const report = reports.get('hostpath')!;
    assert.deepEqual(report.kept, [{ volumeId: 'shared', allocId: keepAlloc.id }]);
    assert.deepEqual(report.tornDown, []);
    assert.equal(node.claimer.claims.length, claimsBefore, 'no claim sent again');
    const left = volumeMounts(node);
    assert.equal(left.length, 2, 'the staging and the running workload\'s publication');
    assert.ok(left.every((m) => mountsBefore.includes(m)), 'the running workload keeps its very mounts');
    assert.equal(node.pidOf(rKeep, 'main'), pids.keep);
    assert.equal(rKeep.status().clientStatus, 'running');
  });

  it('agent restart: a publication lost while the agent was down is redone, with the secrets asked of the server again (they are never written down)', async (t) => {
    const { node, plugin } = await nodeWithVolume(t);
    node.claimer.volumes.get('shared')!.secrets = new SecretMap({ password: 'remount-s3cret' });
    const job = workloadJob('keep', 'service', 'exec sleep 600');
    const alloc = makeAlloc(job, { csiVolumes: CSI_VOLUME });
    const runner = node.runner(alloc, job);
    await runner.run();
    const target = volumeMounts(node).find((m) => m.includes(alloc.id));
    assert.ok(target, 'the publication is mounted');
    const claims = node.claimer.claimsOf(alloc.id).length;

    await node.stopAgent();
    execFileSync('umount', [target]); // lost behind the agent's back
    await node.startAgentAgain();
    const restored: AllocRunner[] = [];
    for (const s of savedAllocRunners(node.store)) {
      const r = node.runner(s.alloc, s.job);
      await r.restore();
      restored.push(r);
    }
    for (const r of restored) r.update(r.id === alloc.id ? alloc : plugin.alloc);
    const { reports, failed } = await reconcileCsiVolumes({ csiManager: node.csiManager, runners: restored, signal: AbortSignal.timeout(20_000) });
    assert.deepEqual(failed, []);
    assert.deepEqual(reports.get('hostpath')!.awaitingMount, [{ volumeId: 'shared', allocId: alloc.id }], 'the lost publication needs the secrets');
    assert.equal(node.claimer.claimsOf(alloc.id).length, claims + 1, 'the claim was asked again for them');
    assert.ok(volumeMounts(node).includes(target), 'the publication is mounted again');
    for (const file of [node.statePath, `${node.statePath}-wal`].filter((f) => existsSync(f))) {
      assert.doesNotMatch(readFileSync(file, 'latin1'), /remount-s3cret/, `no secret written to ${path.basename(file)}`);
    }
  });

  it('the hostpath plugin as an exec task: socket and mount root bound into its chroot, its mounts propagate out to a raw_exec workload', async (t) => {
    const repo = path.dirname(path.dirname(BERTH));
    const node = new Node({ hostVolumes: { repo } });
    t.after(() => node.cleanup());
    const { mkdirSync } = await import('node:fs');
    const hpData = path.join(node.dir, 'hp');
    mkdirSync(hpData, { recursive: true });
    node.hostVolumes['hpdata'] = hpData;
    await node.start();
    const pluginJob = makeJob({
      id: 'hostpath-exec',
      type: 'system',
      groups: [
        {
          name: 'plugin',
          volumes: { repo: { type: 'host', source: 'repo', readOnly: true }, hpdata: { type: 'host', source: 'hpdata' } },
          tasks: [
            {
              name: 'plugin',
              driver: 'exec',
              config: { command: process.execPath, args: [path.join(repo, 'bin', 'berth.js'), 'plugin', 'hostpath', '--node-id', 'node-1', '--data-dir', '/hpdata', '--log-level', 'silent'] },
              volumeMounts: [
                { volume: 'repo', destination: repo, readOnly: true },
                { volume: 'hpdata', destination: '/hpdata' },
              ],
              csiPlugin: { id: 'hostpath', type: 'monolith', mountDir: '/csi', healthTimeout: '30s' },
            },
          ],
        },
      ],
    });
    const plugin = await startPlugin(node, pluginJob);
    const reg = node.registry.serving('csi-node', 'hostpath')!;
    assert.equal(reg.options.pluginMountRoot, '/csi/mounts', 'the plugin sees its mount root inside its chroot');
    assert.equal(reg.options.mountRoot, path.join(node.dir, 'p', 'hostpath', 'mounts'));
    await mountable(node);
    await createVolume(node);

    const job = workloadJob('rw', 'batch', 'echo "through exec plugin" > "$BERTH_TASK_DIR/data/f" && cat "$BERTH_TASK_DIR/data/f" > "$BERTH_TASK_DIR/seen"');
    const alloc = makeAlloc(job, { csiVolumes: CSI_VOLUME });
    const r = node.runner(alloc, job);
    await r.run();
    await eventually('the workload ends', () => ['complete', 'failed'].includes(node.statusOf(alloc.id)?.clientStatus ?? ''));
    assert.equal(node.statusOf(alloc.id)!.clientStatus, 'complete', JSON.stringify(r.status().taskStates['main']!.events.slice(-3)));
    assert.equal(readFileSync(path.join(r.allocDir.task('main').localDir, 'seen'), 'utf8').trim(), 'through exec plugin');
    await eventually('released', () => node.claimer.releases.some((x) => x.allocId === alloc.id));
    assert.deepEqual(volumeMounts(node), []);
    assert.equal(plugin.runner.status().clientStatus, 'running');
  });
});
