// Start-up as the user sees it (issue 10): the compiled `berth` binary
// (bin/berth.js -> dist/), each figure with its ratio to a bare `node -e 0`
// measured in the same run. `npm run bench` builds dist/ first.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CsiClient } from '../src/csi/index.js';
import { silentLogger } from '../src/lib/index.js';
import { round, summarize, timeNs } from './_stats.js';

const BERTH = fileURLToPath(new URL('../bin/berth.js', import.meta.url));
const RUNS = Number(process.env['BENCH_STARTUP_RUNS'] ?? 20);

function exec(args: readonly string[], env: Record<string, string> = {}): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`node ${args.join(' ')}: exit ${code}\n${err}`))));
  });
}

async function p50Ms(fn: () => Promise<unknown>, runs = RUNS): Promise<number> {
  await fn();
  const samples: bigint[] = [];
  for (let i = 0; i < runs; i++) samples.push(await timeNs(fn));
  return round(summarize(samples).p50Us / 1000);
}

/** Peak RSS (MiB) of one process, from GNU time. */
function maxRssMiB(args: readonly string[], env: Record<string, string> = {}): number | undefined {
  if (!existsSync('/usr/bin/time')) return undefined;
  const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  const kb = Number(r.stderr.trim().split('\n').pop());
  return Number.isFinite(kb) ? round(kb / 1024) : undefined;
}

export default async function startupBench(dir: string): Promise<Record<string, unknown>> {
  const bare = await p50Ms(() => exec(['-e', '0']));
  const figures: Record<string, unknown> = { bareNodeMs: bare };
  const show = (label: string, key: string, ms: number): void => {
    figures[key] = { p50Ms: ms, ratio: round(ms / bare, 2) };
    console.log(`${label}: p50 ${ms} ms (${round(ms / bare, 2)}x bare node, ${bare} ms)`);
  };
  console.log(`node -e 0: p50 ${bare} ms`);
  show('berth --version', 'version', await p50Ms(() => exec([BERTH, '--version'])));
  show('berth --help', 'help', await p50Ms(() => exec([BERTH, '--help'])));

  // A dev agent for the API commands.
  const agent = spawn(process.execPath, [BERTH, 'agent', '--dev', '--port', '0', '--data-dir', path.join(dir, 'agent')], { stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  agent.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  try {
    const env = await new Promise<Record<string, string>>((resolve, reject) => {
      const check = (): void => {
        const addr = /^BERTH_ADDR=(\S+)$/m.exec(out)?.[1];
        const token = /^BERTH_TOKEN=(\S+)$/m.exec(out)?.[1];
        if (addr && token) resolve({ BERTH_ADDR: addr, BERTH_TOKEN: token, NO_COLOR: '1' });
      };
      agent.stdout.on('data', check);
      agent.once('exit', (code) => reject(new Error(`the dev agent exited ${code}`)));
    });
    show('berth node status against a dev agent', 'nodeStatus', await p50Ms(() => exec([BERTH, 'node', 'status'], env)));
    const rss = maxRssMiB([BERTH, 'node', 'status'], env);
    figures['cliRssMiB'] = rss;
    console.log(`RSS of one berth CLI process (node status): ${rss} MiB (bare node: ${maxRssMiB(['-e', '0'])} MiB)`);
  } finally {
    agent.kill('SIGINT');
    await new Promise((r) => agent.once('close', r));
  }

  // berth plugin hostpath: spawn -> the socket answers Probe.
  const samples: bigint[] = [];
  for (let i = 0; i < Math.max(5, RUNS / 2); i++) {
    const sock = path.join(dir, `p${i}`, 'csi.sock');
    const start = process.hrtime.bigint();
    const plugin = spawn(process.execPath, [BERTH, 'plugin', 'hostpath', '--endpoint', `unix://${sock}`, '--node-id', 'bench', '--data-dir', path.join(dir, `p${i}`, 'data'), '--log-level', 'silent'], { stdio: 'ignore' });
    const client = new CsiClient({ endpoint: `unix://${sock}`, logger: silentLogger() });
    for (;;) {
      if (existsSync(sock)) {
        try {
          await client.probe({ deadlineMs: 1000, retry: false });
          break;
        } catch {
          // not serving yet
        }
      }
      await new Promise((r) => setTimeout(r, 1));
    }
    samples.push(process.hrtime.bigint() - start);
    client.close();
    plugin.kill('SIGINT');
    await new Promise((r) => plugin.once('close', r));
  }
  show('berth plugin hostpath: spawn -> socket answers Probe', 'pluginProbe', round(summarize(samples).p50Us / 1000));
  return figures;
}
