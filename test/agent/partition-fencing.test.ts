// Two writers on a single-writer volume across a partition (issue 12 finding
// 8): a separate server and two clients; a writer that traps SIGTERM and keeps
// appending for 2 s before it exits (as databases do) on a single-node-writer
// hostpath volume both clients can reach; its client is SIGSTOPped past the
// heartbeat TTL. The server places a replacement on the other client, but
// hands it the write claim only after the frozen node's stop-after-disconnect
// time + kill timeout + a margin; the frozen node's executor stops the writer
// within that time. Every line in the volume's file names its allocation and
// carries a timestamp: the old writer's last line comes before the new
// writer's first one. Once with ControllerPublish, once without.
//
// Needs the node side of fencing (client stop_after_server_disconnect, the
// executor's lease: branch i12a) as well as the server side (this branch).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import type { Allocation, AllocationListStub, CSIPlugin, CSIVolume } from '../../src/api/index.js';
import { mountsUnder, until } from '../support/runtime-cluster.js';
import { BERTH, startAgent, tempDir, type AgentUnderTest, type Result } from './_agent.js';

const MGMT = 'x12-mgmt-token-0123456789';
const NODE = 'x12-node-token-0123456789';

function ok(r: Result, what: string): Result {
  assert.equal(r.code, 0, `${what} failed (${r.code}): ${r.stderr}${r.stdout}`);
  return r;
}

/** Appends "<ns since epoch> <alloc id>" every 100 ms; on SIGTERM goes on for 2 s, then exits. */
const WRITER =
  'cd "$BERTH_TASK_DIR/data" || exit 1; ' +
  'line() { echo "$(date +%s%N) $BERTH_ALLOC_ID" >> log; }; ' +
  "trap 'end=$(( $(date +%s) + 2 )); while [ $(date +%s) -lt $end ]; do line; sleep 0.1; done; exit 0' TERM; " +
  'while :; do line; sleep 0.1; done';

for (const publish of [true, false]) {
  // With ControllerPublish this scenario once failed in about 2 of 5 full-suite runs (the
  // writer's first NodePublishVolume answered FAILED_PRECONDITION "volume is not staged"): the
  // plugin job is run a second time below, so each node briefly has two hostpath instances, the
  // old one serving until the new one is healthy; when that handover fell between NodeStage (old
  // instance) and NodePublish (new instance), the new one did not know what the old one staged.
  // The instances of one node now share that node's records through its node file (issue 23);
  // each node has its own node file (--node-state-dir), as each machine of a real cluster would.
  describe(`a single-writer volume across a partition (${publish ? 'with' : 'without'} ControllerPublish)`, () => {
    let dir = '';
    let server: AgentUnderTest;
    const clients: AgentUnderTest[] = [];
    let stopped: AgentUnderTest | undefined;

    before(async () => {
      dir = await tempDir('bxf-');
      writeFileSync(path.join(dir, 'nodes.tokens'), `${NODE}\n`);
      writeFileSync(
        path.join(dir, 'server.hcl'),
        `data_dir = "server-data"\nports {\n  http = 0\n}\nserver {\n  heartbeat_ttl = "4s"\n}\ntokens {\n  management = ["${MGMT}"]\n  node_file  = "nodes.tokens"\n}\n`,
      );
      server = await startAgent(['--server', '--config', path.join(dir, 'server.hcl')]).ready(false);
      server.token = MGMT;
      // Both clients start at once (each agent's start is a second or more of CPU).
      clients.push(
        ...(await Promise.all(
          ['f1', 'f2'].map(async (name) => {
            const config = path.join(dir, `${name}.json`);
            writeFileSync(
              config,
              JSON.stringify({
                data_dir: path.join(dir, name),
                ports: { http: 0 },
                client: { node_name: name, token: NODE, options: { 'driver.raw_exec.enable': true }, stop_after_server_disconnect: '3s' },
                csi: { probe_interval: '1s' },
              }),
            );
            const c = await startAgent(['--client', '--server-address', server.addr, '--config', config]).ready(false);
            c.token = MGMT;
            return c;
          }),
        )),
      );
    });

    after(async () => {
      if (stopped?.running) stopped.child.kill('SIGCONT');
      // The thawed node stops its old writer and, at the same moment, the plugin allocation the
      // server replaced while the node was down; the writer's volume is unmounted once the
      // replacement plugin registers. The drain waits for that (docs/csi-rules.md, stopping the agent).
      await server?.cli(['job', 'stop', '--purge', 'fenced-writer']).catch(() => undefined);
      for (const c of clients) await c.stop('SIGINT').catch(() => undefined);
      await server?.stop('SIGINT').catch(() => undefined);
      for (const m of mountsUnder(dir)) spawnSync('umount', ['-l', m]);
      rmSync(dir, { recursive: true, force: true });
    });

    it('never lets two writers write: the old one stops on its own before the replacement gets the claim', async () => {
      await until('both clients ready', async () => (await server.get<Api.NodeListStub[]>('/v1/nodes')).filter((n) => n.Status === 'ready').length === 2);
      // Storage both nodes reach: one data dir and one plugin node ID for both instances, but
      // each node's own records (its allocations live under <dir>/f1 or <dir>/f2). The plugin is
      // run again once the volume exists, so that both controllers load it from disk.
      const plugin = path.join(dir, 'plugin.hcl');
      const nodeOf = 'case "$BERTH_ALLOC_DIR" in */f1/*) n=f1 ;; */f2/*) n=f2 ;; *) echo "unknown node: $BERTH_ALLOC_DIR" >&2; exit 1 ;; esac; ';
      const args = ['plugin', 'hostpath', '--endpoint', '"$CSI_ENDPOINT"', '--node-id', 'shared', '--data-dir', path.join(dir, 'hp'), '--node-state-dir', `"${dir}/hp-node-$n"`, ...(publish ? [] : ['--no-publish-unpublish'])];
      const pluginJob = (generation: number): string =>
        `job "hostpath-plugin" {\n  type = "system"\n  group "plugin" {\n    task "plugin" {\n      driver = "raw_exec"\n      env {\n        GENERATION = "${generation}"\n      }\n      config {\n        command = "/bin/sh"\n        args    = ["-c", ${JSON.stringify(`${nodeOf}exec ${process.execPath} ${BERTH} ${args.join(' ')}`)}]\n      }\n      csi_plugin {\n        id        = "hostpath"\n        type      = "monolith"\n        mount_dir = "/csi"\n      }\n    }\n  }\n}\n`;
      const healthy = async (generation: number): Promise<void> => {
        await until(`the plugin (generation ${generation}) healthy on both nodes`, async () => {
          const p = await server.get<CSIPlugin>('/v1/plugin/csi/hostpath').catch(() => undefined);
          const allocs = await server.get<AllocationListStub[]>('/v1/job/hostpath-plugin/allocations');
          const { Version: version } = await server.get<{ Version: number }>('/v1/job/hostpath-plugin');
          const current = allocs.filter((a) => a.DesiredStatus === 'run' && a.ClientStatus === 'running' && a.JobVersion === version);
          // The instances in service must be this generation's (an older one may still be registered and healthy for a moment).
          const ids = new Set(current.map((a) => a.ID));
          const served = p ? [...Object.values(p.Nodes ?? {}), ...Object.values(p.Controllers ?? {})] : [];
          return p !== undefined && p.NodesHealthy === 2 && p.ControllersHealthy === 2 && current.length === 2 && served.every((i) => i.Healthy && ids.has(i.AllocID));
        }, 90_000);
      };
      writeFileSync(plugin, pluginJob(1));
      ok(await server.cli(['job', 'run', plugin]), 'job run plugin');
      await healthy(1);
      const volume = path.join(dir, 'volume.hcl');
      writeFileSync(volume, `id = "fenced"\nname = "fenced"\ntype = "csi"\nplugin_id = "hostpath"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`);
      ok(await server.cli(['volume', 'create', volume]), 'volume create');
      writeFileSync(plugin, pluginJob(2));
      ok(await server.cli(['job', 'run', plugin]), 'job run plugin again');
      await healthy(2);
      const job = path.join(dir, 'writer.hcl');
      writeFileSync(
        job,
        `job "fenced-writer" {\n  group "w" {\n    volume "data" {\n      type = "csi"\n      source = "fenced"\n      access_mode = "single-node-writer"\n      attachment_mode = "file-system"\n    }\n    task "write" {\n      driver = "raw_exec"\n      config {\n        command = "/bin/sh"\n        args = ["-c", ${JSON.stringify(WRITER)}]\n      }\n      volume_mount {\n        volume = "data"\n        destination = "/data"\n      }\n    }\n  }\n}\n`,
      );
      ok(await server.cli(['job', 'run', job]), 'job run writer');
      const first = await until('the writer running', async () =>
        (await server.get<AllocationListStub[]>('/v1/job/fenced-writer/allocations')).find((a) => a.ClientStatus === 'running'),
      );
      const log = path.join(dir, 'hp');
      const nodes = await server.get<Api.NodeListStub[]>('/v1/nodes');
      const frozenName = nodes.find((n) => n.ID === first.NodeID)!.Name;
      stopped = clients[frozenName === 'f1' ? 0 : 1]!;

      // The node goes silent: its agent is frozen (its executors and the writer are not).
      stopped.child.kill('SIGSTOP');
      await until('the node marked down', async () => (await server.get<Api.NodeListStub[]>('/v1/nodes')).find((n) => n.ID === first.NodeID)?.Status === 'down', 30_000);
      const claims = await server.get<CSIVolume>('/v1/volume/csi/fenced');
      const held = claims.BerthClaims.find((c) => c.AllocationID === first.ID);
      assert.ok(held?.FencedUntil, `the old writer's claim is fenced: ${JSON.stringify(claims.BerthClaims)}`);
      const status = ok(await server.cli(['volume', 'status', 'fenced']), 'volume status');
      assert.match(status.stdout, /held until .*stop after disconnect 3 s/);
      const second = await until(
        'the replacement writing',
        async () => (await server.get<AllocationListStub[]>('/v1/job/fenced-writer/allocations')).find((a) => a.ID !== first.ID && a.ClientStatus === 'running'),
        60_000,
      ).catch(async (err: unknown) => {
        const seen = await Promise.all(['/v1/job/fenced-writer/allocations', '/v1/volume/csi/fenced', '/v1/job/fenced-writer/evaluations', '/v1/nodes'].map((p) => server.get(p).catch((e: unknown) => String(e))));
        throw new Error(`${String(err)}\n${JSON.stringify(seen, null, 1).slice(0, 12_000)}`);
      });
      // Let the replacement write, then the old node comes back.
      await until('lines from the replacement', () => linesOf(log).some((l) => l.alloc === second.ID) || undefined, 30_000);
      stopped.child.kill('SIGCONT');
      await until('the old allocation reported finished', async () => {
        const a = await server.get<Allocation>(`/v1/allocation/${first.ID}`);
        return a.ClientStatus !== 'running' && a.ClientStatus !== 'pending' && a.ClientStatus !== 'lost';
      }, 60_000).catch(() => undefined);

      const lines = linesOf(log);
      const lastOld = Math.max(...lines.filter((l) => l.alloc === first.ID).map((l) => l.at));
      const firstNew = Math.min(...lines.filter((l) => l.alloc === second.ID).map((l) => l.at));
      assert.ok(Number.isFinite(lastOld) && Number.isFinite(firstNew), 'both writers wrote');
      const overlapMs = Math.max(0, (lastOld - firstNew) / 1e6);
      console.log(`overlap of two writers (${publish ? 'with' : 'without'} ControllerPublish): ${overlapMs} ms`);
      assert.equal(overlapMs, 0, 'the old writer wrote after the new one started');
    });
  });
}

/** Every "<ns> <alloc>" line of the writers' log files under `root` (the hostpath volumes' directories). */
function linesOf(root: string): Array<{ at: number; alloc: string }> {
  if (!existsSync(root)) return [];
  const found = spawnSync('find', [root, '-name', 'log', '-type', 'f'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  return found.flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [at, alloc] = l.split(' ');
        return { at: Number(at), alloc: alloc ?? '' };
      }),
  );
}
