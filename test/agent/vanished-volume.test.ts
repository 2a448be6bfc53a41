// A release that always ends, on a real dev agent with the examples' hostpath
// plugin job: the volume's directory removed under a running task (an admin's
// rm -rf), then `job stop` releases the claim and leaves nothing mounted; and
// a plugin that keeps refusing to unpublish (something else mounted over the
// publication, which the hostpath plugin will not touch) is overridden by an
// operator's `volume detach --force`: the node unmounts it itself, the claim
// is released, and the claim's events say what was done.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import type { AllocationListStub, CSIPlugin, VolumeClaimListStub } from '../../src/api/index.js';
import { mountsUnder, until } from '../support/runtime-cluster.js';
import { EXAMPLES, startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

const jobHcl = (job: string, volume: string): string => `
job "${job}" {
  group "g" {
    volume "data" {
      type            = "csi"
      source          = "${volume}"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo x > \\"$BERTH_TASK_DIR/data/file\\" && while true; do sleep 1; done"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`;

const volumeHcl = (id: string): string =>
  `id = "${id}"\nname = "${id}"\ntype = "csi"\nplugin_id = "hostpath"\ncapacity_min = "1MiB"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`;

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

describe('a release that always ends, on a dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;
  let nodeId = '';

  const claimsOf = (volume: string): Promise<VolumeClaimListStub[]> => agent.get<VolumeClaimListStub[]>(`/v1/volumes/csi/claims?volume=${volume}`);

  /** Runs a job using `volume` and resolves with its running allocation, whose task wrote into the volume. */
  const runWith = async (job: string, volume: string): Promise<AllocationListStub> => {
    const file = path.join(dir, `${job}.hcl`);
    writeFileSync(file, jobHcl(job, volume));
    ok(await agent.cli(['job', 'run', file]), `job run ${job}`);
    return until(
      `${job} to run`,
      async () => {
        const [a] = await agent.get<AllocationListStub[]>(`/v1/job/${job}/allocations`);
        return a?.ClientStatus === 'running' ? a : undefined;
      },
      90_000,
    );
  };

  /** The directory under the plugin's data dir that holds the volume (the plugin's records name it). */
  const volumeDirOf = async (volume: string): Promise<string> => {
    const v = await agent.get<Api.CSIVolume>(`/v1/volume/csi/${volume}`);
    const data = path.join('/var/lib/berth/hostpath', nodeId);
    const state = JSON.parse(readFileSync(path.join(data, 'controller-state.json'), 'utf8')) as { volumes: { id: string; key: string }[] };
    const rec = state.volumes.find((r) => r.id === v.ExternalID);
    assert.ok(rec, `volume ${volume} (external ID ${v.ExternalID}) in the plugin's records`);
    return path.join(data, 'volumes', rec.key);
  };

  /** The mounts left under the agent's data dir for an allocation, or for any staging or publication of `volume`. */
  const leftFor = (allocId: string, volume: string): string[] =>
    mountsUnder(dir).filter((m) => m.includes(allocId) || ((m.includes('/staging/') || m.includes('/per-alloc/')) && m.includes(`/${volume}`)));

  /**
   * Nothing of the volume stays mounted, and once the stopped allocation is
   * collected (`system gc`; its secrets tmpfs lives until then, as in Nomad)
   * nothing of the allocation either.
   */
  const nothingLeft = async (allocId: string, volume: string): Promise<void> => {
    assert.deepEqual(
      leftFor(allocId, volume).filter((m) => !m.endsWith('/secrets')),
      [],
      'no staging, publication or task volume mount is left',
    );
    ok(await agent.cli(['system', 'gc']), 'system gc');
    await until('the allocation to be collected, its secrets mount with it', () => (leftFor(allocId, volume).length === 0 ? true : undefined), 30_000).catch(() => {
      assert.deepEqual(leftFor(allocId, volume), [], 'nothing of the allocation is left mounted after system gc');
    });
  };

  const metrics = async (): Promise<string> =>
    (await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${agent.token}` } })).text();

  before(async () => {
    dir = await tempDir('bvv-');
    const config = path.join(dir, 'agent.hcl');
    // Stats every second, so the usage gauges are there to watch (and to see cleared).
    writeFileSync(config, 'csi {\n  volume_stats_interval = "1s"\n  drift_interval = "1h"\n}\n');
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0', '--config', config]).ready(true);
    const [node] = await agent.get<Api.NodeListStub[]>('/v1/nodes');
    nodeId = node!.ID;
    ok(await agent.cli(['job', 'run', path.join(EXAMPLES, 'hostpath-plugin.hcl')]), 'job run hostpath-plugin');
    await until(
      'the hostpath plugin to be healthy',
      async () => {
        const p = await agent.get<CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined);
        return p && p.ControllersHealthy === 1 && p.NodesHealthy === 1;
      },
      90_000,
    );
  });

  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
    if (nodeId) rmSync(path.join('/var/lib/berth/hostpath', nodeId), { recursive: true, force: true });
  });

  it("the volume's directory removed under a running task: job stop releases the claim and leaves no mount behind", async () => {
    const file = path.join(dir, 'gone.hcl');
    writeFileSync(file, volumeHcl('gone'));
    ok(await agent.cli(['volume', 'create', file]), 'volume create gone');
    const alloc = await runWith('vanisher', 'gone');
    assert.ok(leftFor(alloc.ID, 'gone').length >= 2, `the publication and the staging are mounted: ${mountsUnder(dir).join(', ')}`);

    const used = /^berth_volume_used_bytes\{namespace="default",volume="gone",plugin="hostpath"\} \d+$/m;
    await until('the usage gauge of the volume', async () => (used.test(await metrics()) ? true : undefined), 30_000);

    rmSync(await volumeDirOf('gone'), { recursive: true, force: true });
    // Its condition turns abnormal, and its usage gauges stop (before: they kept their last values).
    const after = await until(
      'the abnormal condition in the metrics',
      async () => {
        const m = await metrics();
        return /^berth_volume_abnormal\{namespace="default",volume="gone",plugin="hostpath"\} 1$/m.test(m) ? m : undefined;
      },
      30_000,
    );
    await until('the usage gauges to clear', async () => (used.test(await metrics()) ? undefined : true), 10_000).catch(() => assert.doesNotMatch(after, used));
    assert.deepEqual((await agent.get<Api.CSIVolume>('/v1/volume/csi/gone')).BerthUsage, [], 'volume status shows no stale usage');

    ok(await agent.cli(['job', 'stop', 'vanisher']), 'job stop');
    // Before: the plugin refused NodeUnpublish ("not touching it") and the claim stayed unpublishing for ever.
    await until('the claim to be released', async () => ((await claimsOf('gone')).length === 0 ? true : undefined), 30_000);
    await until('the allocation to be stopped', async () => ((await agent.get<Api.Allocation>(`/v1/allocation/${alloc.ID}`)).ClientStatus === 'complete' ? true : undefined), 30_000);
    await nothingLeft(alloc.ID, 'gone');
  });

  it('a plugin that keeps refusing to unpublish: volume detach --force unmounts on the node, releases the claim, and the claim history says so', async () => {
    const file = path.join(dir, 'stuck.hcl');
    writeFileSync(file, volumeHcl('stuck'));
    ok(await agent.cli(['volume', 'create', file]), 'volume create stuck');
    const alloc = await runWith('holder', 'stuck');
    const target = mountsUnder(dir).find((m) => m.includes('/per-alloc/') && m.includes(alloc.ID));
    assert.ok(target, `the publication of ${alloc.ID}: ${mountsUnder(dir).join(', ')}`);
    // Something else mounted over the publication: the hostpath plugin refuses to touch it, every time.
    assert.equal(spawnSync('mount', ['-t', 'tmpfs', 'over', target]).status, 0);
    const from = Number((await fetch(`${agent.addr}/v1/volumes/csi/claims`, { headers: { authorization: `Bearer ${agent.token}` } })).headers.get('x-nomad-index'));

    ok(await agent.cli(['job', 'stop', 'holder']), 'job stop');
    const stuck = await until(
      'the release to be refused by the plugin',
      async () => {
        const [c] = await claimsOf('stuck');
        return c && /not touching it/.test(c.LastError) ? c : undefined;
      },
      60_000,
    );
    assert.equal(stuck.State, 'unpublishing');
    const plain = await agent.cli(['volume', 'detach', 'stuck', nodeId]);
    assert.notEqual(plain.code, 0, 'a plain detach still meets the refusal');

    ok(await agent.cli(['volume', 'detach', '--force', 'stuck', nodeId]), 'volume detach --force');
    assert.deepEqual(await claimsOf('stuck'), []);
    await nothingLeft(alloc.ID, 'stuck');

    const events = ok(await agent.cli(['event', 'stream', '--topic', 'claim', '--index', String(from), '--until-now', '--json']), 'event stream');
    type ClaimEvent = { Topic: string; Type: string; Payload: { Claim?: VolumeClaimListStub } & Record<string, unknown> };
    const claimEvents = events.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .flatMap((l) => (JSON.parse(l) as { Events: ClaimEvent[] }).Events)
      .map((e) => (e.Payload.Claim ?? Object.values(e.Payload)[0]) as VolumeClaimListStub)
      .filter((c) => c.VolumeID === 'stuck');
    assert.ok(
      claimEvents.some((c) => c.BerthReleaseForced),
      `a claim event shows the forced release: ${JSON.stringify(claimEvents.map((c) => [c.State, c.BerthReleaseForced]))}`,
    );
    const override = claimEvents.find((c) => c.BerthReleaseOverride !== '');
    assert.ok(override, 'a claim event carries the override');
    assert.match(override.BerthReleaseOverride, new RegExp(`the agent unmounted ${target.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} itself \\(unpublish, forced by an operator\\); the plugin said: .*not touching it`));
  });

  it('volume doctor: a stray mount under one volume is in `volume doctor <id>`; a stopped plugin is a finding; exit codes 0 and 1 (2: test/runtime/volume-health-faults.test.ts)', async () => {
    const file = path.join(dir, 'checked.hcl');
    writeFileSync(file, volumeHcl('checked'));
    ok(await agent.cli(['volume', 'create', file]), 'volume create checked');
    const alloc = await runWith('checker', 'checked');
    const clean = await agent.cli(['volume', 'doctor', 'checked']);
    assert.equal(clean.code, 0, `clean: ${clean.stdout}${clean.stderr}`);

    // A mount behind Berth's back in this volume's per-allocation directory.
    const publication = mountsUnder(dir).find((m) => m.includes('/per-alloc/') && m.includes(alloc.ID));
    assert.ok(publication);
    const stray = path.join(publication.slice(0, publication.indexOf('/per-alloc/')), 'per-alloc', 'no-such-alloc', 'checked', 'stray');
    spawnSync('mkdir', ['-p', stray, path.join(dir, 'stray-src')]);
    assert.equal(spawnSync('mount', ['--bind', path.join(dir, 'stray-src'), stray]).status, 0);
    const one = await agent.cli(['volume', 'doctor', '--json', 'checked']);
    assert.equal(one.code, 1, 'differences: exit 1');
    assert.deepEqual(
      (JSON.parse(one.stdout) as Api.DriftReport).Findings.map((f) => [f.Kind, f.Path]),
      [['mount-without-record', stray]],
      'the per-volume doctor keeps the stray mount under that volume',
    );
    const fixed = await agent.cli(['volume', 'doctor', '--fix', 'checked']);
    assert.equal(fixed.code, 0, `all repaired: exit 0\n${fixed.stdout}${fixed.stderr}`);

    // The plugin stopped while the node holds its volume: the doctor says what it could not check.
    ok(await agent.cli(['job', 'stop', 'hostpath-plugin']), 'job stop hostpath-plugin');
    const report = await until(
      'the doctor to see the plugin gone',
      async () => {
        const r = await agent.cli(['volume', 'doctor', '--json']);
        const rep = JSON.parse(r.stdout) as Api.DriftReport;
        return rep.Findings.some((f) => f.Kind === 'plugin-not-checked' && f.NodeID === nodeId) ? { r, rep } : undefined;
      },
      60_000,
    );
    assert.equal(report.r.code, 1);
    const onNode = report.rep.Findings.find((f) => f.Kind === 'plugin-not-checked' && f.NodeID === nodeId)!;
    assert.equal(onNode.Message.startsWith(`plugin hostpath not running on node ${nodeId}: not checked`), true, onNode.Message);
    const words = await agent.cli(['volume', 'doctor']);
    assert.equal(words.code, 1);
    assert.match(words.stdout, /plugin-not-checked/);

    // With no plugin to unpublish it, the stopped writer's claim cannot be released; a forced detach
    // has the node unmount it itself.
    ok(await agent.cli(['job', 'stop', 'checker']), 'job stop checker');
    await until('the allocation to stop', async () => ((await agent.get<Api.Allocation>(`/v1/allocation/${alloc.ID}`)).ClientStatus === 'complete' ? true : undefined), 60_000);
    assert.equal((await claimsOf('checked')).length, 1, 'the claim is held: no plugin to release it');
    const forced = await agent.cli(['volume', 'detach', '--force', 'checked', nodeId], { timeoutMs: 120_000 });
    ok(forced, 'volume detach --force without a plugin');
    assert.deepEqual(await claimsOf('checked'), []);
    assert.deepEqual(
      leftFor(alloc.ID, 'checked').filter((m) => !m.endsWith('/secrets')),
      [],
      'the node unmounted the publication and the staging itself',
    );

    // Back to a running plugin for the agent's stop.
    ok(await agent.cli(['job', 'run', path.join(EXAMPLES, 'hostpath-plugin.hcl')]), 'job run hostpath-plugin');
    await until(
      'the hostpath plugin to be healthy again',
      async () => {
        const p = await agent.get<CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined);
        return p && p.ControllersHealthy === 1 && p.NodesHealthy === 1;
      },
      90_000,
    );
  });
});
