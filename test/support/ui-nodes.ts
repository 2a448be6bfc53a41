// What the node, topology and services pages of the web UI are tested
// against: the UI test cluster (a dev agent with a read-only token and the
// hostpath plugin) whose node also has meta, a host volume, a host network and
// a CNI network configured, and jobs of known sizes: a web server whose
// native service's http check passes, beside a second service whose tcp check
// fails (nothing listens on its port), and a worker that only sleeps
// and is slow to stop.

import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort, ok, until } from './agent-run.js';
import { UiCluster } from './ui-cluster.js';

/** The node's meta, host volume, host network and CNI network names. */
export const NODE_FIXTURE = { meta: { rack: 'r7', role: 'ui-test' }, hostVolume: 'scratch', hostNetwork: 'loopback', cniNetwork: 'uinet' } as const;

/** A job of `cpu` MHz and `memory` MB whose one task runs `args` with node (raw_exec). */
function nodeTaskJob(id: string, opts: { cpu: number; memory: number; script: string; services?: string; killTimeout?: string }): string {
  return `job "${id}" {
  type = "service"
  group "app" {
    restart {
      attempts = 0
      mode     = "fail"
    }
${opts.services ?? ''}
    task "main" {
      driver = "raw_exec"
${opts.killTimeout ? `      kill_timeout = "${opts.killTimeout}"\n` : ''}      config {
        command = "${process.execPath}"
        args    = ["-e", ${JSON.stringify(opts.script)}]
      }
      resources {
        cpu    = ${opts.cpu}
        memory = ${opts.memory}
      }
    }
  }
}
`;
}

/** The web job: serves HTTP on `port`; service `<id>` checks it over http (passes), service `<id>-admin` over tcp on `deadPort` (fails). */
export function webJob(id: string, port: number, deadPort: number): string {
  // A failing check keeps the allocation unhealthy, which would hold a drain until its deadline: migrate on task states.
  const services = `    migrate {
      health_check = "task_states"
    }
    service {
      name     = "${id}"
      provider = "nomad"
      port     = "${port}"
      tags     = ["http", "v1"]
      check {
        name     = "root"
        type     = "http"
        path     = "/"
        interval = "1s"
        timeout  = "1s"
      }
    }
    service {
      name     = "${id}-admin"
      provider = "nomad"
      port     = "${deadPort}"
      tags     = ["admin"]
      check {
        name     = "admin-port"
        type     = "tcp"
        interval = "1s"
        timeout  = "1s"
      }
    }`;
  const script = `require('http').createServer((q, s) => s.end('ok')).listen(${port}, '127.0.0.1')`;
  return nodeTaskJob(id, { cpu: 500, memory: 2048, script, services });
}

/**
 * A worker of 250 MHz and 1 GiB that only sleeps and, when told to stop,
 * takes its kill_timeout (15s) to go: a drain has it left to move meanwhile.
 */
export function workerJob(id: string): string {
  const script = "for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => console.log('asked to stop: ' + s)); setInterval(() => {}, 1e6)";
  return nodeTaskJob(id, { cpu: 250, memory: 1024, script, killTimeout: '15s' });
}

/** The UI cluster with the node fixture, and the node pages' jobs. */
export class NodesCluster extends UiCluster {
  readonly #jobs = new Set<string>();
  webPort = 0;
  deadPort = 0;

  constructor(dir: string) {
    const cni = path.join(dir, 'cni');
    const hostVolume = path.join(dir, 'host-volume');
    mkdirSync(cni, { recursive: true });
    mkdirSync(hostVolume, { recursive: true });
    writeFileSync(path.join(cni, `${NODE_FIXTURE.cniNetwork}.conflist`), JSON.stringify({ cniVersion: '1.0.0', name: NODE_FIXTURE.cniNetwork, plugins: [{ type: 'bridge' }] }));
    const meta = Object.entries(NODE_FIXTURE.meta).map(([k, v]) => `    ${k} = "${v}"`).join('\n');
    super(dir, {
      agentConfig: `client {
  meta {
${meta}
  }
  host_volume "${NODE_FIXTURE.hostVolume}" {
    path = "${hostVolume}"
  }
  host_network "${NODE_FIXTURE.hostNetwork}" {
    interface = "lo"
  }
  cni_config_dir = "${cni}"
}
`,
    });
  }

  /** Runs a job from its HCL with the CLI (which waits for it); resolves with its running allocation's ID. */
  async runHcl(id: string, hcl: string): Promise<string> {
    this.#jobs.add(id);
    const file = path.join(this.dir, `${id}.hcl`);
    writeFileSync(file, hcl);
    ok(await this.agent.cli(['job', 'run', file], { timeoutMs: 120_000 }), `berth job run ${id}`);
    const allocs = await this.get<Array<{ ID: string; ClientStatus: string }>>(`/v1/job/${id}/allocations`);
    const running = allocs.find((a) => a.ClientStatus === 'running');
    assert.ok(running, `job ${id} has a running allocation: ${JSON.stringify(allocs)}`);
    return running.ID;
  }

  /** Runs the web job `id` and waits until its http check passed and its tcp check failed. */
  async runWeb(id: string): Promise<string> {
    this.webPort = await freePort();
    this.deadPort = await freePort();
    const allocId = await this.runHcl(id, webJob(id, this.webPort, this.deadPort));
    await until('the web checks to report (root passing, admin-port failing)', async () => {
      const checks = Object.values(await this.get<Record<string, { Check: string; Status: string }>>(`/v1/allocation/${allocId}/checks`));
      return checks.some((c) => c.Check === 'root' && c.Status === 'success') && checks.some((c) => c.Check === 'admin-port' && c.Status === 'failure');
    }, 60_000);
    return allocId;
  }

  override async stop(): Promise<void> {
    if (this.agent?.running) for (const id of this.#jobs) await this.agent.cli(['job', 'stop', id]).catch(() => undefined);
    await super.stop();
  }
}
