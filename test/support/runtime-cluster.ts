// End-to-end harness of the node runtime: a real Server in this process, and
// node agents as real child processes (test/support/runtime-client-main.ts) that
// run real tasks, the real hostpath plugin and real mounts.

import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { systemClock } from '../../src/lib/index.js';
import { Server, type ApiToken } from '../../src/server/index.js';
import type { Evaluation, JobRegisterResponse } from '../../src/api/index.js';
import { eventually, type NotYet } from './eventually.js';
import { registration } from './nomad-jobs.js';
import { killProcessesNaming, mountsUnder } from './procs.js';
import { TS_LOADER } from './ts-loader.js';

export const REPO = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
export const BERTH = path.join(REPO, 'bin', 'berth.js');
const CLIENT_MAIN = path.join(REPO, 'test', 'support', 'runtime-client-main.ts');

export const TOKENS = { management: 'rt-mgmt-token-0123456789', node: 'rt-node-token-0123456789' } as const;
const API_TOKENS: ApiToken[] = [
  { name: 'ops', secret: TOKENS.management, role: 'management' },
  { name: 'agents', secret: TOKENS.node, role: 'node' },
];

export interface Answer<T> {
  status: number;
  body: T;
  text: string;
}

/** A real server on an ephemeral port with the real clock. */
export class TestServer {
  server!: Server;
  url = '';
  port = 0;
  readonly dataDir: string;

  constructor(dataDir: string) {
    this.dataDir = dataDir;
  }

  async start(port = this.port): Promise<void> {
    this.server = new Server({ dataDir: this.dataDir, tokens: API_TOKENS, port, clock: systemClock, nodeCallTimeoutMs: 20_000, heartbeatTtlMs: 30_000 });
    ({ url: this.url, port: this.port } = await this.server.start());
  }

  async stop(): Promise<void> {
    await this.server?.stop();
  }

  async call<T = unknown>(method: string, p: string, body?: unknown): Promise<Answer<T>> {
    const res = await fetch(this.url + p, {
      method,
      headers: { authorization: `Bearer ${TOKENS.management}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed as T, text };
  }

  async ok<T = unknown>(method: string, p: string, body?: unknown): Promise<T> {
    const a = await this.call<T>(method, p, body);
    if (a.status !== 200) throw new Error(`${method} ${p}: HTTP ${a.status}: ${a.text}`);
    return a.body;
  }

  /**
   * Registers `job`, a canonical spec, as Nomad's Job JSON (PUT /v1/jobs,
   * which answers before scheduling). Throws unless it answers 200.
   */
  async register(job: Record<string, unknown>): Promise<JobRegisterResponse> {
    return this.ok<JobRegisterResponse>('PUT', '/v1/jobs', registration(job));
  }

  /**
   * Registers `job` (register) and resolves with its evaluation once the
   * scheduler ran it, followed with blocking reads as `job run` follows it.
   */
  async submit(job: Record<string, unknown>): Promise<Evaluation> {
    const id = (await this.register(job)).EvalID;
    let index = 0;
    for (;;) {
      const a = await this.call<Evaluation>('GET', `/v1/evaluation/${id}${index ? `?index=${index}&wait=30s` : ''}`);
      if (a.status !== 200) throw new Error(`evaluation ${id}: HTTP ${a.status}: ${a.text}`);
      if (a.body.Status !== 'pending') return a.body;
      index = a.body.ModifyIndex;
    }
  }
}

export interface AgentConfig {
  dataDir: string;
  nodeName: string;
  hostVolumes?: Record<string, string>;
  logLevel?: string;
  /** Production intervals (probe 30 s, heartbeat 10 s) instead of the tests' short ones. */
  production?: boolean;
  /** More ClientOptions fields (datacenter, nodeClass, meta, ...). */
  extra?: Record<string, unknown>;
}

/** A node agent as its own process. */
export class AgentProcess {
  readonly config: AgentConfig;
  readonly server: TestServer;
  child: ChildProcess | undefined;
  nodeId = '';
  exited: Promise<number | null> = Promise.resolve(null);

  constructor(server: TestServer, config: AgentConfig) {
    this.server = server;
    this.config = config;
  }

  get logFile(): string {
    return path.join(this.config.dataDir, 'agent.log');
  }

  /** Spawns the agent and resolves once it printed that it started. */
  async start(): Promise<void> {
    mkdirSync(this.config.dataDir, { recursive: true });
    const optsFile = path.join(this.config.dataDir, 'agent.json');
    writeFileSync(
      optsFile,
      JSON.stringify({
        dataDir: this.config.dataDir,
        servers: this.server.url,
        token: TOKENS.node,
        nodeName: this.config.nodeName,
        drivers: { raw_exec: true, exec: true },
        hostVolumes: this.config.hostVolumes ?? {},
        ...(this.config.production ? {} : { heartbeatIntervalMs: 1_000, csi: { probeIntervalMs: 500, healthTimeoutMs: 5_000 } }),
        retry: { initialDelayMs: 100, maxDelayMs: 1_000 },
        killTimeoutMs: 2_000,
        netnsPrefix: 'brt-',
        logFile: this.logFile,
        logLevel: this.config.logLevel ?? 'debug',
        ...this.config.extra,
      }),
    );
    const child = spawn(process.execPath, ['--import', TS_LOADER, CLIENT_MAIN, optsFile], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    const lines = createInterface({ input: child.stdout! });
    const ready = await new Promise<{ nodeId: string }>((resolve, reject) => {
      lines.on('line', (line) => {
        try {
          const msg = JSON.parse(line) as { ready?: boolean; nodeId?: string };
          if (msg.ready) resolve({ nodeId: msg.nodeId ?? '' });
        } catch {
          /* not ours */
        }
      });
      void this.exited.then((code) => reject(new Error(`agent exited (${code}) before it was ready: ${stderr}`)));
    });
    this.nodeId = ready.nodeId;
  }

  /** SIGTERM: the agent stops, leaving tasks running. */
  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    this.child.kill('SIGTERM');
    await this.exited;
  }

  /** SIGINT: the agent drains (every allocation stopped) and exits. */
  async drain(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    this.child.kill('SIGINT');
    await this.exited;
  }

  /** SIGKILL: the agent dies without a word. */
  async kill(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  log(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }
}

/** The one wait of the tests (test/support/eventually.ts), polling every 50 ms for up to `ms` (30 s). */
export function until<T>(what: string, fn: () => T | Promise<T>, ms = 30_000): Promise<Exclude<T, NotYet>> {
  return eventually(what, fn, { timeoutMs: ms, intervalMs: 50 });
}

/**
 * A test's last word on `dir`: kills every process whose command line names
 * it, unmounts everything below it (deepest first) and removes it. Never
 * throws: what is already gone is fine.
 */
export function cleanupUnder(dir: string): void {
  killProcessesNaming(dir);
  for (const m of mountsUnder(dir).reverse()) {
    try {
      execFileSync('umount', ['-l', m]);
    } catch {
      /* already gone */
    }
  }
  rmSync(dir, { recursive: true, force: true });
}

export { mountsUnder, pidsWith } from './procs.js';

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The hostpath plugin as a system job; `driver` raw_exec or exec (exec binds the repo and data dir as host volumes). */
export function hostpathPluginJob(opts: { id: string; driver: 'raw_exec' | 'exec'; dataDir: string; env?: Record<string, string>; pluginId?: string }): Record<string, unknown> {
  const exec = opts.driver === 'exec';
  const data = exec ? '/hpdata' : opts.dataDir;
  return {
    id: opts.id,
    type: 'system',
    groups: [
      {
        name: 'plugin',
        restart: { attempts: 10, interval: '1m', delay: '200ms', mode: 'delay' },
        ...(exec
          ? {
              volumes: {
                repo: { type: 'host', source: 'repo', readOnly: true },
                hpdata: { type: 'host', source: 'hpdata' },
              },
            }
          : {}),
        tasks: [
          {
            name: 'plugin',
            driver: opts.driver,
            env: opts.env ?? {},
            config: { command: process.execPath, args: [BERTH, 'plugin', 'hostpath', '--node-id', 'rt-node', '--data-dir', data, '--log-level', 'silent'] },
            ...(exec
              ? {
                  volumeMounts: [
                    { volume: 'repo', destination: REPO, readOnly: true },
                    { volume: 'hpdata', destination: '/hpdata' },
                  ],
                }
              : {}),
            csiPlugin: { id: opts.pluginId ?? 'hostpath', type: 'monolith', mountDir: '/csi', healthTimeout: '10s' },
            resources: { cpuMhz: 100, memoryMb: 256 },
          },
        ],
      },
    ],
  };
}

/** A job whose one task runs `script` under /bin/sh with the CSI volume `volumeId` at /data. */
export function volumeJob(opts: { id: string; type: 'batch' | 'service'; volumeId: string; script: string; driver?: 'raw_exec' | 'exec'; readOnly?: boolean }): Record<string, unknown> {
  return {
    id: opts.id,
    type: opts.type,
    groups: [
      {
        name: 'main',
        restart: { attempts: 0, interval: '1m', delay: '100ms', mode: 'fail' },
        reschedule: { attempts: 0, interval: '1h', delay: '1s', unlimited: false },
        volumes: {
          data: {
            type: 'csi',
            source: opts.volumeId,
            accessMode: opts.readOnly ? 'single-node-reader-only' : 'single-node-writer',
            attachmentMode: 'file-system',
            readOnly: opts.readOnly ?? false,
          },
        },
        tasks: [
          {
            name: 'main',
            driver: opts.driver ?? 'raw_exec',
            config: { command: '/bin/sh', args: ['-c', opts.script] },
            volumeMounts: [{ volume: 'data', destination: '/data', readOnly: opts.readOnly ?? false }],
            resources: { cpuMhz: 50, memoryMb: 32 },
          },
        ],
      },
    ],
  };
}

/**
 * The hostpath plugin as a system job on a cluster whose client agents keep
 * their allocations under `.../n1/...` and `.../n2/...`: the task tells its
 * node from its allocation directory, and gives the plugin node ID
 * `<nodeIdPrefix><n>` and the data dir `<dir>/hp-<n>`. The job file's body.
 */
export function perNodeHostpathPluginJob(opts: { dir: string; nodeIdPrefix: string }): { job: Record<string, unknown> } {
  const script = [
    'case "$BERTH_ALLOC_DIR" in */n1/*) n=n1 ;; */n2/*) n=n2 ;; *) echo "unknown node: $BERTH_ALLOC_DIR" >&2; exit 1 ;; esac',
    `exec "${process.execPath}" "${BERTH}" plugin hostpath --endpoint "$CSI_ENDPOINT" --node-id "${opts.nodeIdPrefix}$n" --data-dir "${opts.dir}/hp-$n" --log-level warn`,
  ].join('\n');
  return {
    job: {
      id: 'hostpath-plugin',
      type: 'system',
      groups: [
        {
          name: 'plugin',
          restart: { attempts: 5, interval: '1m', delay: '500ms', mode: 'delay' },
          tasks: [
            {
              name: 'plugin',
              driver: 'raw_exec',
              config: { command: '/bin/sh', args: ['-c', script] },
              csiPlugin: { id: 'hostpath', type: 'monolith', mountDir: '/csi', healthTimeout: '20s' },
              resources: { cpuMhz: 100, memoryMb: 256 },
            },
          ],
        },
      ],
    },
  };
}

/**
 * The text of a single-node-writer hostpath volume file, required on the
 * node whose plugin node ID is `node` (any node when undefined).
 */
export function hostpathVolumeHcl(id: string, node?: string): string {
  const topology = node
    ? `
topology_request {
  required {
    topology {
      segments = { "topology.hostpath.csi.berth.dev/node" = "${node}" }
    }
  }
}
`
    : '';
  return `id           = "${id}"
name         = "${id}"
type         = "csi"
plugin_id    = "hostpath"
capacity_min = "1MiB"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}
${topology}`;
}

/**
 * A one-task raw_exec job running `/bin/sh -c script`, never restarted or
 * rescheduled, with the single-node-writer CSI volume `volume` (when given)
 * mounted at /data (the task sees it at $BERTH_TASK_DIR/data).
 */
export function rawExecJob(id: string, volume: string | undefined, script: string, type: 'service' | 'batch' = 'service'): Record<string, unknown> {
  return {
    id,
    type,
    groups: [
      {
        name: 'main',
        restart: { attempts: 0, interval: '1m', delay: '1s', mode: 'fail' },
        reschedule: { attempts: 0, interval: '1h', delay: '1s', unlimited: false },
        ...(volume ? { volumes: { data: { type: 'csi', source: volume, accessMode: 'single-node-writer', attachmentMode: 'file-system' } } } : {}),
        tasks: [
          {
            name: 'main',
            driver: 'raw_exec',
            config: { command: '/bin/sh', args: ['-c', script] },
            ...(volume ? { volumeMounts: [{ volume: 'data', destination: '/data' }] } : {}),
            resources: { cpuMhz: 50, memoryMb: 32 },
          },
        ],
      },
    ],
  };
}
