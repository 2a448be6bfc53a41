// Real etcd for tests: `etcd` processes (Debian's etcd-server, v3.4, which
// scripts/ensure-etcd.mjs installs when missing) on free loopback ports, each
// with its own temporary data directory. One member for most tests, three
// for quorum and failover tests. A member is "up" when it logged that it
// serves client traffic (it does so only once the cluster has a leader and
// the member has published itself), never after a fixed sleep.
//
//   const etcd = await startEtcd();            // one member
//   const cluster = await startEtcd({ members: 3 });
//   cluster.endpoints                          // ['http://127.0.0.1:P1', ...]
//   await cluster.members[0]!.kill();          // SIGKILL, data kept
//   await cluster.members[0]!.start();         // rejoins with its data
//   await cluster.close();                     // stops all, removes data

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { freePort } from './agent-run.js';

export const ETCD_BIN = process.env['BERTH_TEST_ETCD'] ?? 'etcd';
/** What etcd 3.4 logs (zap) once it serves clients: only after the cluster has a leader and this member published itself. */
const READY = /serving client traffic|ready to serve client requests/;

export interface StartEtcdOptions {
  /** How many members (1 or an odd number for a quorum). Default 1. */
  members?: number;
  /** How long start() waits for every member to serve. Default 60 s. */
  timeoutMs?: number;
  /** etcd's --max-request-bytes (its default is 1.5 MiB): the largest write one Txn may carry. */
  maxRequestBytes?: number;
  /** Each member in a session of its own (see ClusterOptions.ownSessions in process-cluster.ts). Default false. */
  ownSessions?: boolean;
}

/** One etcd process of a cluster; can be stopped, killed and started again with its data. */
export class EtcdMember {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly dataDir: string;
  #initialCluster = '';
  #token = '';
  #extraArgs: readonly string[] = [];
  #ownSession = false;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #ready: Promise<void> = Promise.resolve();
  /** Everything the current process wrote to stderr/stdout (for failure messages). */
  log = '';

  constructor(name: string, clientPort: number, peerPort: number, dataDir: string) {
    this.name = name;
    this.clientUrl = `http://127.0.0.1:${clientPort}`;
    this.peerUrl = `http://127.0.0.1:${peerPort}`;
    this.dataDir = dataDir;
  }

  /** @internal set by the cluster before the first start. */
  configure(initialCluster: string, token: string, extraArgs: readonly string[] = [], ownSession = false): void {
    this.#initialCluster = initialCluster;
    this.#token = token;
    this.#extraArgs = extraArgs;
    this.#ownSession = ownSession;
  }

  get running(): boolean {
    return !!this.#child && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /**
   * Starts the process (again, with its data when it ran before) and resolves
   * once it serves clients. `waitReady: false` resolves once it is spawned
   * (a member that cannot reach a quorum never becomes ready); `ready()`
   * waits later. Rejects when it exits first or `timeoutMs` passes.
   */
  async start(opts: { waitReady?: boolean; timeoutMs?: number } = {}): Promise<void> {
    if (this.running) throw new Error(`etcd member ${this.name} is already running`);
    const args = [
      `--name=${this.name}`,
      `--data-dir=${this.dataDir}`,
      `--listen-client-urls=${this.clientUrl}`,
      `--advertise-client-urls=${this.clientUrl}`,
      `--listen-peer-urls=${this.peerUrl}`,
      `--initial-advertise-peer-urls=${this.peerUrl}`,
      `--initial-cluster=${this.#initialCluster}`,
      `--initial-cluster-token=${this.#token}`,
      `--initial-cluster-state=new`,
      '--logger=zap',
      // Short elections keep failover tests quick on a loaded machine without flapping.
      '--heartbeat-interval=100',
      '--election-timeout=1000',
      ...this.#extraArgs,
    ];
    this.log = '';
    const child = spawn(ETCD_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: this.#ownSession });
    this.#child = child;
    this.#exited = new Promise((resolve) => child.once('close', () => resolve()));
    const ready = new Promise<void>((resolve, reject) => {
      let tail = '';
      const onData = (d: string): void => {
        this.log += d;
        if (this.log.length > 200_000) this.log = this.log.slice(-100_000);
        tail = (tail + d).slice(-4096);
        if (READY.test(tail)) resolve();
      };
      child.stdout!.setEncoding('utf8').on('data', onData);
      child.stderr!.setEncoding('utf8').on('data', onData);
      child.once('error', (err) => reject(new Error(`cannot start ${ETCD_BIN} (is etcd-server installed? scripts/ensure-etcd.mjs installs it): ${err.message}`)));
      child.once('exit', (code, signal) => reject(new Error(`etcd member ${this.name} exited (${code ?? signal}) before serving:\n${this.log.slice(-4000)}`)));
    });
    this.#ready = ready;
    ready.catch(() => undefined);
    if (opts.waitReady === false) return;
    await this.ready(opts.timeoutMs);
  }

  /** Resolves once the current process serves clients; rejects when it exits first or after `timeoutMs` (default 60 s). */
  async ready(timeoutMs = 60_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`etcd member ${this.name} did not serve within ${timeoutMs} ms:\n${this.log.slice(-4000)}`)), timeoutMs);
    });
    try {
      await Promise.race([this.#ready, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGKILLs the process (data kept) and waits for it to be gone. Safe when not running. */
  async kill(): Promise<void> {
    if (this.running) this.#child!.kill('SIGKILL');
    await this.#exited;
  }

  /** SIGTERMs the process and waits for it to be gone (SIGKILL after 10 s). Safe when not running. */
  async stop(): Promise<void> {
    if (!this.running) return this.#exited;
    this.#child!.kill('SIGTERM');
    const timer = setTimeout(() => this.#child?.kill('SIGKILL'), 10_000);
    try {
      await this.#exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** SIGSTOPs / SIGCONTs the process (a paused member, e.g. to simulate a hung disk). */
  pause(): void {
    if (this.running) this.#child!.kill('SIGSTOP');
  }

  resume(): void {
    if (this.running) this.#child!.kill('SIGCONT');
  }
}

/** A running etcd cluster of one or more members on loopback. */
export class EtcdCluster {
  readonly members: EtcdMember[];
  readonly #root: string;

  constructor(members: EtcdMember[], root: string) {
    this.members = members;
    this.#root = root;
  }

  /** Every member's client URL (what `--etcd-endpoints` takes, comma-joined). */
  get endpoints(): string[] {
    return this.members.map((m) => m.clientUrl);
  }

  /**
   * The member that is the raft leader now, asked of the running members
   * (undefined when none answers with a leader). Not cached: leadership moves.
   */
  async leader(): Promise<EtcdMember | undefined> {
    for (const m of this.members) {
      if (!m.running) continue;
      const client = new Etcd3({ hosts: m.clientUrl, dialTimeout: 2_000 });
      try {
        const status = await client.maintenance.status({ deadline: Date.now() + 2_000 });
        if (status.leader === '0') continue;
        for (const other of this.members) {
          if (!other.running) continue;
          const c2 = new Etcd3({ hosts: other.clientUrl, dialTimeout: 2_000 });
          try {
            const s2 = await c2.maintenance.status({ deadline: Date.now() + 2_000 });
            if (s2.header.member_id === status.leader) return other;
          } catch {
            /* try the next */
          } finally {
            c2.close();
          }
        }
      } catch {
        /* try the next */
      } finally {
        client.close();
      }
    }
    return undefined;
  }

  /** Stops every member (SIGKILL; tests do not need a graceful stop) and removes the data. Safe twice. */
  async close(): Promise<void> {
    for (const m of this.members) m.resume();
    await Promise.all(this.members.map((m) => m.kill()));
    rmSync(this.#root, { recursive: true, force: true });
  }
}

/**
 * Starts a fresh etcd cluster (default one member) and resolves once every
 * member serves clients. Each call gets new ports, a new cluster token and
 * new data directories. Close it with `close()` (e.g. in `after`).
 */
export async function startEtcd(opts: StartEtcdOptions = {}): Promise<EtcdCluster> {
  const n = opts.members ?? 1;
  const root = mkdtempSync(join(process.env['BERTH_TEST_ETCD_DIR'] ?? tmpdir(), 'berth-etcd-'));
  const members: EtcdMember[] = [];
  const used = new Set<number>();
  const port = async (): Promise<number> => {
    for (;;) {
      const p = await freePort();
      if (!used.has(p)) {
        used.add(p);
        return p;
      }
    }
  };
  for (let i = 0; i < n; i++) members.push(new EtcdMember(`m${i}`, await port(), await port(), join(root, `m${i}`)));
  const initial = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
  const token = `berth-test-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  for (const m of members) m.configure(initial, token, opts.maxRequestBytes ? [`--max-request-bytes=${opts.maxRequestBytes}`] : [], opts.ownSessions);
  const cluster = new EtcdCluster(members, root);
  try {
    for (const m of members) await m.start({ waitReady: false });
    await Promise.all(members.map((m) => m.ready(opts.timeoutMs)));
  } catch (err) {
    await cluster.close();
    throw err;
  }
  return cluster;
}
