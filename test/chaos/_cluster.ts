// The chaos kit's clusters: a dev agent, or a server plus a client, started,
// restarted with the same data dir, drained and killed; and the writer job.
// Private to test/chaos (see _harness.ts).

import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentRun, freePort, type BerthResult } from '../support/agent-run.js';
import { hostpathPluginJob } from '../support/runtime-cluster.js';
import type { WebPart } from './_web.js';

export type ClusterKind = 'dev' | 'pair';

export const VOLUME_ID = 'chaos-vol';
export const PLUGIN_JOB = 'chaos-plugin';
export const WRITER_JOB = 'chaos-writer';
export const MGMT = 'chaos-mgmt-token-0123456789abcdef';
export const NODE_TOKEN = 'chaos-node-token-0123456789abcdef';

export class Cluster {
  readonly kind: ClusterKind;
  readonly root: string;
  /** The data dir of the node's client (where allocations and plugin mounts live). */
  readonly nodeDir: string;
  readonly hostpathDir: string;
  readonly agents = new Map<'agent' | 'server' | 'client', AgentRun>();
  pluginGen = 0;
  /** The web workload, when this run has it; `webWanted` is whether its job should run. */
  readonly web: WebPart | undefined;
  webWanted = true;

  constructor(kind: ClusterKind, root: string, web?: WebPart) {
    this.kind = kind;
    this.root = root;
    this.web = web;
    this.nodeDir = path.join(root, kind === 'dev' ? 'agent' : 'client');
    this.hostpathDir = path.join(root, 'hp');
  }

  get api(): AgentRun {
    return (this.agents.get('agent') ?? this.agents.get('server')) as AgentRun;
  }

  async start(): Promise<void> {
    const port = await freePort();
    if (this.kind === 'dev') {
      const config = this.web ? ['--config', this.file('agent.hcl', this.web.agentConfig())] : [];
      this.agents.set('agent', await new AgentRun(['--dev', '--data-dir', this.nodeDir, '--port', String(port), ...config]).start());
      return;
    }
    writeFileSync(path.join(this.root, 'nodes.tokens'), `${NODE_TOKEN}\n`);
    writeFileSync(
      path.join(this.root, 'server.hcl'),
      `data_dir = "${path.join(this.root, 'server')}"\nports {\n  http = ${port}\n}\ntokens {\n  management = ["${MGMT}"]\n  node_file  = "${path.join(this.root, 'nodes.tokens')}"\n}\n`,
    );
    const server = await new AgentRun(['--server', '--config', path.join(this.root, 'server.hcl')]).start();
    server.token = MGMT;
    this.agents.set('server', server);
    writeFileSync(
      path.join(this.root, 'client.json'),
      JSON.stringify({
        ...this.web?.agentConfigJson(),
        data_dir: this.nodeDir,
        ports: { http: 0 },
        client: {
          node_name: 'chaos-client',
          token: NODE_TOKEN,
          options: { 'driver.raw_exec.enable': true },
          ...(this.web?.agentConfigJson()['client'] as Record<string, unknown> | undefined),
        },
        csi: { probe_interval: '1s' },
      }),
    );
    const client = await new AgentRun(['--client', '--server-address', server.addr, '--config', path.join(this.root, 'client.json')]).start();
    client.token = MGMT;
    this.agents.set('client', client);
  }

  /** Starts a killed agent process again with the same arguments (and data dir). */
  async restart(which: 'agent' | 'server' | 'client'): Promise<void> {
    const a = this.agents.get(which) as AgentRun;
    await a.exited;
    await a.start();
    if (this.kind === 'pair') a.token = MGMT;
  }

  cli(args: readonly string[], timeoutMs = 60_000): Promise<BerthResult> {
    return this.api.cli(args, { timeoutMs });
  }

  /** A GET on the API; undefined on 404. Throws on any other failure (the agent may be restarting). */
  async get<T>(p: string): Promise<T | undefined> {
    const res = await fetch(this.api.addr + p, { headers: { authorization: `Bearer ${this.api.token}` }, signal: AbortSignal.timeout(10_000) });
    if (res.status === 404) return undefined;
    if (!res.ok) throw new Error(`GET ${p}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  file(name: string, body: string): string {
    const f = path.join(this.root, name);
    writeFileSync(f, body);
    return f;
  }

  pluginFile(): string {
    return this.file('plugin.json', JSON.stringify(hostpathPluginJob({ id: PLUGIN_JOB, driver: 'raw_exec', dataDir: this.hostpathDir, env: { CHAOS_GEN: String(this.pluginGen) } })));
  }

  webFile(): string {
    return this.file('web.hcl', (this.web as WebPart).jobFile());
  }

  writerFile(): string {
    return this.file('writer.json', JSON.stringify(writerJob()));
  }

  /** SIGINT to every agent (the client before its server), waiting for their exits. */
  async drain(): Promise<string[]> {
    const problems: string[] = [];
    for (const which of ['client', 'agent', 'server'] as const) {
      const a = this.agents.get(which);
      if (!a?.running) continue;
      const r = await a.stop('SIGINT', 120_000);
      if (r.code !== 0) problems.push(`the ${which} drained with SIGINT exited ${r.code ?? r.signal}: ${a.stderr.slice(-2000)}`);
    }
    return problems;
  }

  async kill(): Promise<void> {
    for (const a of this.agents.values()) if (a.running) await a.stop('SIGKILL');
  }
}

/** The writer: a service job appending `<alloc> <pid> <n>` every 100 ms to a file in the volume. */
function writerJob(): Record<string, unknown> {
  return {
    id: WRITER_JOB,
    type: 'service',
    groups: [
      {
        name: 'main',
        restart: { attempts: 10, interval: '1m', delay: '200ms', mode: 'delay' },
        reschedule: { attempts: 0, interval: '1h', delay: '1s', unlimited: true },
        volumes: { data: { type: 'csi', source: VOLUME_ID, accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
        tasks: [
          {
            name: 'write',
            driver: 'raw_exec',
            config: {
              command: '/bin/sh',
              args: ['-c', 'a=${BERTH_ALLOC_ID%%-*}; n=0; while :; do n=$((n+1)); echo "$a $$ $n" >> "$BERTH_TASK_DIR/data/counter"; sleep 0.1; done'],
            },
            volumeMounts: [{ volume: 'data', destination: '/data' }],
            resources: { cpuMhz: 50, memoryMb: 32 },
          },
        ],
      },
    ],
  };
}
