// A server + client pair for the security suites, as an operator runs them:
// `berth agent --server` with management, read-only and node tokens,
// `berth agent --client` with raw_exec, both logging at debug to files in their
// data dirs, and the hostpath plugin as a system job. Every CLI output and API
// answer can be kept (`printed`) to search for a secret at the end.

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AgentRun, freePort, killProcessesUnder, mountsUnder, until, type BerthResult } from '../support/agent-run.js';
import { hostpathPluginJob } from '../support/runtime-cluster.js';

export const MGMT = 'sec-mgmt-token-0123456789abcdef';
export const READER = 'sec-read-token-0123456789abcdef';
export const NODE_TOKEN = 'sec-node-token-0123456789abcdef';

export class SecurityCluster {
  readonly root = mkdtempSync(path.join(tmpdir(), 'bsc-'));
  readonly serverDir = path.join(this.root, 'server');
  readonly clientDir = path.join(this.root, 'client');
  readonly hostpathDir = path.join(this.root, 'hp');
  server!: AgentRun;
  client!: AgentRun;
  /** Every CLI output and API answer so far, each headed by what produced it. */
  readonly printed: string[] = [];

  /** Starts the server and the client and waits for the client's node to be ready. */
  async start(): Promise<this> {
    writeFileSync(path.join(this.root, 'nodes.tokens'), `${NODE_TOKEN}\n`);
    writeFileSync(
      path.join(this.root, 'server.hcl'),
      `data_dir = "${this.serverDir}"\nports {\n  http = ${await freePort()}\n}\ntokens {\n  management = ["${MGMT}"]\n  read_only  = ["${READER}"]\n  node_file  = "${path.join(this.root, 'nodes.tokens')}"\n}\n`,
    );
    this.server = await new AgentRun(['--server', '--config', path.join(this.root, 'server.hcl'), '--log-level', 'debug']).start();
    this.server.token = MGMT;
    writeFileSync(
      path.join(this.root, 'client.json'),
      JSON.stringify({
        data_dir: this.clientDir,
        ports: { http: 0 },
        client: { node_name: 'sec-client', token: NODE_TOKEN, options: { 'driver.raw_exec.enable': true } },
        csi: { probe_interval: '1s' },
      }),
    );
    this.client = await new AgentRun(['--client', '--server-address', this.server.addr, '--config', path.join(this.root, 'client.json'), '--log-level', 'debug']).start();
    this.client.token = MGMT;
    await until('the client node ready', async () => ((await this.get<Array<{ Status: string }>>('/v1/nodes')).body ?? []).some((n) => n.Status === 'ready'));
    return this;
  }

  /** Runs the hostpath plugin job and waits for it to be healthy. */
  async runPlugin(): Promise<void> {
    const r = await this.cli(['job', 'run', this.file('plugin.json', JSON.stringify(hostpathPluginJob({ id: 'hostpath-plugin', driver: 'raw_exec', dataDir: this.hostpathDir })))]);
    if (r.code !== 0) throw new Error(`job run plugin: ${r.stderr}${r.stdout}`);
    await until('the hostpath plugin healthy', async () => {
      const p = (await this.get<{ ControllersHealthy: number; NodesHealthy: number }>('/v1/plugin/csi/hostpath')).body;
      return !!p && p.ControllersHealthy >= 1 && p.NodesHealthy >= 1;
    });
  }

  file(name: string, body: string | Buffer): string {
    const f = path.join(this.root, name);
    writeFileSync(f, body);
    return f;
  }

  /** `berth ...args` against the server with the management token (or `token`); kept in `printed`. */
  async cli(args: readonly string[], opts: { token?: string; timeoutMs?: number } = {}): Promise<BerthResult> {
    const r = await this.server.cli(args, { token: opts.token ?? MGMT, timeoutMs: opts.timeoutMs ?? 60_000 });
    this.printed.push(`$ berth ${args.join(' ')}\n${r.stdout}${r.stderr}`);
    return r;
  }

  /** An HTTP request to the server (or `base`), its answer kept in `printed`; the body JSON-decoded when it is JSON. */
  async request<T = unknown>(method: string, p: string, opts: { token?: string | null; body?: string; base?: string } = {}): Promise<{ status: number; text: string; body: T | undefined }> {
    const headers: Record<string, string> = {};
    const token = opts.token === undefined ? MGMT : opts.token;
    if (token !== null) headers['authorization'] = `Bearer ${token}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch((opts.base ?? this.server.addr) + p, { method, headers, ...(opts.body !== undefined ? { body: opts.body } : {}), signal: AbortSignal.timeout(60_000) });
    const text = await res.text();
    this.printed.push(`${method} ${p} -> ${res.status}\n${text}`);
    let body: T | undefined;
    try {
      body = JSON.parse(text) as T;
    } catch {
      body = undefined;
    }
    return { status: res.status, text, body };
  }

  get<T = unknown>(p: string, token?: string): Promise<{ status: number; text: string; body: T | undefined }> {
    return this.request<T>('GET', p, token === undefined ? {} : { token });
  }

  /** The IDs and modify indexes of every job, allocation, volume and evaluation: what "nothing changed" compares. */
  async state(): Promise<string> {
    const rows: string[] = [];
    for (const p of ['/v1/jobs', '/v1/allocations', '/v1/volumes?type=csi', '/v1/evaluations']) {
      // Berth's own shapes (camelCase) or Nomad's (PascalCase), as each family's routes answer.
      const list = (await this.get<Array<{ id?: string; ID?: string; modifyIndex?: number; ModifyIndex?: number }>>(p)).body ?? [];
      rows.push(`${p}: ${list.map((o) => `${o.ID ?? o.id ?? ''}@${o.ModifyIndex ?? o.modifyIndex ?? ''}`).sort().join(' ')}`);
    }
    return rows.join('\n');
  }

  /**
   * Starts the server (then the client) again when it died, so that one fatal
   * input does not hide the answers to the others; returns how it had ended,
   * or undefined when both were running.
   */
  async revive(): Promise<string | undefined> {
    if (this.server.running) {
      // A server that no longer answers (say, deep in garbage collection) counts as dead.
      const answers = await fetch(`${this.server.addr}/v1/status/leader`, { headers: { authorization: `Bearer ${MGMT}` }, signal: AbortSignal.timeout(15_000) }).then(
        (r) => r.status < 500,
        () => false,
      );
      if (!answers) await this.server.stop('SIGKILL');
    }
    if (this.server.running && this.client.running) return undefined;
    const note = [this.server, this.client]
      .filter((a) => !a.running)
      .map((a) => `${a.args[0]} exited (${a.child?.exitCode ?? a.child?.signalCode}): ${a.stderr.slice(-800)}`)
      .join('\n');
    if (!this.server.running) {
      await this.server.start();
      this.server.token = MGMT;
    }
    if (!this.client.running) {
      await this.client.start();
      this.client.token = MGMT;
    }
    await until('the client node ready again', async () => ((await this.get<Array<{ Status: string }>>('/v1/nodes')).body ?? []).some((n) => n.Status === 'ready'));
    return note;
  }

  /** SIGINT to the client, then the server; resolves with their exit codes. */
  async stop(): Promise<Array<number | null>> {
    const c = await this.client?.stop('SIGINT').catch(() => ({ code: -1 }));
    const s = await this.server?.stop('SIGINT').catch(() => ({ code: -1 }));
    return [c?.code ?? null, s?.code ?? null];
  }

  /**
   * Stops the agents (SIGINT drains the client: its allocations stop), kills
   * whatever is left, tasks and executors included, unmounts and removes the
   * directory: nothing of the cluster outlives the test.
   */
  async destroy(): Promise<void> {
    await this.client?.stop('SIGINT', 30_000).catch(() => undefined);
    await this.server?.stop('SIGINT', 30_000).catch(() => undefined);
    killProcessesUnder(this.root);
    for (const m of mountsUnder(this.root).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** Every regular file under `dir`, not descending into mount points. */
export function filesUnder(dir: string): string[] {
  const out: string[] = [];
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && !mountsUnder(p).includes(p)) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}
