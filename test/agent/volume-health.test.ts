// Volume health and drift on a real dev agent, as an operator sees them: the
// examples' hostpath plugin job, a volume created through it and a service
// that writes 6 MiB into it. `volume status` shows the real usage of the
// volume's directory (not of the disk), /v1/metrics has it; a mount made behind
// Berth's back under the plugin's directories is found by `volume doctor`,
// repaired by `--fix`, and the books are equal again; the volume's directory
// removed under a running task makes the plugin report the volume abnormal,
// which reaches `volume status`, the event stream, /v1/metrics and the task's
// own events.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import type { Allocation, AllocationListStub, CSIPlugin, CSIVolume, DriftReport, VolumeConditionEvent, VolumeUsageHistory } from '../../src/api/index.js';
import { mountsUnder, until } from '../support/runtime-cluster.js';
import { EXAMPLES, startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

const MiB = 1024 * 1024;

const WRITER_HCL = `
job "filler" {
  group "f" {
    volume "data" {
      type            = "csi"
      source          = "shared-data"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    task "fill" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        # raw_exec has no chroot: the volume is bound at <task dir>/<destination>.
        args    = ["-c", "head -c 6291456 /dev/urandom > \\"$BERTH_TASK_DIR/data/blob\\" && sync && echo filled && while true; do sleep 1; done"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
    }
  }
}
`;


function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

describe('volume health and drift on a dev agent', () => {
  let dir = '';
  let agent: AgentUnderTest;
  let nodeId = '';
  let allocId = '';
  const planted: string[] = [];

  before(async () => {
    dir = await tempDir('bvh-');
    const config = path.join(dir, 'agent.hcl');
    // Stats every second so the test waits on a report, not on the 60 s default; drift loop left to the doctor command.
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
    ok(await agent.cli(['volume', 'create', path.join(EXAMPLES, 'volume.hcl')]), 'volume create');
    const file = path.join(dir, 'filler.hcl');
    writeFileSync(file, WRITER_HCL);
    ok(await agent.cli(['job', 'run', file]), 'job run filler');
    const alloc = await until(
      'the filler to have written its 6 MiB',
      async () => {
        const [a] = await agent.get<AllocationListStub[]>('/v1/job/filler/allocations');
        if (!a || a.ClientStatus !== 'running') return undefined;
        const logs = await agent.cli(['alloc', 'logs', a.ID.slice(0, 8)]);
        return /filled/.test(logs.stdout) ? a : undefined;
      },
      90_000,
    );
    allocId = alloc.ID;
  });

  after(async () => {
    for (const m of planted) spawnSync('umount', ['-l', m]);
    // The last test removed the volume's directory under its live mounts: the plugin now
    // unpublishes such a target as success (docs/csi-rules.md, a release always ends), so the
    // agent's drain unmounts it like any other.
    await agent?.stop('SIGINT').catch(() => undefined);
    for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(dir, { recursive: true, force: true });
    if (nodeId) rmSync(path.join('/var/lib/berth/hostpath', nodeId), { recursive: true, force: true });
  });

  it('volume status shows the real usage of the volume after 6 MiB were written into it, and /v1/metrics has it', async () => {
    const v = await until(
      'a usage report of at least 6 MiB',
      async () => {
        const read = await agent.get<CSIVolume>('/v1/volume/csi/shared-data');
        return (read.BerthUsage[0]?.Bytes?.Used ?? 0) >= 6 * MiB ? read : undefined;
      },
      60_000,
    );
    const usage = v.BerthUsage[0]!;
    assert.equal(usage.NodeID, nodeId);
    // The volume's own directory, not the disk under it: what was written plus a few blocks, against the size it was given.
    assert.ok(usage.Bytes!.Used < 7 * MiB, `used ${usage.Bytes!.Used} bytes`);
    assert.equal(usage.Bytes!.Total, v.Capacity, 'the total is the size the volume was created with');
    assert.ok(usage.Inodes && usage.Inodes.Used >= 2, 'the directory and the file count as inodes');
    assert.deepEqual(v.BerthCondition && { abnormal: v.BerthCondition.Abnormal }, { abnormal: false });

    const status = ok(await agent.cli(['volume', 'status', 'shared-data']), 'volume status').stdout;
    assert.match(status, new RegExp(`Usage\\s+node ${nodeId.slice(0, 8)}: 6\\.\\d MiB \\(\\d+ bytes\\) used of 10\\.0 MiB \\(10485760 bytes\\) \\(6\\d\\.\\d %\\)`));
    assert.match(status, /Condition\s+healthy \(volume directory present\)/);

    const history = await agent.get<VolumeUsageHistory>('/v1/volume/csi/shared-data/usage');
    assert.ok(history.Samples.length >= 1 && history.Samples.length <= 60);
    assert.match(ok(await agent.cli(['volume', 'usage', 'shared-data']), 'volume usage').stdout, /History\n/);

    const metrics = await (await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${agent.token}` } })).text();
    const used = Number(/^berth_volume_used_bytes\{namespace="default",volume="shared-data",plugin="hostpath"\} (\d+)$/m.exec(metrics)?.[1]);
    assert.ok(used >= 6 * MiB, `berth_volume_used_bytes: ${used}`);
    assert.match(metrics, /^berth_volume_capacity_bytes\{namespace="default",volume="shared-data",plugin="hostpath"\} 10485760$/m);
    assert.match(metrics, /^berth_volume_abnormal\{namespace="default",volume="shared-data",plugin="hostpath"\} 0$/m);
  });

  it('volume doctor finds a mount made behind its back, --fix unmounts it, and the books are equal again', async () => {
    const clean = JSON.parse(ok(await agent.cli(['volume', 'doctor', '--json']), 'volume doctor').stdout) as DriftReport;
    assert.deepEqual(clean.Findings, [], `before planting: ${JSON.stringify(clean.Findings)}`);
    assert.deepEqual(clean.Errors, []);

    // The plugin's mount root on the host: where the filler's publication lives.
    const publication = mountsUnder(dir).find((m) => m.includes('/per-alloc/'));
    assert.ok(publication, `no publication under ${dir}: ${mountsUnder(dir).join(', ')}`);
    const root = publication.slice(0, publication.indexOf('/per-alloc/'));
    const stray = path.join(root, 'per-alloc', 'no-such-alloc', 'ghost', 'rw-file-system-single-node-writer');
    const source = path.join(dir, 'ghost-source');
    mkdirSync(stray, { recursive: true });
    mkdirSync(source, { recursive: true });
    assert.equal(spawnSync('mount', ['--bind', source, stray]).status, 0);
    planted.push(stray);

    const foundRun = await agent.cli(['volume', 'doctor', '--json']);
    assert.equal(foundRun.code, 1, `a difference found: exit 1\n${foundRun.stderr}${foundRun.stdout}`);
    const found = JSON.parse(foundRun.stdout) as DriftReport;
    assert.deepEqual(
      found.Findings.map((f) => [f.Kind, f.NodeID, f.Path, f.Fixable]),
      [['mount-without-record', nodeId, stray, true]],
    );
    const wordsRun = await agent.cli(['volume', 'doctor']);
    assert.equal(wordsRun.code, 1);
    const words = wordsRun.stdout;
    assert.match(words, /1 difference:/);
    assert.match(words, new RegExp(`repair: berth volume doctor --fix  \\(unmounts it on the node\\), or umount ${stray}`));

    const fixed = JSON.parse(ok(await agent.cli(['volume', 'doctor', '--fix', '--json']), 'volume doctor --fix').stdout) as DriftReport;
    assert.equal(fixed.Fixed.length, 1);
    assert.deepEqual(fixed.FixFailed, []);
    assert.ok(!mountsUnder(dir).includes(stray), 'the stray mount is gone from the kernel');
    assert.ok(mountsUnder(dir).includes(publication), 'the live publication is untouched');
    const after = ok(await agent.cli(['volume', 'doctor']), 'volume doctor').stdout;
    assert.match(after, /No differences: Berth's books, the plugins and the nodes agree/);
  });

  it("a volume whose directory vanished is reported abnormal: volume status, the event stream, /v1/metrics and the task's events", async () => {
    const from = Number((await fetch(`${agent.addr}/v1/volume/csi/shared-data`, { headers: { authorization: `Bearer ${agent.token}` } })).headers.get('x-nomad-index'));
    const v = await agent.get<CSIVolume>('/v1/volume/csi/shared-data');
    const volumeDir = path.join('/var/lib/berth/hostpath', nodeId, 'volumes');
    // The plugin keeps each volume in a directory under its data dir; remove the volume's behind everyone's back.
    const found = spawnSync('find', [volumeDir, '-name', 'blob', '-type', 'f']).stdout.toString().trim().split('\n')[0];
    assert.ok(found, `the written file under ${volumeDir} (external ID ${v.ExternalID})`);
    rmSync(path.dirname(found), { recursive: true, force: true });

    const read = await until(
      'the abnormal condition',
      async () => {
        const r = await agent.get<CSIVolume>('/v1/volume/csi/shared-data');
        return r.BerthCondition?.Abnormal ? r : undefined;
      },
      60_000,
    );
    assert.match(read.BerthCondition!.Message, /has vanished from the node/);
    const status = ok(await agent.cli(['volume', 'status', 'shared-data']), 'volume status').stdout;
    assert.match(status, /Condition\s+abnormal: the volume's directory \S+ has vanished from the node \(node /);

    const events = await agent.cli(['event', 'stream', '--topic', 'volume-condition', '--index', String(from), '--until-now', '--json']);
    ok(events, 'event stream');
    type ConditionEvent = { Topic: string; Payload: { VolumeCondition: VolumeConditionEvent } };
    const lines = events.stdout.split('\n').filter((l) => l.startsWith('{')).flatMap((l) => (JSON.parse(l) as { Events: ConditionEvent[] }).Events);
    assert.ok(lines.some((e) => e.Topic === 'volume-condition' && e.Payload.VolumeCondition.VolumeID === 'shared-data' && e.Payload.VolumeCondition.Abnormal), events.stdout);

    const metrics = await (await fetch(`${agent.addr}/v1/metrics?format=prometheus`, { headers: { authorization: `Bearer ${agent.token}` } })).text();
    assert.match(metrics, /^berth_volume_abnormal\{namespace="default",volume="shared-data",plugin="hostpath"\} 1$/m);

    const alloc = await until(
      'the task event',
      async () => {
        const a = await agent.get<Allocation>(`/v1/allocation/${allocId}`);
        return a.TaskStates?.['fill']?.Events?.some((e) => e.Type === 'Volume Abnormal') ? a : undefined;
      },
      30_000,
    );
    const event = alloc.TaskStates!['fill']!.Events!.find((e) => e.Type === 'Volume Abnormal')!;
    assert.match(event.DisplayMessage, /^Volume shared-data reported abnormal by plugin hostpath: the volume's directory .* has vanished/);
  });
});
