// What the container scenarios share: a dev agent configured for Docker the
// way a Nomad user configures it (`plugin "docker" { config { endpoint …
// allow_privileged … volumes { enabled } infra_image } }` in the agent
// config), the job files written as HCL, the HTTP API read in Nomad's shapes,
// and the checks that nothing is left behind: no container labelled with the
// allocation, no mount under the agent's data dir.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Allocation, AllocationListStub, Evaluation, Node, NodeListStub } from '../../src/api/index.js';
import { AgentRun, killProcessesUnder, mountsUnder, ok, until } from '../support/agent-run.js';
import { eventually, type NotYet } from '../support/eventually.js';
import { ALLOC_LABEL, containersNamed, dockerApi, listContainers, PAUSE_IMAGE, testImage, type TestDocker } from '../support/docker.js';

export { ok, until };

export interface DockerAgentOptions {
  /** `allow_privileged` of the docker plugin config. Default true (the CSI plugin job needs it). */
  allowPrivileged?: boolean;
  /** `volumes { enabled }`. Default true. */
  volumesEnabled?: boolean;
  /** Another endpoint than the rig's (a dockerd the test stops). */
  endpoint?: string;
  /** Reuse this directory (an agent started again after kill -9 keeps its data dir). */
  dir?: string;
  /** More agent config (HCL), e.g. a `client { bridge_network_name … }` of the test's own. */
  extraConfig?: string;
}

/**
 * The agent config a Nomad user writes for the docker driver, pointed at the
 * rig. BERTH_TEST_DOCKER_PLUGIN_DIR names a plugin_dir holding an external
 * `docker` driver (Nomad's own, built as a plugin) to run the same scenarios
 * against, for comparison; unset, Berth's built-in driver serves.
 */
export function dockerAgentConfig(rig: TestDocker, o: DockerAgentOptions = {}): string {
  const pluginDir = process.env['BERTH_TEST_DOCKER_PLUGIN_DIR'];
  return `${pluginDir ? `plugin_dir = "${pluginDir}"\n` : ''}
plugin "docker" {
  config {
    endpoint         = "${o.endpoint ?? rig.host}"
    allow_privileged = ${o.allowPrivileged ?? true}
    infra_image      = "${PAUSE_IMAGE}"

    volumes {
      enabled = ${o.volumesEnabled ?? true}
    }
  }
}
${o.extraConfig ?? ''}`;
}

/**
 * until() that gives up at once when the probe calls `fail(why)`: a job that
 * cannot be placed or an allocation that failed will not come right by waiting.
 */
export function untilOr<T>(what: string, probe: (fail: (why: string) => undefined) => Promise<T | NotYet>, ms = 120_000): Promise<Exclude<T, NotYet>> {
  const stop = new AbortController();
  const fail = (why: string): undefined => {
    stop.abort(new Error(why));
    return undefined;
  };
  return eventually(what, () => probe(fail), { timeoutMs: ms, intervalMs: 200, signal: stop.signal });
}

/** A dev agent with the docker plugin configured, its directory and the API. */
export class DockerAgent {
  readonly dir: string;
  readonly dataDir: string;
  readonly configFile: string;
  readonly rig: TestDocker;
  run: AgentRun;

  constructor(rig: TestDocker, o: DockerAgentOptions = {}) {
    this.rig = rig;
    // Short: plugin sockets live under the data dir and must fit in 107 bytes.
    this.dir = o.dir ?? mkdtempSync(path.join(tmpdir(), 'bdk-'));
    this.dataDir = path.join(this.dir, 'data');
    this.configFile = path.join(this.dir, 'agent.hcl');
    writeFileSync(this.configFile, dockerAgentConfig(rig, o));
    this.run = this.#agent();
  }

  #agent(): AgentRun {
    return new AgentRun(['--dev', '--data-dir', this.dataDir, '--port', '0', '--config', this.configFile]);
  }

  async start(): Promise<this> {
    await this.run.start({ needToken: true, timeoutMs: 90_000 });
    return this;
  }

  /** The same agent (data dir, config) started again, e.g. after kill -9. */
  async restart(): Promise<this> {
    this.run = this.#agent();
    return this.start();
  }

  /** Writes `hcl` as `<dir>/<name>.hcl` and returns its path. */
  jobFile(name: string, hcl: string): string {
    const file = path.join(this.dir, `${name}.hcl`);
    writeFileSync(file, hcl);
    return file;
  }

  cli(args: readonly string[], timeoutMs = 120_000): ReturnType<AgentRun['cli']> {
    return this.run.cli(args, { timeoutMs });
  }

  /** An API call; resolves with the status and the decoded body. */
  async call<T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
    const res = await fetch(this.run.addr + p, {
      method,
      headers: { authorization: `Bearer ${this.run.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try { parsed = JSON.parse(text); } catch { /* plain text */ }
    return { status: res.status, body: parsed as T };
  }

  async get<T>(p: string): Promise<T> {
    const r = await this.call<T>('GET', p);
    if (r.status !== 200) throw new Error(`GET ${p}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /** The one node of the dev agent. */
  async node(): Promise<Node> {
    const [stub] = await until('the dev node to register', async () => {
      const list = await this.get<NodeListStub[]>('/v1/nodes');
      return list.length > 0 ? list : undefined;
    });
    return this.get<Node>(`/v1/node/${stub!.ID}`);
  }

  /** The job's allocations, newest first. */
  async allocs(job: string): Promise<AllocationListStub[]> {
    const list = await this.get<AllocationListStub[]>(`/v1/job/${encodeURIComponent(job)}/allocations`);
    return [...list].sort((a, b) => b.CreateIndex - a.CreateIndex);
  }

  /**
   * Throws with the evaluation's reasons when the job has no allocation and
   * its scheduler could not place it (a missing driver, a constraint): no
   * point waiting for an allocation then.
   */
  async #unplaced(job: string): Promise<string | undefined> {
    if ((await this.allocs(job)).length > 0) return undefined;
    const evals = await this.get<Evaluation[]>(`/v1/job/${encodeURIComponent(job)}/evaluations`);
    const failed = evals.find((e) => e.FailedTGAllocs && Object.keys(e.FailedTGAllocs).length > 0);
    return failed ? `job ${job} could not be placed: ${JSON.stringify(failed.FailedTGAllocs)}` : undefined;
  }

  /** Waits until the job's newest allocation has client status `status` (failing early on `failed` unless asked for). */
  async allocWith(job: string, status: string, ms = 120_000): Promise<Allocation> {
    const stub = await untilOr(`an allocation of ${job} to be ${status}`, async (fail) => {
      const unplaced = await this.#unplaced(job);
      if (unplaced) return fail(unplaced);
      const [a] = await this.allocs(job);
      if (a && a.ClientStatus === 'failed' && status !== 'failed') {
        const full = await this.get<Allocation>(`/v1/allocation/${a.ID}`);
        return fail(`allocation ${a.ID} of ${job} failed: ${JSON.stringify(full.TaskStates)}`);
      }
      return a?.ClientStatus === status ? a : undefined;
    }, ms);
    return this.get<Allocation>(`/v1/allocation/${stub.ID}`);
  }

  /** A task's stdout through the API (Nomad's /v1/client/fs/logs with plain=true). */
  async logs(allocId: string, task: string, type: 'stdout' | 'stderr' = 'stdout'): Promise<string> {
    const r = await this.call<string>('GET', `/v1/client/fs/logs/${allocId}?task=${task}&type=${type}&origin=start&offset=0&plain=true`);
    if (r.status !== 200) throw new Error(`logs of ${allocId}/${task}: ${r.status} ${JSON.stringify(r.body)}`);
    return String(r.body);
  }

  /** Waits until CSI plugin `id` (run by job `job`) has a healthy controller and node. */
  async pluginHealthy(id: string, job = 'hostpath-plugin', ms = 120_000): Promise<void> {
    await untilOr(`CSI plugin ${id} to be healthy`, async (fail) => {
      const unplaced = await this.#unplaced(job);
      if (unplaced) return fail(unplaced);
      const [a] = await this.allocs(job);
      if (a?.ClientStatus === 'failed') return fail(`the plugin allocation ${a.ID} failed: ${JSON.stringify(a.TaskStates)}`);
      const r = await this.call<{ ControllersHealthy: number; NodesHealthy: number }>('GET', `/v1/plugin/csi/${id}`);
      return r.status === 200 && r.body.ControllersHealthy >= 1 && r.body.NodesHealthy >= 1;
    }, ms);
  }

  /** Stops the agent (SIGINT: drains every allocation) and asserts it exited 0. */
  async stop(): Promise<void> {
    const r = await this.run.stop('SIGINT');
    assert.equal(r.code, 0, `the agent exited ${r.code ?? r.signal}: ${this.run.stderr.slice(-3000)}`);
  }

  /** The test's safety net: kill what is left, unmount, remove the directory and the rig's containers of these allocations. */
  async cleanup(allocIds: Iterable<string> = []): Promise<void> {
    if (this.run.running) await this.run.stop('SIGKILL').catch(() => undefined);
    for (const id of allocIds) {
      const named = await containersNamed(this.rig, id).catch(() => []);
      for (const c of [...named, ...await listContainers(this.rig, `${ALLOC_LABEL}=${id}`).catch(() => [])]) {
        await dockerApi(this.rig, 'DELETE', `/containers/${c.Id}?force=1&v=1`).catch(() => undefined);
      }
    }
    killProcessesUnder(this.dir);
    for (const m of mountsUnder(this.dir).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Containers dockerd has for any of these allocations, running or not: the
 * tasks' (Nomad's alloc_id label) and the pause container of a group network
 * (Nomad 1.1 names it `nomad_init_<alloc ID>` and labels it with nothing).
 */
export async function containersOf(rig: TestDocker, allocIds: Iterable<string>): Promise<string[]> {
  const out = new Set<string>();
  for (const id of allocIds) {
    for (const c of [...await listContainers(rig, `${ALLOC_LABEL}=${id}`), ...await containersNamed(rig, id)]) {
      out.add(`${c.Names[0] ?? c.Id} (${c.State}) of ${id}`);
    }
  }
  return [...out];
}

/** Asserts that no container of these allocations exists and nothing is mounted under the agent's directory. */
export async function assertNothingLeft(agent: DockerAgent, allocIds: Iterable<string>, when: string): Promise<void> {
  const ids = [...allocIds];
  // Removal after a stop is the driver's job; wait for it rather than race it.
  await until(`no container of ${ids.length} allocations ${when}`, async () => (await containersOf(agent.rig, ids)).length === 0, 60_000)
    .catch(async (err: unknown) => assert.fail(`${(err as Error).message}: ${(await containersOf(agent.rig, ids)).join(', ')}`));
  assert.deepEqual(mountsUnder(agent.dir), [], `nothing mounted under the agent's directory ${when}`);
}

/** The images the job files name, pushed to the rig's registry. */
export async function images(rig: TestDocker): Promise<{ busybox: string; plugin: string }> {
  await testImage(rig, 'pause');
  return { busybox: await testImage(rig, 'busybox'), plugin: await testImage(rig, 'plugin') };
}

/** The hostpath CSI plugin as a docker plugin job: privileged, its volumes kept in `hostDir` on the host. */
export function pluginJob(image: string, hostDir: string): string {
  return `
job "hostpath-plugin" {
  type = "system"

  group "plugin" {
    task "plugin" {
      driver = "docker"

      config {
        image      = "${image}"
        privileged = true
        args = [
          "--endpoint=\${CSI_ENDPOINT}",
          "--node-id=\${node.unique.id}",
          "--data-dir=/var/lib/berth/hostpath",
        ]
        volumes = ["${hostDir}:/var/lib/berth/hostpath"]
      }

      csi_plugin {
        id        = "hostpath"
        type      = "monolith"
        mount_dir = "/csi"
      }

      resources {
        cpu    = 100
        memory = 256
      }
    }
  }
}
`;
}
