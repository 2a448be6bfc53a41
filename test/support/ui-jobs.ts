// What the jobs pages' UI test looks at: a real dev agent (its own process,
// a read-only token beside its management one, a host volume "scratch") and
// job files for it: a service that rolls out with canaries (promoted by
// hand), one that rolls without, batch jobs that finish cleanly or fail, and
// a job no node can take. Raw_exec tasks, so nothing is pulled or built.

import assert from 'node:assert/strict';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentRun, freePort, killProcessesUnder, ok } from './agent-run.js';

/**
 * A service job that rolls out with one canary, promoted by hand; `rev` is
 * written into its meta (a change its tasks see: a new version replaces
 * them). It has a network with a dynamic port, a service on it, the host
 * volume "scratch", a constraint and an affinity.
 */
export function canaryJob(id: string, rev: number, count = 1): string {
  return `job "${id}" {
  type = "service"
  meta {
    rev = "${rev}"
  }
  update {
    canary            = 1
    auto_promote      = false
    health_check      = "task_states"
    min_healthy_time  = "1s"
    healthy_deadline  = "2m"
    progress_deadline = "5m"
  }
  constraint {
    attribute = "\${attr.kernel.name}"
    value     = "linux"
  }
  affinity {
    attribute = "\${node.datacenter}"
    value     = "dc1"
    weight    = 40
  }
  group "web" {
    count = ${count}
    network {
      mode = "host"
      port "http" {}
    }
    service {
      name     = "${id}-http"
      port     = "http"
      provider = "nomad"
      tags     = ["ui-test"]
    }
    volume "cache" {
      type      = "host"
      source    = "scratch"
      read_only = true
    }
    task "srv" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
      volume_mount {
        volume      = "cache"
        destination = "/cache"
        read_only   = true
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

/** A service job that rolls out without canaries: a count change updates its allocations in place. */
export function rollingJob(id: string, count: number): string {
  return `job "${id}" {
  type = "service"
  update {
    max_parallel     = 2
    health_check     = "task_states"
    min_healthy_time = "1s"
    healthy_deadline = "2m"
  }
  group "app" {
    count = ${count}
    task "srv" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
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

/** A batch job whose one task runs `command` once, never restarted nor rescheduled. */
export function batchJob(id: string, command: string): string {
  return `job "${id}" {
  type = "batch"
  group "once" {
    restart {
      attempts = 0
      mode     = "fail"
    }
    reschedule {
      attempts  = 0
      unlimited = false
    }
    task "run" {
      driver = "raw_exec"
      config {
        command = "${command}"
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

/** A job no node can take (a constraint on an OS no node runs): its evaluation fails to place it and a blocked one waits. */
export function unplaceableJob(id: string): string {
  return `job "${id}" {
  type = "service"
  group "nowhere" {
    constraint {
      attribute = "\${attr.kernel.name}"
      value     = "plan9"
    }
    task "srv" {
      driver = "raw_exec"
      config {
        command = "/bin/sleep"
        args    = ["3600"]
      }
    }
  }
}
`;
}

export class JobsCluster {
  readonly dir: string;
  readonly readOnlyToken = `ui-jobs-reader-${process.pid}-token`;
  agent!: AgentRun;

  constructor(dir: string) {
    this.dir = dir;
  }

  async start(): Promise<this> {
    const scratch = path.join(this.dir, 'scratch');
    mkdirSync(scratch, { recursive: true });
    const cfg = this.file('agent.hcl', `tokens {\n  read_only = ["${this.readOnlyToken}"]\n}\nclient {\n  host_volume "scratch" {\n    path = "${scratch}"\n  }\n}\n`);
    this.agent = new AgentRun(['--dev', '--data-dir', path.join(this.dir, 'agent'), '--port', String(await freePort()), '--config', cfg]);
    await this.agent.start();
    return this;
  }

  file(name: string, text: string): string {
    const p = path.join(this.dir, name);
    writeFileSync(p, text);
    return p;
  }

  /** `berth job run` of the job file `text` (with `-detach`: returns once registered). */
  async run(id: string, text: string, opts: { detach?: boolean; namespace?: string } = {}): Promise<void> {
    const args = ['job', 'run', ...(opts.detach ? ['-detach'] : []), ...(opts.namespace ? ['--namespace', opts.namespace] : []), this.file(`${id}.hcl`, text)];
    ok(await this.agent.cli(args, { timeoutMs: 180_000 }), `berth job run ${id}`);
  }

  async cli(args: string[]): Promise<void> {
    ok(await this.agent.cli(args, { timeoutMs: 120_000 }), `berth ${args.join(' ')}`);
  }

  /** GET an API path with the management token (or `token`); fails unless 200. */
  async get<T>(p: string, token = this.agent.token): Promise<T> {
    const res = await fetch(`${this.agent.addr}${p}`, { headers: { Authorization: `Bearer ${token}` } });
    const body = await res.text();
    assert.equal(res.status, 200, `GET ${p}: ${res.status} ${body}`);
    return JSON.parse(body) as T;
  }

  /** Any request; resolves with the status and body text. */
  async send(method: string, p: string, body: unknown, token = this.agent.token): Promise<{ status: number; text: string }> {
    const res = await fetch(`${this.agent.addr}${p}`, { method, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text() };
  }

  /** Stops the agent (SIGINT) and removes what is left. Never throws. */
  async stop(): Promise<void> {
    if (this.agent?.running) await this.agent.stop('SIGINT').catch(() => undefined);
    killProcessesUnder(this.dir);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
