// Volume stats collection on the node agent (section `volume-stats` of
// `npm run bench`): 200 volumes published by the hostpath plugin (real bind
// mounts, the plugin in its own process as on a real node), the agent's
// VolumeStatsCollector calling NodeGetVolumeStats for each through the
// volume manager and CsiClient, and sending its reports over HTTP to a
// stand-in server in another process. What is measured is the CPU time of
// this process (the agent's side) over several rounds, reported as the share
// of one core at the default 60 s interval (goal < 1 %), and the plugin's
// CPU apart (it walks each volume's directory).
//
// The rounds run at a shorter interval (BENCH_STATS_INTERVAL_MS, default
// 5 s) so the bench takes seconds, not minutes; the cost of one round is the
// same, and the share at 60 s is the share measured times interval / 60 s.
// The process's CPU while idle (everything set up, no collector) is measured
// first and subtracted: it is not the collector's.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CsiClient, VolumeCapability } from '../src/csi/index.js';
import { SqliteClientStateStore } from '../src/client/state/index.js';
import { RecordedVolumes, VolumeManager, type VolumeUsage } from '../src/client/volumes/index.js';
import { VolumeStatsCollector } from '../src/client/volumestats/index.js';
import { ServerApi } from '../src/client/serverconn/index.js';
import { round } from './_stats.js';

const VOLUMES = Number(process.env['BENCH_STATS_VOLUMES'] ?? 200);
const INTERVAL_MS = Number(process.env['BENCH_STATS_INTERVAL_MS'] ?? 5_000);
const ROUNDS = Number(process.env['BENCH_STATS_ROUNDS'] ?? 4);
const DEFAULT_INTERVAL_MS = 60_000;
const REPO = fileURLToPath(new URL('..', import.meta.url));
const USAGE: VolumeUsage = { readOnly: false, attachmentMode: 'file-system', accessMode: 'single-node-writer' };

function mountsUnder(root: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => (l.split(' ')[4] ?? '').replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8))))
    .filter((p) => p === root || p.startsWith(`${root}/`));
}

function unmountAll(root: string): void {
  for (const m of mountsUnder(root).sort((a, b) => b.length - a.length)) {
    try {
      execFileSync('umount', ['-l', m], { stdio: 'ignore' });
    } catch {
      // taken along by a parent
    }
  }
}

/** CPU seconds (user + system) a process used so far, from /proc/<pid>/stat. */
function processCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks / 100;
}

async function waitFor(what: string, check: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A stand-in for the server's stats endpoint in its own process: reads the body, answers {"accepted":n}. */
function startSink(): Promise<{ child: ChildProcess; url: string }> {
  const code = `const http=require('http');const s=http.createServer((q,r)=>{let b='';q.on('data',d=>b+=d);q.on('end',()=>{const n=(JSON.parse(b).reports||[]).length;r.setHeader('content-type','application/json');r.end(JSON.stringify({accepted:n}))})});s.listen(0,'127.0.0.1',()=>console.log(s.address().port))`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve({ child, url: `http://127.0.0.1:${String(d).trim()}` }));
    child.once('error', reject);
  });
}

export default async function volumeStatsBench(dir: string): Promise<Record<string, unknown>> {
  const berth = join(REPO, 'bin', 'berth.js');
  if (!existsSync(join(REPO, 'dist'))) throw new Error('run `node scripts/build.mjs` first: the plugin runs from dist/');
  const socket = join(dir, 'hp.sock');
  const plugin = spawn(process.execPath, [berth, 'plugin', 'hostpath', '--endpoint', `unix://${socket}`, '--node-id', 'bench-node', '--data-dir', join(dir, 'hp-data'), '--log-level', 'warn'], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const sink = await startSink();
  const mountRoot = join(dir, 'mnt');
  mkdirSync(mountRoot, { recursive: true });
  const client = new CsiClient({ endpoint: `unix://${socket}` });
  const store = SqliteClientStateStore.open(join(dir, 'client.db'));
  const vm = new VolumeManager({ pluginId: 'hostpath', getClient: () => client, store, mountRoot, getCapabilities: () => ['STAGE_UNSTAGE_VOLUME', 'GET_VOLUME_STATS'] });
  const api = new ServerApi({ address: sink.url, token: 'bench-token' });
  let collector: VolumeStatsCollector | undefined;
  try {
    await waitFor('the plugin socket', () => existsSync(socket));
    await vm.start();
    const setup = Date.now();
    for (let i = 0; i < VOLUMES; i++) {
      const { volumeId } = await client.createVolume({ name: `st-${i}`, capacityRange: { requiredBytes: 16 * 1024 * 1024 }, volumeCapabilities: [VolumeCapability.mount('single-node-writer')] });
      await vm.mountVolume({ id: `st-${i}`, externalId: volumeId }, `alloc-${i}`, USAGE);
    }
    const mounts = mountsUnder(realpathSync(mountRoot)).length;
    console.log(`stats     set up ${VOLUMES} published volumes (${mounts} real mounts) in ${round((Date.now() - setup) / 1000)} s`);

    // The process's own cost with everything set up and no collector (GC, the loader's thread, timers): subtracted below.
    const idle0 = process.cpuUsage();
    const idleT0 = process.hrtime.bigint();
    await new Promise((r) => setTimeout(r, INTERVAL_MS));
    const idleCpu = process.cpuUsage(idle0);
    const idlePerS = (idleCpu.user + idleCpu.system) / 1e6 / (Number(process.hrtime.bigint() - idleT0) / 1e9);

    collector = new VolumeStatsCollector({
      recorded: new RecordedVolumes(store),
      csi: { nodeCapabilities: () => ['GET_VOLUME_STATS'], volumeManagerFor: () => vm },
      send: async (reports, signal) => {
        await api.reportVolumeStats('bench-node', reports, { signal });
      },
      intervalMs: INTERVAL_MS,
    });
    await collector.start();
    // Warm up: every volume asked once (the first round comes within a tenth of the interval).
    await waitFor('a first round', () => collector!.counts.reports >= VOLUMES, 60_000);
    const cpu0 = process.cpuUsage();
    const plugin0 = processCpuSeconds(plugin.pid!);
    const calls0 = collector.counts.calls;
    const t0 = process.hrtime.bigint();
    await new Promise((r) => setTimeout(r, INTERVAL_MS * ROUNDS));
    const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
    const cpu = process.cpuUsage(cpu0);
    const agentCpuS = Math.max(0, (cpu.user + cpu.system) / 1e6 - idlePerS * wallS);
    const pluginCpuS = processCpuSeconds(plugin.pid!) - plugin0;
    const calls = collector.counts.calls - calls0;
    const measuredPct = (agentCpuS / wallS) * 100;
    const at60Pct = measuredPct * (INTERVAL_MS / DEFAULT_INTERVAL_MS);
    const perCallUs = (agentCpuS / Math.max(1, calls)) * 1e6;
    const result = {
      volumes: VOLUMES,
      intervalMs: INTERVAL_MS,
      seconds: round(wallS),
      calls,
      failures: collector.counts.failures,
      batches: collector.counts.batches,
      idleCpuPctOfCore: round(idlePerS * 100, 2),
      agentCpuSeconds: round(agentCpuS, 3),
      agentCpuPerCallUs: round(perCallUs),
      agentCorePctAtInterval: round(measuredPct, 2),
      agentCorePctAt60s: round(at60Pct, 3),
      pluginCorePctAt60s: round((pluginCpuS / wallS) * 100 * (INTERVAL_MS / DEFAULT_INTERVAL_MS), 3),
    };
    console.log(
      `stats     ${calls} NodeGetVolumeStats in ${result.seconds} s at a ${INTERVAL_MS / 1000} s interval: agent CPU ${result.agentCpuSeconds} s above idle (idle ${result.idleCpuPctOfCore} %) ` +
        `(${result.agentCpuPerCallUs} us per volume per round), ${result.agentCorePctAtInterval} % of one core; ` +
        `at the default 60 s interval ${result.agentCorePctAt60s} % (goal < 1 %); the plugin ${result.pluginCorePctAt60s} %`,
    );
    return result;
  } finally {
    await collector?.stop();
    await vm.stop();
    store.close();
    await client.close();
    api.close();
    unmountAll(dir);
    plugin.kill('SIGTERM');
    sink.child.kill('SIGTERM');
    await new Promise((r) => plugin.once('exit', r));
  }
}
