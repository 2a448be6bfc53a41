// A vanished volume: job stop -> claim released (section `vanished-volume` of
// `npm run bench`; goal < 2 s). A dev agent in its own process with the
// examples' hostpath plugin job; BENCH_VANISHED_RUNS (5) times: a volume, a
// job writing into it, the volume's directory removed on the node (rm -rf),
// then `DELETE /v1/job/:id` timed until the volume has no claim left (polled
// every 10 ms), and no mount of it is left under the agent's data dir.

import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentRun, mountsUnder, ok, until } from '../test/support/agent-run.js';
import { round } from './_stats.js';
import type { AllocationListStub, CSIPlugin, CSIVolume, NodeListStub, VolumeClaimListStub } from '../src/api/index.js';

const RUNS = Number(process.env['BENCH_VANISHED_RUNS'] ?? 5);
const EXAMPLES = path.join(import.meta.dirname, '..', 'examples');

const volumeHcl = (id: string): string =>
  `id = "${id}"\nname = "${id}"\ntype = "csi"\nplugin_id = "hostpath"\ncapacity_min = "1MiB"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`;

const jobHcl = (id: string, volume: string): string =>
  `job "${id}" {\n  group "g" {\n    volume "data" {\n      type = "csi"\n      source = "${volume}"\n      access_mode = "single-node-writer"\n      attachment_mode = "file-system"\n    }\n    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sh"\n        args = ["-c", "echo x > \\"$BERTH_TASK_DIR/data/file\\"; while :; do sleep 1; done"]\n      }\n      volume_mount {\n        volume = "data"\n        destination = "/data"\n      }\n    }\n  }\n}\n`;

export default async function vanishedVolumeBench(dir: string): Promise<Record<string, unknown>> {
  const agent = await new AgentRun(['--dev', '--data-dir', path.join(dir, 'a'), '--port', '0']).start({ needToken: true });
  const call = async <T>(method: string, p: string): Promise<T> => {
    const res = await fetch(agent.addr + p, { method, headers: { authorization: `Bearer ${agent.token}` } });
    if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  let nodeId = '';
  try {
    nodeId = (await call<NodeListStub[]>('GET', '/v1/nodes'))[0]!.ID;
    ok(await agent.cli(['job', 'run', path.join(EXAMPLES, 'hostpath-plugin.hcl')]), 'job run hostpath-plugin');
    await until('the hostpath plugin healthy', async () => {
      const p = await call<CSIPlugin>('GET', '/v1/plugin/csi/hostpath').catch(() => undefined);
      return p?.ControllersHealthy === 1 && p.NodesHealthy === 1;
    }, 90_000);
    const data = path.join('/var/lib/berth/hostpath', nodeId);
    const samplesMs: number[] = [];
    let mountsLeft = 0;
    for (let i = 0; i < RUNS; i++) {
      const vol = `gone${i}`;
      const job = `vanisher${i}`;
      writeFileSync(path.join(dir, `${vol}.hcl`), volumeHcl(vol));
      ok(await agent.cli(['volume', 'create', path.join(dir, `${vol}.hcl`)]), `volume create ${vol}`);
      writeFileSync(path.join(dir, `${job}.hcl`), jobHcl(job, vol));
      ok(await agent.cli(['job', 'run', path.join(dir, `${job}.hcl`)]), `job run ${job}`);
      await until(`${job} running`, async () => (await call<AllocationListStub[]>('GET', `/v1/job/${job}/allocations`))[0]?.ClientStatus === 'running', 90_000);
      const ext = (await call<CSIVolume>('GET', `/v1/volume/csi/${vol}`)).ExternalID;
      const state = JSON.parse(readFileSync(path.join(data, 'controller-state.json'), 'utf8')) as { volumes: { id: string; key: string }[] };
      rmSync(path.join(data, 'volumes', state.volumes.find((v) => v.id === ext)!.key), { recursive: true, force: true });

      const started = performance.now();
      await call('DELETE', `/v1/job/${job}`);
      for (;;) {
        const claims = await call<VolumeClaimListStub[]>('GET', `/v1/volumes/csi/claims?volume=${vol}`);
        if (claims.length === 0) break;
        if (performance.now() - started > 60_000) throw new Error(`the claim of ${vol} was not released within 60 s: ${JSON.stringify(claims)}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      samplesMs.push(performance.now() - started);
      mountsLeft += mountsUnder(dir).filter((m) => (m.includes('/staging/') || m.includes('/per-alloc/')) && m.includes(`/${vol}`)).length;
    }
    const sorted = [...samplesMs].sort((a, b) => a - b);
    const result = {
      runs: RUNS,
      p50Ms: round(sorted[Math.floor(sorted.length / 2)] ?? 0),
      maxMs: round(sorted.at(-1) ?? 0),
      mountsLeft,
      loadavg: readFileSync('/proc/loadavg', 'utf8').trim(),
    };
    console.log(
      `a vanished volume: job stop -> claim released: p50 ${result.p50Ms} ms, max ${result.maxMs} ms over ${RUNS} runs (goal < 2 s); mounts left ${mountsLeft}; load ${result.loadavg}`,
    );
    return result;
  } finally {
    await agent.stop('SIGINT').catch(() => undefined);
    for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
    if (nodeId) rmSync(path.join('/var/lib/berth/hostpath', nodeId), { recursive: true, force: true });
  }
}
