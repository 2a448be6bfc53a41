// Draining a loaded node (section `drain` of `npm run bench`): a server and
// two client agents in their own processes, the hostpath plugin on both over
// one shared data dir (with ControllerPublish). BENCH_DRAIN_VOLUMES (10)
// single-node-writer volumes, each with a writer job appending a timestamped
// line every 100 ms, and as many jobs without volumes: BENCH_DRAIN_VOLUMES*2
// (20) allocations, all placed on the first node (the second is ineligible
// meanwhile). Then `POST /v1/node/:id/drain` (deadline 10 min) on the first
// node, timed until every job runs again on the second node and the drain is
// complete. Overlap: for each volume, how long the old writer still wrote
// after the new one's first line (0 when single-writer holds).

import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentRun, mountsUnder, ok, until } from '../test/support/agent-run.js';
import { sharedHostpathPluginHcl, singleWriterVolumeHcl, volumeWriterScript, writerLines } from '../test/support/shared-hostpath.js';
import { round } from './_stats.js';
import type { AllocationListStub } from '../src/api/index.js';

const VOLUMES = Number(process.env['BENCH_DRAIN_VOLUMES'] ?? 10);
const MGMT = `bd-mgmt-${process.pid}-0123456789`;
const NODE = `bd-node-${process.pid}-0123456789`;

type Row = AllocationListStub;

function jobHcl(id: string, volume: string | undefined): string {
  const vol = volume
    ? `    volume "data" {\n      type = "csi"\n      source = "${volume}"\n      access_mode = "single-node-writer"\n      attachment_mode = "file-system"\n    }\n`
    : '';
  const mount = volume ? `      volume_mount {\n        volume = "data"\n        destination = "/data"\n      }\n` : '';
  const script = volume ? volumeWriterScript(0) : 'while :; do sleep 1; done';
  return `job "${id}" {\n  group "g" {\n${vol}    task "t" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sh"\n        args = ["-c", ${JSON.stringify(script)}]\n      }\n${mount}      resources {\n        cpu = 20\n        memory = 16\n      }\n    }\n  }\n}\n`;
}

export default async function drainBench(dir: string): Promise<Record<string, unknown>> {
  writeFileSync(path.join(dir, 'nodes.tokens'), `${NODE}\n`);
  writeFileSync(path.join(dir, 'server.hcl'), `data_dir = "${dir}/server"\nports {\n  http = 0\n}\ntokens {\n  management = ["${MGMT}"]\n  node_file = "${dir}/nodes.tokens"\n}\n`);
  const server = await new AgentRun(['--server', '--config', path.join(dir, 'server.hcl')]).start();
  server.token = MGMT;
  const clients: AgentRun[] = [];
  const get = async <T>(p: string): Promise<T> => {
    const res = await fetch(server.addr + p, { headers: { authorization: `Bearer ${MGMT}` } });
    if (!res.ok) throw new Error(`GET ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const put = async (p: string, body: unknown): Promise<void> => {
    const res = await fetch(server.addr + p, { method: 'PUT', headers: { authorization: `Bearer ${MGMT}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (!res.ok) throw new Error(`PUT ${p}: ${res.status} ${await res.text()}`);
  };
  try {
    for (const name of ['b1', 'b2']) {
      mkdirSync(path.join(dir, name));
      const config = path.join(dir, `${name}.json`);
      writeFileSync(config, JSON.stringify({ data_dir: path.join(dir, name), ports: { http: 0 }, client: { node_name: name, token: NODE, options: { 'driver.raw_exec.enable': true } }, csi: { probe_interval: '1s' } }));
      const c = await new AgentRun(['--client', '--server-address', server.addr, '--config', config]).start();
      c.token = MGMT;
      clients.push(c);
    }
    await until('both clients ready', async () => (await get<Array<{ Status: string }>>('/v1/nodes')).filter((n) => n.Status === 'ready').length === 2);
    const nodes = await get<Array<{ ID: string; Name: string }>>('/v1/nodes');
    const drained = nodes.find((n) => n.Name === 'b1')!;
    const target = nodes.find((n) => n.Name === 'b2')!;

    const plugin = path.join(dir, 'plugin.hcl');
    const healthy = async (): Promise<void> => {
      await until('the plugin healthy on both nodes', async () => {
        const p = await get<{ NodesHealthy: number; ControllersHealthy: number }>('/v1/plugin/csi/hostpath').catch(() => undefined);
        const { Version: version } = await get<{ Version: number }>('/v1/job/hostpath-plugin');
        const allocs = await get<Row[]>('/v1/job/hostpath-plugin/allocations');
        const current = allocs.filter((a) => a.ClientStatus === 'running' && a.JobVersion === version).length;
        const old = allocs.filter((a) => a.JobVersion !== version && (a.ClientStatus === 'running' || a.ClientStatus === 'pending')).length;
        return p?.NodesHealthy === 2 && p.ControllersHealthy === 2 && current === 2 && old === 0;
      }, 120_000);
    };
    writeFileSync(plugin, sharedHostpathPluginHcl(dir, ['b1', 'b2'], 1));
    ok(await server.cli(['job', 'run', plugin]), 'job run plugin');
    await healthy();
    for (let i = 0; i < VOLUMES; i++) {
      const f = path.join(dir, `v${i}.hcl`);
      writeFileSync(f, singleWriterVolumeHcl(`vol${i}`));
      ok(await server.cli(['volume', 'create', f]), `volume create vol${i}`);
    }
    // No plugin restart here: the instances share the data dir's state (each call reads what the other wrote).

    // Everything lands on b1: b2 takes nothing meanwhile.
    await put(`/v1/node/${target.ID}/eligibility`, { Eligibility: 'ineligible' });
    const jobs: string[] = [];
    for (let i = 0; i < VOLUMES; i++) {
      for (const [id, vol] of [[`w${i}`, `vol${i}`], [`s${i}`, undefined]] as const) {
        const f = path.join(dir, `${id}.hcl`);
        writeFileSync(f, jobHcl(id, vol));
        ok(await server.cli(['job', 'run', '--detach', f]), `job run ${id}`);
        jobs.push(id);
      }
    }
    const running = async (): Promise<Row[]> => (await get<Row[]>('/v1/allocations')).filter((a) => jobs.includes(a.JobID) && a.DesiredStatus === 'run' && a.ClientStatus === 'running');
    await until('every job running on b1', async () => (await running()).filter((a) => a.NodeID === drained.ID).length === jobs.length, 180_000);
    await until('every writer writing', () => new Set(writerLines(path.join(dir, 'hp')).map((l) => l.alloc)).size >= VOLUMES || undefined, 60_000);
    await put(`/v1/node/${target.ID}/eligibility`, { Eligibility: 'eligible' });

    const started = performance.now();
    await put(`/v1/node/${drained.ID}/drain`, { DrainSpec: { Deadline: 600e9, IgnoreSystemJobs: false } });
    let replacedMs = 0;
    await until('every job running again on b2', async () => {
      const moved = (await running()).filter((a) => a.NodeID === target.ID).length === jobs.length;
      if (moved && !replacedMs) replacedMs = performance.now() - started;
      return moved;
    }, 300_000);
    await until('the drain complete', async () => (await get<{ DrainStrategy: unknown }>(`/v1/node/${drained.ID}`)).DrainStrategy === null, 300_000);
    const completeMs = performance.now() - started;

    const byFile = new Map<string, Array<{ at: number; alloc: string }>>();
    for (const l of writerLines(path.join(dir, 'hp'))) byFile.set(l.file, [...(byFile.get(l.file) ?? []), l]);
    const allocs = await get<Row[]>('/v1/allocations');
    const onNode = new Map(allocs.map((a) => [a.ID, a.NodeID]));
    let overlapMs = 0;
    for (const lines of byFile.values()) {
      const lastOld = Math.max(...lines.filter((l) => onNode.get(l.alloc) === drained.ID).map((l) => l.at));
      const firstNew = Math.min(...lines.filter((l) => onNode.get(l.alloc) === target.ID).map((l) => l.at));
      if (Number.isFinite(lastOld) && Number.isFinite(firstNew)) overlapMs = Math.max(overlapMs, (lastOld - firstNew) / 1e6);
    }
    const result = {
      allocations: jobs.length,
      volumes: VOLUMES,
      replacedMs: round(replacedMs),
      drainCompleteMs: round(completeMs),
      overlapMs: round(Math.max(0, overlapMs)),
    };
    console.log(`drain of ${jobs.length} allocations with ${VOLUMES} single-writer volumes: all running elsewhere after ${result.replacedMs} ms, drain complete after ${result.drainCompleteMs} ms (goal < 10 s), overlap ${result.overlapMs} ms (goal 0)`);
    return result;
  } finally {
    for (const id of ['hostpath-plugin']) await server.cli(['job', 'stop', id]).catch(() => undefined);
    for (const c of clients) await c.stop('SIGINT').catch(() => undefined);
    await server.stop('SIGINT').catch(() => undefined);
    for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
  }
}
