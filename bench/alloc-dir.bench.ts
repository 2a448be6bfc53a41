// The agent's event loop per allocation directory (section `alloc-dir` of
// `npm run bench`), real directories and real tmpfs mounts: N
// (BENCH_ALLOC_DIRS, 100) allocation directories of one task built and
// destroyed at once, in a process holding ~200 MB as the agent does after a
// burst (fork copies its page tables), measured as event-loop busy time
// (performance.eventLoopUtilization) per allocation:
//   - through the node's mount helper (AllocDir: what the agent does);
//   - the same steps run in this process as the agent ran them before the
//     mount helper (a mkdir and a chmod per directory, mount(8) and umount(8)
//     forked from here, the mount table read here), for reference.
// The machine is shared: read the two side by side, with the load printed.

import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { promisify } from 'node:util';
import { AllocDir, unmountAllUnder } from '../src/client/allocdir/index.js';
import { round } from './_stats.js';

const N = Number(process.env['BENCH_ALLOC_DIRS'] ?? 100);
const run = promisify(execFile);

/** The steps before the mount helper, in this process. */
async function forkedHere(root: string, id: string): Promise<void> {
  const mk = async (d: string, mode: number): Promise<void> => {
    await mkdir(d, { recursive: true });
    await chmod(d, mode);
  };
  const dir = path.join(root, id);
  const shared = path.join(dir, 'alloc');
  const task = path.join(dir, 't');
  await mk(dir, 0o755);
  await mk(shared, 0o755);
  for (const sub of ['logs', 'data', 'tmp']) await mk(path.join(shared, sub), 0o777);
  await mk(task, 0o777);
  await mk(path.join(task, 'local'), 0o777);
  await mk(path.join(task, 'tmp'), 0o1777);
  await mk(path.join(task, 'secrets'), 0o777);
  await run('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0777,noexec,nosuid,nodev', 'tmpfs', path.join(task, 'secrets')]);
  const real = realpathSync(dir);
  for (;;) {
    const next = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((l) => l.split(' ')[4] ?? '')
      .filter((m) => m === real || m.startsWith(`${real}/`))
      .sort((a, b) => b.length - a.length)[0];
    if (!next) break;
    await run('umount', [next]);
  }
  await rm(dir, { recursive: true, force: true });
}

async function viaHelper(root: string, id: string): Promise<void> {
  const a = new AllocDir({ root, allocId: id });
  await a.build(['t']);
  await a.destroy();
}

/** Event-loop busy ms per allocation and wall ms for N at once. */
async function measure(root: string, name: string, one: (root: string, id: string) => Promise<void>): Promise<{ loopMsPerAlloc: number; wallMs: number }> {
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: N }, (_, i) => one(root, `${name}-${i}`)));
  const wallMs = performance.now() - t0;
  const busy = performance.eventLoopUtilization(elu0).active;
  return { loopMsPerAlloc: round(busy / N, 2), wallMs: round(wallMs) };
}

export default async function bench(dir: string): Promise<Record<string, unknown>> {
  const root = mkdtempSync(path.join(dir, 'allocs-'));
  // The agent's size after a burst: fork's cost grows with it.
  const ballast = Array.from({ length: 200 }, (_, i) => Buffer.alloc(1024 * 1024, i));
  try {
    await viaHelper(root, 'warm-up');
    const load = loadavg().map((l) => l.toFixed(2)).join(' ');
    const helper = await measure(root, 'helper', viaHelper);
    const forked = await measure(root, 'forked', forkedHere);
    console.log(`  ${N} allocation dirs built and destroyed at once, agent loop busy per allocation: ${helper.loopMsPerAlloc} ms through the mount helper (all in ${helper.wallMs} ms), ${forked.loopMsPerAlloc} ms forking mount/umount here as before (all in ${forked.wallMs} ms); load ${load}, ballast ${ballast.length} MiB`);
    return { allocDirs: N, helper, forkedHere: forked, load };
  } finally {
    await unmountAllUnder(root);
    rmSync(root, { recursive: true, force: true });
  }
}
