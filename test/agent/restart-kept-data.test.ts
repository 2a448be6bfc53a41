// A dev agent stopped cleanly (SIGINT drains it) and started again with its
// kept --data-dir: the CSI plugin system job runs again (issue 12 finding 2a),
// instead of staying "complete" with desired "run" and never placed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub, CSIPlugin } from '../../src/api/index.js';
import { until } from '../support/runtime-cluster.js';
import { EXAMPLES, startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m.startsWith(dir));
}

async function pluginHealthy(agent: AgentUnderTest): Promise<void> {
  await until(
    'the hostpath plugin to be healthy',
    async () => {
      const p = await agent.get<CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined);
      return p !== undefined && p.ControllersHealthy === 1 && p.NodesHealthy === 1;
    },
    60_000,
  );
}

describe('a dev agent restarted with its kept --data-dir', () => {
  let dir = '';
  let dataDir = '';
  let agent: AgentUnderTest | undefined;
  const nodeIds: string[] = [];

  before(async () => {
    dir = await tempDir('bxr-');
    dataDir = path.join(dir, 'a');
  });
  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    for (const m of mountsUnder(dir)) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
    for (const id of nodeIds) rmSync(path.join('/var/lib/berth/hostpath', id), { recursive: true, force: true });
  });

  it('runs its CSI plugin system job again: healthy plugin, one new live allocation, and job run of the same file succeeds', async () => {
    agent = await startAgent(['--dev', '--data-dir', dataDir, '--port', '0']).ready(true);
    ok(await agent.cli(['job', 'run', path.join(EXAMPLES, 'hostpath-plugin.hcl')]), 'job run hostpath-plugin');
    await pluginHealthy(agent);
    const [first] = await agent.get<AllocationListStub[]>('/v1/job/hostpath-plugin/allocations');
    nodeIds.push(first!.NodeID);
    const stopped = await agent.stop('SIGINT');
    assert.equal(stopped.code, 0, stopped.stderr);

    agent = await startAgent(['--dev', '--data-dir', dataDir, '--port', '0']).ready(true);
    await pluginHealthy(agent);
    const allocs = await agent.get<AllocationListStub[]>('/v1/job/hostpath-plugin/allocations');
    const live = allocs.filter((a) => a.DesiredStatus === 'run' && (a.ClientStatus === 'running' || a.ClientStatus === 'pending'));
    assert.equal(live.length, 1, `one live plugin allocation: ${JSON.stringify(allocs.map((a) => [a.DesiredStatus, a.ClientStatus]))}`);
    assert.notEqual(live[0]!.ID, first!.ID, 'a new allocation replaced the one the drain finished');

    ok(await agent.cli(['job', 'run', path.join(EXAMPLES, 'hostpath-plugin.hcl')]), 'job run hostpath-plugin again');
  });
});
