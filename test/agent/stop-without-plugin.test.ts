// Ctrl-C of a dev agent while a workload's CSI volume has no plugin that can
// unmount it: the plugin job was stopped first, then the workload. CSI
// unpublishes only through the plugin, so the agent cannot finish that
// volume now; it used to retry the unmount for about 40 s, then exit 0
// ("Berth agent stopped") with the volume still mounted and claimed, and
// forget it. Now it exits at once (exit 1), naming the volume it kept; its
// record stays, and the agent started again with the plugin running again
// unmounts the volume and releases its claim, so a new workload can claim it.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Allocation, CsiPlugin } from '../../src/structs/index.js';
import { cleanupUnder, hostpathPluginJob, hostpathVolumeHcl, mountsUnder, rawExecJob, until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

const WRITER = 'while :; do date >> "$BERTH_TASK_DIR/data/log"; sleep 1; done';

describe('Ctrl-C of an agent whose workload holds a volume no plugin can unmount', () => {
  let dir = '';
  let dataDir = '';
  let agent: AgentUnderTest | undefined;

  before(async () => {
    dir = await tempDir('bsp-');
    dataDir = path.join(dir, 'a');
  });
  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    cleanupUnder(dir);
  });

  const file = (name: string, body: unknown): string => {
    const p = path.join(dir, name);
    writeFileSync(p, typeof body === 'string' ? body : JSON.stringify(body));
    return p;
  };
  const start = async (): Promise<AgentUnderTest> => (agent = await startAgent(['--dev', '--data-dir', dataDir, '--port', '0']).ready(true));
  const nodesHealthy = async (a: AgentUnderTest): Promise<number> => (await a.get<CsiPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined))?.nodesHealthy ?? 0;
  const published = (allocId: string): string[] => mountsUnder(dataDir).filter((m) => m.includes(`/per-alloc/${allocId}/`));

  it('exits at once naming the kept volume; started again with the plugin, it unmounts the volume and releases the claim', async () => {
    const plugin = file('plugin.json', { job: hostpathPluginJob({ id: 'hostpath-plugin', driver: 'raw_exec', dataDir: path.join(dir, 'hp') }) });
    let a = await start();
    ok(await a.cli(['job', 'run', plugin]), 'job run hostpath-plugin');
    await until('the plugin healthy', async () => (await nodesHealthy(a as AgentUnderTest)) === 1, 60_000);
    ok(await a.cli(['volume', 'create', file('vol.hcl', hostpathVolumeHcl('kept'))]), 'volume create');
    ok(await a.cli(['job', 'run', file('user.json', { job: rawExecJob('user', 'kept', WRITER) })]), 'job run user');
    const [alloc] = await a.get<Allocation[]>('/v1/job/user/allocations');
    assert.ok(alloc && published(alloc.id).length === 1, 'the volume is published for the workload');

    // The plugin goes first, then the workload: nothing on the node can unpublish its volume now.
    ok(await a.cli(['job', 'stop', 'hostpath-plugin']), 'job stop hostpath-plugin');
    await until('the plugin gone from the node', async () => (await nodesHealthy(a as AgentUnderTest)) === 0, 60_000);
    ok(await a.cli(['job', 'stop', 'user']), 'job stop user');
    await until('the workload stopped', async () => (await a.get<Allocation>(`/v1/allocation/${alloc.id}`)).clientStatus === 'complete');

    const stopped = await a.stop('SIGINT');
    assert.equal(stopped.code, 1, stopped.stdout + stopped.stderr);
    assert.match(
      stopped.stdout,
      new RegExp(
        `allocation ${alloc.id} \\(job user\\): volume "kept" stays mounted and claimed: no instance of its node plugin "hostpath" runs on this node; ` +
          'the agent unmounts and releases it when it starts again and the plugin runs',
      ),
    );
    assert.match(stopped.stderr, /error: the drain did not finish: 1 allocation\(s\) not stopped or released/);
    assert.equal(published(alloc.id).length, 1, 'the volume is left as it was, for the next start');

    // Started again; once the plugin runs again, the kept volume is unmounted and its claim released.
    a = await start();
    const claims = async (): Promise<unknown[]> => (await (a as AgentUnderTest).get<{ claims?: unknown[] }>('/v1/volume/csi/kept')).claims ?? [];
    assert.equal((await claims()).length, 1, 'the claim was kept while the agent was down');
    ok(await a.cli(['job', 'run', plugin]), 'job run hostpath-plugin again');
    await until('the volume unmounted and its claim released', async () => published(alloc.id).length === 0 && (await claims()).length === 0, 120_000);
    assert.deepEqual(mountsUnder(dataDir).filter((m) => m.includes('/staging/')), [], 'unstaged too');
    // The volume can be claimed again.
    ok(await a.cli(['job', 'run', file('next.json', { job: rawExecJob('next', 'kept', WRITER) })]), 'job run next');
  });
});
