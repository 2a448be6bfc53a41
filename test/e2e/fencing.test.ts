// Fencing across a partition, on the node: a server and a client agent with
// `stop_after_server_disconnect = "3s"`; the hostpath plugin; a
// single-node-writer volume; a writer that traps SIGTERM and keeps appending
// for a moment before it exits (as databases do). The server is SIGKILLed:
// within the window the client stops the writer (SIGTERM, its grace), does
// not restart it, and unmounts the volume; the plugin task (no single-writer
// volume) keeps running. The server comes back: it learns the allocation
// failed, fenced, and the claim is released.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AllocationListStub, CSIVolume } from '../../src/api/index.js';
import { AgentRun, BERTH, freePort, mountsUnder, ok, until } from '../support/agent-run.js';
import { pidsWith } from '../support/procs.js';

const dir = mkdtempSync('/tmp/bfence-');
const MGMT = `fe-mgmt-${process.pid}-0123456789`;
const NODE = `fe-node-${process.pid}-0123456789`;
const MARKER = `fe-writer-${process.pid}`;

let server: AgentRun;
let client: AgentRun;
let serverConfig = '';

async function read<T>(p: string): Promise<T> {
  const res = await fetch(server.addr + p, { headers: { authorization: `Bearer ${MGMT}` } });
  const text = await res.text();
  if (!res.ok) throw new Error(`GET ${p}: ${res.status} ${text}`);
  return JSON.parse(text) as T;
}

function writeJson(name: string, value: unknown): string {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify(value, null, 2));
  return file;
}

const PLUGIN_JOB = (): string =>
  writeJson('plugin.json', {
    job: {
      id: 'hostpath-plugin',
      type: 'system',
      groups: [
        {
          name: 'plugin',
          tasks: [
            {
              name: 'plugin',
              driver: 'raw_exec',
              config: {
                command: '/bin/sh',
                args: ['-c', `exec "${process.execPath}" "${BERTH}" plugin hostpath --endpoint "$CSI_ENDPOINT" --node-id fe-n1 --data-dir "${dir}/hp" --log-level warn`],
              },
              csiPlugin: { id: 'hostpath', type: 'monolith', mountDir: '/csi', healthTimeout: '20s' },
              resources: { cpuMhz: 100, memoryMb: 256 },
            },
          ],
        },
      ],
    },
  });

/** Appends "<alloc> <n>" every 100 ms; on SIGTERM appends "term", keeps writing for 1 s, appends "bye" and exits 0. */
const WRITER = [
  'f="$BERTH_TASK_DIR/data/log"',
  `trap 'echo "$BERTH_ALLOC_ID term" >> "$f"; for i in 1 2 3 4 5 6 7 8 9 10; do echo "$BERTH_ALLOC_ID late $i" >> "$f"; sleep 0.1; done; echo "$BERTH_ALLOC_ID bye" >> "$f"; exit 0' TERM`,
  `n=0; while :; do n=$((n+1)); echo "$BERTH_ALLOC_ID $n" >> "$f"; sleep 0.1; done # ${MARKER}`,
].join('\n');

const WRITER_JOB = (): string =>
  writeJson('writer.json', {
    id: 'writer',
    type: 'service',
    groups: [
      {
        name: 'main',
        restart: { attempts: 3, interval: '1m', delay: '200ms', mode: 'fail' },
        volumes: { data: { type: 'csi', source: 'fenced-vol', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
        tasks: [
          {
            name: 'main',
            driver: 'raw_exec',
            config: { command: '/bin/sh', args: ['-c', WRITER] },
            volumeMounts: [{ volume: 'data', destination: '/data' }],
            resources: { cpuMhz: 50, memoryMb: 32 },
          },
        ],
      },
    ],
  });

before(async () => {
  const port = await freePort();
  serverConfig = path.join(dir, 'server.hcl');
  writeFileSync(
    serverConfig,
    `data_dir  = "${dir}/server"\nbind_addr = "127.0.0.1"\nports {\n  http = ${port}\n}\nserver {\n  heartbeat_ttl = "3s"\n  heartbeat_grace = "1s"\n}\ntokens {\n  management = ["${MGMT}"]\n  node       = ["${NODE}"]\n}\n`,
  );
  server = new AgentRun(['--server', '--config', serverConfig]);
  await server.start();
  server.token = MGMT;
  const clientConfig = path.join(dir, 'client.hcl');
  writeFileSync(
    clientConfig,
    `data_dir = "${dir}/n1"\nports {\n  http = ${await freePort()}\n}\nclient {\n  node_name = "fe-node-1"\n  server_address = "http://127.0.0.1:${port}"\n  token = "${NODE}"\n  stop_after_server_disconnect = "3s"\n  options = {\n    "driver.raw_exec.enable" = true\n  }\n}\ncsi {\n  probe_interval = "1s"\n}\n`,
  );
  client = new AgentRun(['--client', '--config', clientConfig]);
  await client.start();
});

after(async () => {
  await client?.stop('SIGINT').catch(() => undefined);
  await server?.stop('SIGINT').catch(() => undefined);
  for (const pid of [...pidsWith(dir), ...pidsWith(MARKER)]) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  for (const m of mountsUnder(dir).reverse()) spawnSync('umount', ['-l', m]);
  rmSync(dir, { recursive: true, force: true });
});

describe('a client that loses its server stops its single-writer task', { timeout: 180_000 }, () => {
  let writer: AllocationListStub;
  let target = '';

  it('runs the writer on a single-node-writer hostpath volume; the node reports its fencing window', async () => {
    const node = await until('the node ready', async () => (await read<Array<{ ID: string; Status: string }>>('/v1/nodes')).find((n) => n.Status === 'ready'));
    assert.equal((await read<{ BerthStopAfterServerDisconnect?: number }>(`/v1/node/${node.ID}`)).BerthStopAfterServerDisconnect, 3_000 * 1e6, 'the server knows the window');
    ok(await server.cli(['job', 'run', PLUGIN_JOB()]), 'job run plugin');
    await until('the plugin healthy', async () => (await read<{ NodesHealthy: number }>('/v1/plugin/csi/hostpath')).NodesHealthy === 1);
    const vol = path.join(dir, 'vol.hcl');
    writeFileSync(vol, `id = "fenced-vol"\nname = "fenced-vol"\ntype = "csi"\nplugin_id = "hostpath"\ncapacity_min = "1MiB"\ncapability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\n`);
    ok(await server.cli(['volume', 'create', vol]), 'volume create');
    ok(await server.cli(['job', 'run', '--detach', WRITER_JOB()]), 'job run writer');
    writer = await until('the writer running', async () => (await read<AllocationListStub[]>('/v1/job/writer/allocations')).find((a) => a.ClientStatus === 'running'));
    target = await until('the volume mounted for the writer', () => mountsUnder(path.join(dir, 'n1')).find((m) => m.includes(writer.ID) && m.endsWith('/data')));
    await until('the writer writing', () => readFileSync(path.join(target, 'log'), 'utf8').split('\n').length > 5);
  });

  it('the server is SIGKILLed: past the window the writer gets SIGTERM and its grace, is not restarted, and the volume is unmounted', async () => {
    const plugin = pidsWith(`${dir}/hp`);
    assert.ok(plugin.length > 0);
    const killed = await server.stop('SIGKILL');
    assert.equal(killed.signal, 'SIGKILL');
    await until('the writer to be stopped', () => pidsWith(MARKER).length === 0, 30_000);
    // What is left of the allocation is its secrets tmpfs (until garbage collection); the volume's publish and bind are gone.
    const volumeMounts = (): string[] => mountsUnder(path.join(dir, 'n1')).filter((m) => m.includes(writer.ID) && !m.endsWith('/secrets'));
    await until('the volume unmounted on the node', () => volumeMounts().length === 0, 30_000).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}: ${volumeMounts().join(', ')}`);
    });
    assert.deepEqual(pidsWith(MARKER), [], 'not restarted');
    assert.deepEqual(pidsWith(`${dir}/hp`), plugin, 'the plugin (no single-writer volume) keeps running');
    const log = readdirSync(path.join(dir, 'hp'), { recursive: true, encoding: 'utf8' }).find((f) => path.basename(f) === 'log');
    assert.ok(log, 'the writer log is in the volume, on the plugin side');
    const lines = readFileSync(path.join(dir, 'hp', log), 'utf8').trim().split('\n');
    assert.equal(lines.at(-1), `${writer.ID} bye`, 'the writer got SIGTERM and its grace to finish');
    assert.ok(lines.includes(`${writer.ID} late 10`));
  });

  it('the server comes back and learns the allocation failed, fenced, and its claim is released', async () => {
    server = new AgentRun(['--server', '--config', serverConfig]);
    await server.start();
    server.token = MGMT;
    const failed = await until('the fenced allocation reported', async () => {
      const a = (await read<AllocationListStub[]>('/v1/job/writer/allocations')).find((x) => x.ID === writer.ID);
      return a?.ClientStatus === 'failed' ? a : undefined;
    });
    const events = failed.TaskStates?.['main']?.Events ?? [];
    assert.ok(events.some((e) => e.Type === 'Fenced' && /stop_after_server_disconnect/.test(e.DisplayMessage)), JSON.stringify(events.map((e) => e.Type)));
    await until('the claim released', async () => (await read<CSIVolume>('/v1/volume/csi/fenced-vol')).BerthClaims.every((c) => c.AllocationID !== writer.ID));
  });
});
