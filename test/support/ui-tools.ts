// What the allocation tools' UI test (logs, files, exec) looks at: a real dev
// agent (its own process, a read-only token beside its management one)
// running a raw_exec job of two tasks: `talk` prints a numbered line on stdout every
// ~200 ms (and every fifth one on stderr too) and first writes files into
// its local directory: a note, a binary file and a large one; `side` prints
// `side N` every second; `burst` prints 100,000 lines at once when told to
// (a file local/go in its directory, which the test writes: burstNow()).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentRun, freePort, killProcessesUnder, mountsUnder, ok } from './agent-run.js';
import type { Cluster } from './process-cluster.js';

/** The text the task writes into local/note.txt before it starts talking. */
export const NOTE = 'a note the task wrote for the file browser';

/** The lines task `burst` prints at once (`seq 1 N`, about 570 KiB) once its local/go file exists. */
export const BURST_LINES = 100_000;

/** A service job whose task `talk` writes local/note.txt, blob.bin (2 KiB of zeros) and big.txt (`seq 1 30000`), then prints `out N` every ~200 ms (and `err N` on stderr every fifth), beside a task `side` printing `side N` each second and a task `burst` (BURST_LINES). */
export function talkingJob(id: string): string {
  const script = [
    `printf '%s\\n' '${NOTE}' > \\"$NOMAD_TASK_DIR/note.txt\\"`,
    'head -c 2048 /dev/zero > \\"$NOMAD_TASK_DIR/blob.bin\\"',
    'seq 1 30000 > \\"$NOMAD_TASK_DIR/big.txt\\"',
    'i=0',
    'while true; do i=$((i+1)); echo out $i; if [ $((i % 5)) -eq 0 ]; then echo err $i >&2; fi; sleep 0.2; done',
  ].join('; ');
  return `job "${id}" {
  type = "service"
  group "app" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "talk" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "${script}"]
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
    task "burst" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "until [ -e \\"$NOMAD_TASK_DIR/go\\" ]; do sleep 0.2; done; seq 1 ${BURST_LINES}; exec sleep 600"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
    task "side" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "i=0; while true; do i=$((i+1)); echo side $i; sleep 1; done"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
`;
}

/** Starts `cluster` as one server (no etcd) and one client agent, runs talkingJob('talker') through the server, and answers its running allocation's ID. */
export async function startTalkerCluster(cluster: Cluster): Promise<string> {
  await cluster.start({ etcdMembers: 0, clients: 1 });
  const server = cluster.servers[0] as Cluster['servers'][number];
  const file = path.join(cluster.dir, 'talker.hcl');
  writeFileSync(file, talkingJob('talker'));
  ok(await server.run.cli(['job', 'run', file], { timeoutMs: 120_000 }), 'job run talker');
  const allocs = await cluster.read<Array<{ ID: string; ClientStatus: string }>>('/v1/job/talker/allocations');
  const allocId = allocs.find((a) => a.ClientStatus === 'running')?.ID ?? '';
  assert.ok(allocId, JSON.stringify(allocs));
  return allocId;
}

export class ToolsCluster {
  readonly dir: string;
  readonly readOnlyToken: string;
  agent!: AgentRun;
  readonly #jobs = new Set<string>();

  constructor(dir: string) {
    this.dir = dir;
    this.readOnlyToken = `ui-tools-reader-${process.pid}-token`;
  }

  #file(name: string, text: string): string {
    const p = path.join(this.dir, name);
    writeFileSync(p, text);
    return p;
  }

  async start(): Promise<this> {
    const cfg = this.#file('agent.hcl', `tokens {\n  read_only = ["${this.readOnlyToken}"]\n}\n`);
    this.agent = new AgentRun(['--dev', '--data-dir', path.join(this.dir, 'agent'), '--port', String(await freePort()), '--config', cfg]);
    await this.agent.start();
    return this;
  }

  /** Fetches an API path with the management token (or `token`). */
  fetch(p: string, token = this.agent.token): Promise<Response> {
    return fetch(`${this.agent.addr}${p}`, { headers: { Authorization: `Bearer ${token}` } });
  }

  /** GET an API path as JSON; fails unless 200. */
  async get<T>(p: string, token = this.agent.token): Promise<T> {
    const res = await this.fetch(p, token);
    const body = await res.text();
    assert.equal(res.status, 200, `GET ${p}: ${res.status} ${body}`);
    return JSON.parse(body) as T;
  }

  /** Runs talkingJob(id) with the CLI (which waits for it); resolves with its running allocation's ID. */
  async runTalkingJob(id: string): Promise<string> {
    this.#jobs.add(id);
    ok(await this.agent.cli(['job', 'run', this.#file(`${id}.hcl`, talkingJob(id))], { timeoutMs: 120_000 }), `berth job run ${id}`);
    const allocs = await this.get<Array<{ ID: string; ClientStatus: string }>>(`/v1/job/${id}/allocations`);
    const running = allocs.find((a) => a.ClientStatus === 'running');
    assert.ok(running, `job ${id} has a running allocation: ${JSON.stringify(allocs)}`);
    return running.ID;
  }

  /** Tells task `burst` of the allocation to print its lines: writes its local/go file. */
  burstNow(allocId: string): void {
    const found = spawnSync('find', [this.dir, '-maxdepth', '8', '-type', 'd', '-path', `*/${allocId}/burst/local`], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
    assert.ok(found, `the local directory of task burst of ${allocId} under ${this.dir}`);
    writeFileSync(path.join(found, 'go'), '');
  }

  /** Stops the jobs and the agent (SIGINT) and removes what is left. Never throws. */
  async stop(): Promise<void> {
    if (this.agent?.running) {
      for (const id of this.#jobs) await this.agent.cli(['job', 'stop', id]).catch(() => undefined);
      await this.agent.stop('SIGINT').catch(() => undefined);
    }
    killProcessesUnder(this.dir);
    for (const m of mountsUnder(this.dir).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
