// The CLI through failovers, as an operator's script runs it: three servers
// on etcd, every server listed (BERTH_ADDR=a,b,c), `job run` and
// `job status` in a loop while the leader is killed with SIGKILL and, later,
// the next leader is paused with SIGSTOP. Every invocation ends with the
// right answer or a retryable exit code (3, 7, 8), and no job is
// registered twice (one registration evaluation each).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ok, until, type BerthResult } from '../support/agent-run.js';
import { Cluster, type ServerProc } from '../support/process-cluster.js';

const RETRYABLE_EXITS = new Set([3, 7, 8]);

const cluster = new Cluster();

before(async () => {
  await cluster.start({ etcdMembers: 1, servers: 3, clients: 0, leaseTtl: '2s' });
});

after(async () => {
  await cluster.close();
});

function jobFile(id: string): string {
  return cluster.writeJson(`${id}.json`, {
    id,
    type: 'batch',
    groups: [{ name: 'main', tasks: [{ name: 'main', driver: 'raw_exec', config: { command: '/bin/true' }, resources: { cpuMhz: 10, memoryMb: 16 } }] }],
  });
}

interface Invocation {
  args: string[];
  result: BerthResult;
}

describe('the CLI with every server listed, across a leader SIGKILL and a leader SIGSTOP', { timeout: 240_000 }, () => {
  it('bad usage is exit 2: an address that is no URL', async () => {
    const s = cluster.servers[0] as ServerProc;
    const r = await s.run.cli(['job', 'status', '--address', `${s.url},not a url`]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /invalid agent address "not a url" \(from --address\)/);
  });

  it('--address a,b moves past a server that is down', async () => {
    const s = cluster.servers[0] as ServerProc;
    const r = await s.run.cli(['job', 'status', '--address', `http://127.0.0.1:9,${s.url}`]);
    assert.equal(r.code, 0, r.stderr);
  });

  it('every invocation answers right or exits retryable; job run never registers twice', async (t) => {
    const via = cluster.servers[0] as ServerProc;
    const runs: Invocation[] = [];
    let stopped = false;
    const cli = async (args: string[]): Promise<BerthResult> => {
      // A paused server is left after --client-timeout (10 s by default) without an answer.
      const result = await via.run.cli([...args, '--client-timeout', '3s'], { addr: cluster.addresses(), timeoutMs: 120_000 });
      runs.push({ args, result });
      return result;
    };
    const loop = (async () => {
      for (let i = 0; !stopped; i++) {
        const id = `loop-${i}`;
        const r = await cli(['job', 'run', '--detach', jobFile(id)]);
        if (r.code === 0) await cli(['job', 'status', id]);
      }
    })();
    const done = (n: number): (() => boolean) => () => runs.length >= n;
    try {
      await until('a few invocations before any fault', done(4));
      const first = await cluster.leader();
      await first.run.stop('SIGKILL');
      const second = await cluster.leader();
      t.diagnostic(`${first.name} killed; ${second.name} leads`);
      await until('invocations after the SIGKILL', done(runs.length + 6), 90_000);
      await first.run.start();
      await until('the killed server back', async () => (await cluster.status(first))?.isLeader === false);
      second.run.child!.kill('SIGSTOP');
      try {
        const third = await until('another server leads', async () => {
          for (const s of cluster.live().filter((x) => x !== second)) if ((await cluster.status(s))?.isLeader) return s;
          return undefined;
        });
        t.diagnostic(`${second.name} paused; ${third.name} leads`);
        await until('invocations during the pause', done(runs.length + 6), 90_000);
      } finally {
        second.run.child!.kill('SIGCONT');
      }
    } finally {
      stopped = true;
      await loop;
    }
    const failed = runs.filter((r) => r.result.code !== 0);
    t.diagnostic(`${runs.length} invocations, ${failed.length} retryable failures: ${failed.map((f) => `${f.args.join(' ')} -> ${f.result.code}`).join('; ')}`);
    for (const r of failed) assert.ok(RETRYABLE_EXITS.has(r.result.code ?? -1), `berth ${r.args.join(' ')} exited ${r.result.code}:\n${r.result.stderr}`);
    const landed = runs.filter((r) => r.args[1] === 'run' && r.result.code === 0).map((r) => (r.args.at(-1) as string).replace(/^.*\/(loop-\d+)\.json$/, '$1'));
    assert.ok(landed.length >= 8, `only ${landed.length} jobs were registered`);
    const leader = await cluster.leader();
    for (const id of landed) {
      const evals = await cluster.read<Array<{ TriggeredBy: string }>>(`/v1/job/${id}/evaluations`, leader);
      assert.equal(evals.filter((e) => e.TriggeredBy === 'job-register').length, 1, `job ${id} registered once`);
    }
    const notes = runs.filter((r) => /earlier submission/.test(r.result.stderr)).map((r) => r.result.stderr.split('\n').find((l) => /earlier submission/.test(l)));
    if (notes.length) t.diagnostic(`checked submissions: ${notes.join(' | ')}`);
    ok(await leader.run.cli(['job', 'status'], { addr: cluster.addresses() }), 'job status');
  });
});
