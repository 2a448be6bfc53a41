// What the web UI's test and benchmark look at: a real dev agent (its own
// process, a read-only token beside its management one) running the hostpath
// plugin as a job, one volume created through the plugin's controller (with
// a secret), and workloads that claim the volume on demand (and may write
// into it). The node reports volume usage every second, so the UI has usage,
// a usage history and a condition to show.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentRun, freePort, killProcessesUnder, mountsUnder, ok, REPO, until } from './agent-run.js';

/**
 * A service job whose one task claims `volume` (single-node-writer), writes
 * `writeMiB` MiB into it as the file `blob-<id>` (when given), prints a line,
 * then sleeps.
 */
export function volumeJob(id: string, volume: string, writeMiB = 0): string {
  // raw_exec has no chroot: the volume is bound at <task dir>/<destination>.
  const write = writeMiB > 0 ? `head -c ${writeMiB * 1024 * 1024} /dev/urandom > \\"$BERTH_TASK_DIR/data/blob-${id}\\" && sync && ` : '';
  return `job "${id}" {
  type = "service"
  ui {
    description = "Job ${id}, run by the UI tests"
    link {
      label = "Runbook"
      url   = "https://runbooks.example.com/${id}"
    }
    link {
      label = "Not a link"
      url   = "javascript:alert(1)"
    }
  }
  group "app" {
    volume "data" {
      type            = "csi"
      source          = "${volume}"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }
    restart {
      attempts = 0
      mode     = "fail"
    }
    task "work" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "${write}echo ui-log-line from $BERTH_ALLOC_ID; exec sleep 600"]
      }
      volume_mount {
        volume      = "data"
        destination = "/data"
      }
      resources {
        cpu    = 50
        memory = 32
      }
    }
  }
}
`;
}

export class UiCluster {
  readonly dir: string;
  readonly volume: string;
  readonly readOnlyToken: string;
  readonly secret: string;
  agent!: AgentRun;
  nodeId = '';
  readonly #jobs = new Set<string>();
  readonly #volumes = new Set<string>();
  /** More agent configuration (HCL), appended to the cluster's. */
  readonly #agentConfig: string;
  readonly #csiConfig: string;

  /** `agentConfig`: more agent configuration (HCL); `csiConfig`: more lines of the agent's `csi` block (e.g. `drift_interval = "2s"`). */
  constructor(dir: string, opts: { volume?: string; agentConfig?: string; csiConfig?: string } = {}) {
    this.dir = dir;
    this.#agentConfig = opts.agentConfig ?? '';
    this.volume = opts.volume ?? 'ui-data';
    this.#csiConfig = opts.csiConfig ? `  ${opts.csiConfig}\n` : '';
    this.readOnlyToken = `ui-reader-${process.pid}-token`;
    this.secret = `ui-secret-${process.pid}-d41c`;
  }

  #file(name: string, text: string): string {
    const p = path.join(this.dir, name);
    writeFileSync(p, text);
    return p;
  }

  /** Starts the agent, the plugin (waits until healthy) and creates the volume. */
  async start(): Promise<this> {
    const cfg = this.#file('agent.hcl', `tokens {\n  read_only = ["${this.readOnlyToken}"]\n}\ncsi {\n  volume_stats_interval = "1s"\n${this.#csiConfig}}\n${this.#agentConfig}`);
    this.agent = new AgentRun(['--dev', '--data-dir', path.join(this.dir, 'agent'), '--port', String(await freePort()), '--config', cfg]);
    await this.agent.start();
    ok(await this.agent.cli(['job', 'run', `${REPO}/examples/hostpath-plugin.hcl`], { timeoutMs: 120_000 }), 'run the hostpath plugin');
    await until(
      'the hostpath plugin to be healthy',
      async () => {
        const res = await fetch(`${this.agent.addr}/v1/plugin/csi/hostpath`, { headers: { Authorization: `Bearer ${this.agent.token}` } });
        const p = res.ok ? ((await res.json()) as { NodesHealthy: number; ControllersHealthy: number }) : undefined;
        return !!p && p.NodesHealthy >= 1 && p.ControllersHealthy >= 1;
      },
      120_000,
    );
    await this.createVolume(this.volume);
    this.nodeId = (await this.get<Array<{ ID: string }>>('/v1/nodes'))[0]!.ID;
    return this;
  }

  /** Creates a 10 MiB hostpath volume `id` (single-node-writer, with a secret) with the CLI. */
  async createVolume(id: string): Promise<void> {
    this.#volumes.add(id);
    const vol = this.#file(
      `volume-${id}.hcl`,
      `id = "${id}"\nname = "${id}"\ntype = "csi"\nplugin_id = "hostpath"\ncapacity_min = "10MiB"\ncapacity_max = "1GiB"\n` +
        `capability {\n  access_mode = "single-node-writer"\n  attachment_mode = "file-system"\n}\nsecrets {\n  token = "${this.secret}"\n}\n`,
    );
    ok(await this.agent.cli(['volume', 'create', vol]), `berth volume create ${id}`);
  }

  /** GET an API path with the management token (or `token`); fails unless 200. */
  async get<T>(p: string, token = this.agent.token): Promise<T> {
    const res = await fetch(`${this.agent.addr}${p}`, { headers: { Authorization: `Bearer ${token}` } });
    const body = await res.text();
    assert.equal(res.status, 200, `GET ${p}: ${res.status} ${body}`);
    return JSON.parse(body) as T;
  }

  /**
   * Runs volumeJob(id) on `opts.volume` (default: the cluster's volume) with
   * the CLI (which waits for it) and resolves with its running allocation's ID.
   */
  async runJob(id: string, opts: { volume?: string; writeMiB?: number } = {}): Promise<string> {
    this.#jobs.add(id);
    ok(await this.agent.cli(['job', 'run', this.#file(`${id}.hcl`, volumeJob(id, opts.volume ?? this.volume, opts.writeMiB))], { timeoutMs: 120_000 }), `berth job run ${id}`);
    const allocs = await this.get<Array<{ ID: string; ClientStatus: string }>>(`/v1/job/${id}/allocations`);
    const running = allocs.find((a) => a.ClientStatus === 'running');
    assert.ok(running, `job ${id} has a running allocation: ${JSON.stringify(allocs)}`);
    return running.ID;
  }

  /** Stops job `id` with the CLI (which waits until its allocations stopped). */
  async stopJob(id: string): Promise<void> {
    ok(await this.agent.cli(['job', 'stop', id], { timeoutMs: 120_000 }), `berth job stop ${id}`);
  }

  /** Stops the jobs, deletes the volume, stops the agent (SIGINT) and removes what is left. Never throws. */
  async stop(): Promise<void> {
    if (this.agent?.running) {
      for (const id of this.#jobs) await this.agent.cli(['job', 'stop', id]).catch(() => undefined);
      for (const id of this.#volumes) await this.agent.cli(['volume', 'delete', id]).catch(() => undefined);
      await this.agent.stop('SIGINT').catch(() => undefined);
    }
    killProcessesUnder(this.dir);
    for (const m of mountsUnder(this.dir).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(this.dir, { recursive: true, force: true });
    // The example plugin job keeps its volumes per node ID; this dev node's ID is never used again.
    if (this.nodeId) rmSync(`/var/lib/berth/hostpath/${this.nodeId}`, { recursive: true, force: true });
  }
}
