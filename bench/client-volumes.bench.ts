// The volume manager's figures (section `client-volumes` of `npm run bench`).
//
// 1. Berth's overhead on mountVolume / unmountVolume: the time of each call
//    minus the time spent inside the plugin calls it made (measured around
//    each CSI client call), p50/p99. What is left is Berth's own work: the
//    durable step records (SQLite, synchronous=FULL: an fsync per write),
//    directories, locks. Measured on the fake plugin (in-memory) and on the
//    hostpath plugin (real bind mounts).
// 2. Recovery of 1,000 recorded mounts, all intact: 1,000 publications
//    (50 volumes x 20 allocations, plus 50 stagings) made by the hostpath
//    plugin with real bind mounts; then a new volume manager over the same
//    client state: time from construction to a finished reconcile() with
//    every pair wanted (target < 2 s), and the plugin calls it made
//    (target 0 Stage/Publish).

import { execFileSync } from 'node:child_process';
import { mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { CsiClient, VolumeCapability, type CallOptions, type NodePublishRequest, type NodeStageRequest, type TeardownResult } from '../src/csi/index.js';
import { FakePlugin } from '../test/support/csi-fake/index.js';
import { HostpathPlugin } from '../src/csi-plugins/index.js';
import { SqliteClientStateStore } from '../src/client/state/index.js';
import { VolumeManager, type VolumeUsage } from '../src/client/volumes/index.js';
import { round, summarize, type Summary } from './_stats.js';

const CYCLES_FAKE = Number(process.env['BENCH_VOLUME_CYCLES'] ?? 300);
const CYCLES_HOSTPATH = Number(process.env['BENCH_VOLUME_HOSTPATH_CYCLES'] ?? 100);
const RECOVERY_VOLUMES = Number(process.env['BENCH_RECOVERY_VOLUMES'] ?? 50);
const RECOVERY_ALLOCS = Number(process.env['BENCH_RECOVERY_ALLOCS'] ?? 20);

const USAGE: VolumeUsage = { readOnly: false, attachmentMode: 'file-system', accessMode: 'multi-node-multi-writer' };

/** Berth's client, adding up the time spent in node volume calls and counting them. */
class TimedClient extends CsiClient {
  pluginNs = 0n;
  readonly counts: Record<string, number> = {};

  async #timed<T>(rpc: string, call: () => Promise<T>): Promise<T> {
    this.counts[rpc] = (this.counts[rpc] ?? 0) + 1;
    const start = process.hrtime.bigint();
    try {
      return await call();
    } finally {
      this.pluginNs += process.hrtime.bigint() - start;
    }
  }

  override nodeStageVolume(req: NodeStageRequest, opts?: CallOptions): Promise<void> {
    return this.#timed('NodeStageVolume', () => super.nodeStageVolume(req, opts));
  }
  override nodePublishVolume(req: NodePublishRequest, opts?: CallOptions): Promise<void> {
    return this.#timed('NodePublishVolume', () => super.nodePublishVolume(req, opts));
  }
  override nodeUnpublishVolume(volumeId: string, targetPath: string, opts?: CallOptions): Promise<TeardownResult> {
    return this.#timed('NodeUnpublishVolume', () => super.nodeUnpublishVolume(volumeId, targetPath, opts));
  }
  override nodeUnstageVolume(volumeId: string, stagingTargetPath: string, opts?: CallOptions): Promise<TeardownResult> {
    return this.#timed('NodeUnstageVolume', () => super.nodeUnstageVolume(volumeId, stagingTargetPath, opts));
  }
}

interface Overhead {
  mount: Summary;
  unmount: Summary;
  mountTotal: Summary;
  unmountTotal: Summary;
}

/** Mount and unmount `cycles` times (a stage and a publish, an unpublish and an unstage each), timing both. */
async function overhead(vm: VolumeManager, client: TimedClient, volumeFor: (i: number) => { id: string; externalId: string }, cycles: number): Promise<Overhead> {
  const samples = { mount: [] as bigint[], unmount: [] as bigint[], mountTotal: [] as bigint[], unmountTotal: [] as bigint[] };
  const measure = async (fn: () => Promise<unknown>, own: bigint[], total: bigint[]): Promise<void> => {
    client.pluginNs = 0n;
    const start = process.hrtime.bigint();
    await fn();
    const elapsed = process.hrtime.bigint() - start;
    total.push(elapsed);
    own.push(elapsed - client.pluginNs);
  };
  for (let i = 0; i < cycles; i++) {
    const volume = volumeFor(i);
    await measure(() => vm.mountVolume(volume, `alloc-${i}`, USAGE), samples.mount, samples.mountTotal);
    await measure(() => vm.unmountVolume(volume, `alloc-${i}`, USAGE), samples.unmount, samples.unmountTotal);
  }
  return {
    mount: summarize(samples.mount),
    unmount: summarize(samples.unmount),
    mountTotal: summarize(samples.mountTotal),
    unmountTotal: summarize(samples.unmountTotal),
  };
}

function printOverhead(name: string, o: Overhead): void {
  const ms = (us: number): string => (us / 1000).toFixed(2);
  console.log(
    `${name.padEnd(9)} mountVolume   overhead p50 ${ms(o.mount.p50Us)} ms  p99 ${ms(o.mount.p99Us)} ms   (whole call p50 ${ms(o.mountTotal.p50Us)} ms, n=${o.mount.n})`,
  );
  console.log(
    `${name.padEnd(9)} unmountVolume overhead p50 ${ms(o.unmount.p50Us)} ms  p99 ${ms(o.unmount.p99Us)} ms   (whole call p50 ${ms(o.unmountTotal.p50Us)} ms, n=${o.unmount.n})`,
  );
}

const unescapeMount = (s: string): string => s.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));

function mountsUnder(root: string): string[] {
  return execFileSync('cat', ['/proc/self/mountinfo'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => unescapeMount(l.split(' ')[4] ?? ''))
    .filter((p) => p === root || p.startsWith(`${root}/`));
}

/** Detaches every mount at or below `root` (deepest first), so the directory can be removed. */
function unmountAll(root: string): void {
  for (let round = 0; round < 8; round++) {
    const left = mountsUnder(root).sort((a, b) => b.length - a.length);
    if (left.length === 0) return;
    for (const m of left) {
      try {
        execFileSync('umount', ['-l', m], { stdio: 'ignore' });
      } catch {
        // A parent detached first took it along.
      }
    }
  }
}

async function fakeOverhead(dir: string): Promise<Overhead> {
  const fake = new FakePlugin({ socketPath: join(dir, 'fake.sock') });
  await fake.start();
  const client = new TimedClient({ endpoint: fake.endpoint });
  const store = SqliteClientStateStore.open(join(dir, 'fake-state', 'client.db'));
  const vm = new VolumeManager({
    pluginId: 'fake',
    getClient: () => client,
    store,
    mountRoot: join(dir, 'fake-mnt'),
    getCapabilities: () => ['STAGE_UNSTAGE_VOLUME'],
  });
  try {
    await vm.start();
    // Warm up the connection and the JIT.
    await overhead(vm, client, (i) => ({ id: `w${i}`, externalId: `w${i}` }), 20);
    return await overhead(vm, client, (i) => ({ id: `v${i % 10}`, externalId: `v${i % 10}` }), CYCLES_FAKE);
  } finally {
    await vm.stop();
    await client.close();
    await fake.stop();
    store.close();
  }
}

async function withHostpath<T>(dir: string, fn: (plugin: { client: TimedClient; mountRoot: string; statePath: string }) => Promise<T>): Promise<T> {
  const endpoint = `unix://${join(dir, 'hp.sock')}`;
  const plugin = new HostpathPlugin({ endpoint, nodeId: 'bench-node', dataDir: join(dir, 'hp-data'), maxVolumesPerNode: 0 });
  await plugin.start();
  const client = new TimedClient({ endpoint });
  const mountRoot = join(dir, 'hp-mnt');
  mkdirSync(mountRoot, { recursive: true });
  try {
    return await fn({ client, mountRoot, statePath: join(dir, 'hp-state', 'client.db') });
  } finally {
    unmountAll(dir);
    await client.close();
    await plugin.stop();
  }
}

async function hostpathOverhead(dir: string): Promise<Overhead> {
  return withHostpath(dir, async ({ client, mountRoot, statePath }) => {
    const store = SqliteClientStateStore.open(statePath);
    const vm = new VolumeManager({ pluginId: 'hostpath', getClient: () => client, store, mountRoot, getCapabilities: () => ['STAGE_UNSTAGE_VOLUME'] });
    try {
      await vm.start();
      const ids: string[] = [];
      for (let i = 0; i < 10; i++) {
        ids.push((await client.createVolume({ name: `ov-${i}`, volumeCapabilities: [VolumeCapability.mount('multi-node-multi-writer')] })).volumeId);
      }
      await overhead(vm, client, (i) => ({ id: `ov-${i % 10}`, externalId: ids[i % 10]! }), 10);
      return await overhead(vm, client, (i) => ({ id: `ov-${i % 10}`, externalId: ids[i % 10]! }), CYCLES_HOSTPATH);
    } finally {
      await vm.stop();
      store.close();
    }
  });
}

interface Recovery {
  mounts: number;
  stagings: number;
  setupMs: number;
  readyMs: number;
  startMs: number;
  reconcileMs: number;
  kept: number;
  pluginCalls: Record<string, number>;
  stageOrPublishCalls: number;
}

async function recovery(dir: string): Promise<Recovery> {
  return withHostpath(dir, async ({ client, mountRoot, statePath }) => {
    const setupStart = process.hrtime.bigint();
    let store = SqliteClientStateStore.open(statePath);
    const vm1 = new VolumeManager({ pluginId: 'hostpath', getClient: () => client, store, mountRoot, getCapabilities: () => ['STAGE_UNSTAGE_VOLUME'] });
    await vm1.start();
    const wanted: Array<{ volumeId: string; allocId: string }> = [];
    for (let v = 0; v < RECOVERY_VOLUMES; v++) {
      const { volumeId } = await client.createVolume({ name: `rec-${v}`, volumeCapabilities: [VolumeCapability.mount('multi-node-multi-writer')] });
      // One volume's allocations in parallel: the manager serializes them per volume; volumes side by side.
      await Promise.all(
        Array.from({ length: RECOVERY_ALLOCS }, (_, a) => {
          wanted.push({ volumeId: `rec-${v}`, allocId: `alloc-${v}-${a}` });
          return vm1.mountVolume({ id: `rec-${v}`, externalId: volumeId }, `alloc-${v}-${a}`, USAGE);
        }),
      );
    }
    await vm1.stop();
    store.close();
    const setupMs = Number(process.hrtime.bigint() - setupStart) / 1e6;
    const mounts = mountsUnder(realpathSync(mountRoot)).length;
    console.log(`recovery  set up ${mounts} real mounts (${wanted.length} publications, ${RECOVERY_VOLUMES} stagings) in ${round(setupMs / 1000)} s`);

    for (const k of Object.keys(client.counts)) delete client.counts[k];
    // The agent restarts: the state file is reopened and a new manager rebuilds from it.
    const t0 = process.hrtime.bigint();
    store = SqliteClientStateStore.open(statePath);
    const vm2 = new VolumeManager({ pluginId: 'hostpath', getClient: () => client, store, mountRoot, getCapabilities: () => ['STAGE_UNSTAGE_VOLUME'] });
    await vm2.start();
    const t1 = process.hrtime.bigint();
    const report = await vm2.reconcile(wanted);
    const t2 = process.hrtime.bigint();
    await vm2.stop();
    store.close();
    const calls = { ...client.counts };
    const result: Recovery = {
      mounts,
      stagings: RECOVERY_VOLUMES,
      setupMs: round(setupMs),
      readyMs: round(Number(t2 - t0) / 1e6),
      startMs: round(Number(t1 - t0) / 1e6),
      reconcileMs: round(Number(t2 - t1) / 1e6),
      kept: report.kept.length,
      pluginCalls: calls,
      stageOrPublishCalls: (calls['NodeStageVolume'] ?? 0) + (calls['NodePublishVolume'] ?? 0),
    };
    console.log(
      `recovery  ${result.kept} of ${wanted.length} intact publications ready in ${result.readyMs} ms (start ${result.startMs} ms, reconcile ${result.reconcileMs} ms; target < 2000 ms); ` +
        `plugin calls ${JSON.stringify(calls)}, Stage/Publish ${result.stageOrPublishCalls} (target 0)`,
    );
    return result;
  });
}

export default async function clientVolumesBench(dir: string): Promise<Record<string, unknown>> {
  const fake = await fakeOverhead(join(dir, 'f'));
  printOverhead('fake', fake);
  const hostpath = await hostpathOverhead(join(dir, 'h'));
  printOverhead('hostpath', hostpath);
  const rec = await recovery(join(dir, 'r'));
  return { overhead: { fake, hostpath }, recovery: rec };
}
