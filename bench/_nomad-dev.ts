// A Nomad dev agent for the benches that measure Berth beside Nomad in the
// same run (NOMAD_BIN names the binary; Nomad 1.1.2 here, built from its
// source): `nomad agent -dev -bind 127.0.0.1` on free ports with raw_exec
// enabled, no per-client connection limit (the burst opens one connection a
// job from one address) and its data in the bench's temporary directory.
// stop() leaves nothing behind: SIGINT (a dev agent destroys its
// allocations on shutdown: every task stopped, every alloc dir and its
// secrets tmpfs removed), SIGKILL after 60 s, then every process that was
// its descendant (executors, logmons, tasks) is killed and any mount left
// under its data directory unmounted; it throws if a task outlived it.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../test/support/agent-run.js';
import { eventually } from '../test/support/eventually.js';

export interface NomadDev {
  addr: string;
  pid: number;
  dataDir: string;
  /** Stops it and everything it started (see the file's header); safe twice. */
  stop(): Promise<void>;
}

/** pid -> [parent pid, start time in clock ticks since boot] of every process now. */
function processes(): Map<number, [number, number]> {
  const out = new Map<number, [number, number]>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // A zombie has left its work: count it gone.
      if (fields[0] === 'Z') continue;
      out.set(Number(e), [Number(fields[1]), Number(fields[19])]);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Every descendant of `pid` now (children, their children, ...): pid -> start time (a pid, once reused, is another process). */
export function descendants(pid: number): Map<number, number> {
  const procs = processes();
  const out = new Map<number, number>();
  const frontier = [pid];
  while (frontier.length) {
    const p = frontier.pop()!;
    for (const [child, [parent, started]] of procs) {
      if (parent === p) {
        out.set(child, started);
        frontier.push(child);
      }
    }
  }
  return out;
}

/** Those of `seen` (pid -> start time) still running as the same process. */
function stillRunning(seen: ReadonlyMap<number, number>): number[] {
  const procs = processes();
  return [...seen].filter(([pid, started]) => procs.get(pid)?.[1] === started).map(([pid]) => pid);
}

/** Mount points at or under `dir`, deepest first. */
function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
}

/** Starts a Nomad dev agent from `bin` with its data under `dir`; resolves once its node is ready. */
export async function startNomadDev(bin: string, dir: string): Promise<NomadDev> {
  const dataDir = join(dir, 'nomad-data');
  mkdirSync(dataDir, { recursive: true });
  const [http, rpc, serf] = [await freePort(), await freePort(), await freePort()];
  const config = join(dir, 'nomad.hcl');
  writeFileSync(
    config,
    [
      `data_dir = "${dataDir}"`,
      `ports { http = ${http}\n  rpc = ${rpc}\n  serf = ${serf} }`,
      'client { options = { "driver.raw_exec.enable" = "1" } }',
      'limits { http_max_conns_per_client = 0 }',
      '',
    ].join('\n'),
  );
  let output = '';
  const child: ChildProcess = spawn(bin, ['agent', '-dev', '-bind', '127.0.0.1', `-config=${config}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  const keep = (d: Buffer): void => {
    output = (output + d.toString('utf8')).slice(-20_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pid = child.pid!;
  const addr = `http://127.0.0.1:${http}`;
  /** Everything it started, as last seen while it ran: killed at the end even if it was reparented meanwhile. */
  const seen = new Map<number, number>();
  const sample = (): void => {
    for (const [p, started] of descendants(pid)) seen.set(p, started);
  };
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    sample();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGINT');
      const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
      await exited;
      clearTimeout(timer);
    }
    for (const p of stillRunning(seen)) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await eventually('every process the Nomad agent started gone', () => stillRunning(seen).length === 0 || undefined, { timeoutMs: 10_000, intervalMs: 100 }).catch(() => undefined);
    for (const m of mountsUnder(dataDir)) spawnSync('umount', ['-l', m], { stdio: 'ignore' });
    const left = stillRunning(seen);
    if (left.length) throw new Error(`processes the Nomad agent started outlived it: ${left.join(', ')}`);
  };
  const exitedEarly = new AbortController();
  void exited.then(() => exitedEarly.abort(new Error(`nomad agent exited (${child.exitCode ?? child.signalCode}): ${output.slice(-2000)}`)));
  try {
    await eventually(
      'the Nomad dev agent\'s node ready',
      async () => {
        const nodes = (await (await fetch(`${addr}/v1/nodes`)).json()) as Array<{ Status: string }>;
        return nodes.some((n) => n.Status === 'ready') || undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200, signal: exitedEarly.signal },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  /** Its descendants, sampled while it runs (a task's executor can exit before stop() looks). */
  const sampler = setInterval(sample, 2000);
  sampler.unref();
  child.once('exit', () => clearInterval(sampler));
  return {
    addr,
    pid,
    dataDir,
    stop: async () => {
      clearInterval(sampler);
      await stop();
    },
  };
}
