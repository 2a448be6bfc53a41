// A Berth cluster of real processes for the multi-node scenarios: the
// failover ones (test/cluster) and the bench (bench/cluster.bench.ts) run a
// real etcd (one or three members) and several `berth agent --server` sharing
// it; the node ones (test/agent/node-drain, partition-fencing) one server on its
// own store (etcdMembers: 0). Client agents are given every server's address.
// Nothing is waited on by sleeping: each step waits for what the processes
// print or answer.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { AgentRun, freePort, mountsUnder, until } from './agent-run.js';
import { startEtcd, type EtcdCluster } from './etcd.js';
import { killProcessesNaming } from './procs.js';

export interface ServerProc {
  name: string;
  url: string;
  run: AgentRun;
}

export interface ClusterOptions {
  /** etcd's members (1 or 3); 0 for no etcd: one server (`servers` 1) keeps its state in its data dir. Default 1. */
  etcdMembers?: number;
  servers?: number;
  clients?: number;
  /** The servers' lease TTL (how long a dead leader is waited for). Default "3s". */
  leaseTtl?: string;
  /** Silent nodes are marked down after this and the grace. Default "5s". */
  heartbeatTtl?: string;
  /** How late past the TTL a heartbeat may come (the servers' heartbeat_grace). Default "1s": tests wait for nodes marked down; the agent's own default is 10 s. */
  heartbeatGrace?: string;
  /** The clients' stop_after_server_disconnect (fencing window); the agent's default when unset. */
  stopAfterServerDisconnect?: string;
  /** The servers' etcd write_timeout (how long a change waits for etcd before STORE_UNAVAILABLE); the agent's default (5 s) when unset. */
  etcdWriteTimeout?: string;
  /** etcd's --max-request-bytes (default 1.5 MiB): a job of 10,000 allocations is placed in one write of ~10 MB. */
  etcdMaxRequestBytes?: number;
  /** The servers' log level. Default "debug" (a thousand simulated nodes want "warn"). */
  serverLogLevel?: string;
  /** Flags for each server's node process (e.g. `--cpu-prof`, `--cpu-prof-dir=...`). */
  serverNodeArgs?: readonly string[];
  /**
   * Each server and etcd member in a session of its own (setsid), as if on a
   * machine of its own. Linux shares the CPU between sessions first when
   * sched_autogroup is on (it is here, and on most distributions' kernels),
   * then between the processes of a session: without this, the servers, etcd
   * and whatever the test runs in its own process (the node simulator's
   * threads) all take turns inside one share, and a server waits behind
   * the simulator. The processes are still stopped by `close()`. Default false.
   */
  ownSessions?: boolean;
}

/** What a server says of itself (GET /v1/agent/self). */
interface StatusAnswer {
  /** Its store index. */
  index: number;
  /** The leader's URL as it knows it (http://host:port); null while none is known. */
  leader: string | null;
  isLeader: boolean;
  /** The node connections it holds (the leader holds them all). */
  connectedNodes: number;
}

/** Every process of a test cluster, with helpers to read its state. */
export class Cluster {
  readonly dir: string;
  readonly mgmt: string;
  readonly nodeToken: string;
  /** A read-only token the servers know. */
  readonly readOnly: string;
  etcd!: EtcdCluster;
  readonly servers: ServerProc[] = [];
  readonly clients: AgentRun[] = [];
  /** Each client's data dir (`<dir>/n1`, `<dir>/n2`...), beside `clients`. */
  readonly clientDirs: string[] = [];
  /** Each client's node name (`cl-node-1`...), beside `clients`. */
  readonly clientNames: string[] = [];
  leaseTtl = '3s';

  constructor(opts: { nodeToken?: string } = {}) {
    this.dir = mkdtempSync('/tmp/bcl-');
    this.mgmt = `cl-mgmt-${process.pid}-0123456789`;
    this.readOnly = `cl-ro-${process.pid}-0123456789`;
    this.nodeToken = opts.nodeToken ?? `cl-node-${process.pid}-0123456789`;
  }

  /**
   * Starts etcd, the first server (alone: it leads), then the other servers and the clients
   * at once (each start is a second or more of mostly CPU; none waits on another).
   */
  async start(opts: ClusterOptions = {}): Promise<this> {
    const members = opts.etcdMembers ?? 1;
    if (members > 0) this.etcd = await startEtcd({ members, ...(opts.etcdMaxRequestBytes ? { maxRequestBytes: opts.etcdMaxRequestBytes } : {}), ...(opts.ownSessions ? { ownSessions: true } : {}) });
    if (members === 0 && (opts.servers ?? 1) !== 1) throw new Error('without etcd a cluster has one server');
    const store = (): string =>
      members === 0
        ? ''
        : `  lease_ttl = "${opts.leaseTtl ?? '3s'}"
  store {
    etcd {
      endpoints = [${this.etcd.endpoints.map((e) => `"${e}"`).join(', ')}]
${opts.etcdWriteTimeout ? `      write_timeout = "${opts.etcdWriteTimeout}"\n` : ''}    }
  }
`;
    const ports: number[] = [];
    for (let i = 0; i < (opts.servers ?? (members === 0 ? 1 : 3)); i++) ports.push(await freePort());
    this.leaseTtl = opts.leaseTtl ?? '3s';
    const urls = ports.map((p) => `http://127.0.0.1:${p}`);
    const startServer = async (i: number): Promise<ServerProc> => {
      const name = `s${i + 1}`;
      const config = path.join(this.dir, `${name}.hcl`);
      writeFileSync(
        config,
        `data_dir  = "${this.dir}/${name}"
bind_addr = "127.0.0.1"
ports {
  http = ${ports[i]}
}
tokens {
  management = ["${this.mgmt}"]
  read_only  = ["${this.readOnly}"]
  node       = ["${this.nodeToken}"]
}
server {
  name      = "${name}"
  heartbeat_ttl = "${opts.heartbeatTtl ?? '5s'}"
  heartbeat_grace = "${opts.heartbeatGrace ?? '1s'}"
${store()}}
log_level = "${opts.serverLogLevel ?? 'debug'}"
`,
      );
      const run = new AgentRun(['--server', '--config', config], { nodeArgs: opts.serverNodeArgs ?? [], ownSession: opts.ownSessions ?? false });
      await run.start();
      run.token = this.mgmt;
      return { name, url: urls[i] as string, run };
    };
    const startClient = async (i: number): Promise<AgentRun> => {
      const n = `n${i + 1}`;
      mkdirSync(path.join(this.dir, n));
      const config = path.join(this.dir, `client-${n}.hcl`);
      writeFileSync(
        config,
        `data_dir = "${this.dir}/${n}"
ports {
  http = ${await freePort()}
}
client {
  node_name = "cl-node-${i + 1}"
  servers   = [${urls.map((u) => `"${u}"`).join(', ')}]
  token     = "${this.nodeToken}"
${opts.stopAfterServerDisconnect ? `  stop_after_server_disconnect = "${opts.stopAfterServerDisconnect}"\n` : ''}  options = {
    "driver.raw_exec.enable" = true
  }
}
csi {
  probe_interval = "1s"
  health_timeout = "20s"
}
log_level = "debug"
`,
      );
      const c = new AgentRun(['--client', '--config', config]);
      await c.start();
      c.token = this.mgmt;
      this.clientDirs[i] = path.join(this.dir, n);
      this.clientNames[i] = `cl-node-${i + 1}`;
      return c;
    };
    if (ports.length > 0) this.servers.push(await startServer(0));
    const range = (from: number, to: number): number[] => Array.from({ length: Math.max(0, to - from) }, (_x, k) => from + k);
    const [servers, clients] = await Promise.all([Promise.all(range(1, ports.length).map(startServer)), Promise.all(range(0, opts.clients ?? 2).map(startClient))]);
    this.servers.push(...servers);
    this.clients.push(...clients);
    return this;
  }

  /** The servers still running (a paused one included). */
  live(): ServerProc[] {
    return this.servers.filter((s) => s.run.running);
  }

  /** Every server's URL, as `--address` takes them. */
  addresses(): string {
    return this.servers.map((s) => s.url).join(',');
  }

  async status(s: ServerProc): Promise<StatusAnswer | undefined> {
    try {
      const res = await fetch(`${s.url}/v1/agent/self`, { headers: { authorization: `Bearer ${this.mgmt}` }, signal: AbortSignal.timeout(2_000) });
      if (!res.ok) return undefined;
      const { stats } = (await res.json()) as { stats: Record<string, Record<string, string>> };
      const leaderAddr = stats['nomad']?.['leader_addr'];
      return {
        index: Number(stats['raft']?.['applied_index'] ?? 0),
        leader: leaderAddr ? `http://${leaderAddr}` : null,
        isLeader: stats['nomad']?.['leader'] === 'true',
        connectedNodes: Number(stats['berth']?.['connected_nodes'] ?? 0),
      };
    } catch {
      return undefined;
    }
  }

  /** The running server that says it leads, once every running server names it. */
  async leader(ms = 60_000): Promise<ServerProc> {
    return until(
      'one leader every server names',
      async () => {
        const live = this.live();
        const answers = await Promise.all(live.map((s) => this.status(s)));
        const leaders = live.filter((_s, i) => answers[i]?.isLeader);
        if (leaders.length !== 1) return undefined;
        const leader = leaders[0] as ServerProc;
        return answers.every((a) => a?.leader === leader.url) ? leader : undefined;
      },
      ms,
    );
  }

  /** A GET through `via` (default: any running server), as JSON. */
  async read<T>(p: string, via?: ServerProc): Promise<T> {
    const s = via ?? (this.live()[0] as ServerProc);
    const res = await fetch(s.url + p, { headers: { authorization: `Bearer ${this.mgmt}` } });
    const text = await res.text();
    if (!res.ok) throw new Error(`GET ${p} on ${s.name}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  }

  writeJson(name: string, value: unknown): string {
    const file = path.join(this.dir, name);
    writeFileSync(file, JSON.stringify(value, null, 2));
    return file;
  }

  /** Stops everything; kills what is left of the test's processes; unmounts; removes the directory. */
  async close(): Promise<void> {
    // Each group at once: the clients drain through the servers, so they go first.
    await Promise.all(this.clients.map((c) => c.stop('SIGINT').catch(() => undefined)));
    await Promise.all(
      this.servers.map(async (s) => {
        if (s.run.child?.signalCode === null && s.run.running) s.run.child.kill('SIGCONT');
        await s.run.stop('SIGINT', 20_000).catch(() => undefined);
      }),
    );
    await this.etcd?.close();
    killProcessesNaming(this.dir);
    for (const m of mountsUnder(this.dir).reverse()) spawnSync('umount', ['-l', m]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
