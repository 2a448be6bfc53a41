// The scale scenarios' cluster: three `berth agent --server` processes on a
// three-member etcd (test/support/process-cluster.ts), a fleet of simulated
// nodes in this process, and, for CSI, one fake CSI plugin (a real gRPC
// server on a unix socket) whose controller the first simulated node serves
// and whose node plugin every simulated node reports. Helpers read the
// cluster through its HTTP API with the management token.

import path from 'node:path';
import { readFileSync } from 'node:fs';
import { CsiClient, type PluginFingerprint } from '../../../src/csi/index.js';
import type { AllocationListStub, NodeListStub } from '../../../src/api/index.js';
import { FakePlugin } from '../csi-fake/index.js';
import { Cluster as ProcessCluster, type ServerProc } from '../process-cluster.js';
import { SimFleet } from './sim-fleet.js';
import { ThreadedFleet, type Fleet } from './sim-threads.js';

export const SIM_PLUGIN = 'simcsi';

export interface SimClusterOptions {
  nodes: number;
  /** The servers' heartbeat TTL, e.g. "20s". */
  heartbeatTtl: string;
  /** The servers' heartbeat_grace. Default "10s", the agent's own (Nomad's). */
  heartbeatGrace?: string;
  /** The servers' lease TTL. Default "3s". */
  leaseTtl?: string;
  /** How long a simulated batch task runs. Default 0. */
  taskRunMs?: number;
  /** Start the fake CSI plugin and report it on every node. */
  csi?: boolean;
  /** etcd's --max-request-bytes; its 1.5 MiB default refuses the one write that places ~1,500 allocations or more. */
  etcdMaxRequestBytes?: number;
  /** Flags for each server's node process (e.g. `--cpu-prof`). */
  serverNodeArgs?: readonly string[];
  /** The servers and etcd members each in a session of their own, so that they do not share a CPU share with the simulator (ClusterOptions.ownSessions). Default false. */
  ownSessions?: boolean;
  /**
   * Worker threads the simulated nodes are spread over (sim-threads.ts);
   * 0: every node in this thread, where a test may reach each SimNode
   * (`nodes()`). Default 0.
   */
  threads?: number;
  /** Nodes started a second (SimFleetOptions.startPerSecond); unset: all at once. */
  startPerSecond?: number;
  /** Told every 10 s, until every node is on the leader, how many are registered and connected. */
  progress?: (registered: number, connected: number) => void;
}

/** Answers of the API that carry an index. */
interface Indexed<T> {
  index: number;
  body: T;
}

export class SimCluster {
  readonly processes: ProcessCluster;
  fleet!: Fleet;
  fake: FakePlugin | undefined;
  #csiClient: CsiClient | undefined;
  #local: SimFleet | undefined;

  private constructor() {
    this.processes = new ProcessCluster();
  }

  /**
   * Starts etcd, the servers, (the plugin,) and the fleet; resolves once every
   * node is registered and connected to the leader. `signal` gives up (closing
   * everything), with how many nodes got there.
   */
  static async start(opts: SimClusterOptions, signal?: AbortSignal): Promise<SimCluster> {
    const c = new SimCluster();
    try {
      await c.processes.start({ etcdMembers: 3, servers: 3, clients: 0, heartbeatTtl: opts.heartbeatTtl, heartbeatGrace: opts.heartbeatGrace ?? '10s', leaseTtl: opts.leaseTtl ?? '3s', serverLogLevel: 'warn', ...(opts.serverNodeArgs ? { serverNodeArgs: opts.serverNodeArgs } : {}), ...(opts.etcdMaxRequestBytes ? { etcdMaxRequestBytes: opts.etcdMaxRequestBytes } : {}), ...(opts.ownSessions ? { ownSessions: true } : {}) });
      let csi: { pluginId: string; fingerprint: PluginFingerprint; endpoint: string; controller: CsiClient } | undefined;
      if (opts.csi) {
        c.fake = new FakePlugin({ socketPath: path.join(c.processes.dir, 'simcsi.sock'), nodeId: 'sim-ext-0', acceptsNode: (id) => id.startsWith('sim-ext-') });
        await c.fake.start();
        c.#csiClient = new CsiClient({ endpoint: c.fake.endpoint });
        csi = { pluginId: SIM_PLUGIN, fingerprint: await c.#csiClient.fingerprint({ node: true }), endpoint: c.fake.endpoint, controller: c.#csiClient };
      }
      const common = {
        servers: c.processes.servers.map((s) => s.url),
        token: c.processes.nodeToken,
        count: opts.nodes,
        ...(opts.taskRunMs !== undefined ? { taskRunMs: opts.taskRunMs } : {}),
        ...(opts.startPerSecond ? { startPerSecond: opts.startPerSecond } : {}),
      };
      if (opts.threads) {
        c.fleet = new ThreadedFleet({ ...common, threads: opts.threads, ...(csi ? { csi: { pluginId: csi.pluginId, fingerprint: csi.fingerprint, endpoint: csi.endpoint } } : {}) });
      } else {
        c.#local = new SimFleet({ ...common, ...(csi ? { csi: { pluginId: csi.pluginId, fingerprint: csi.fingerprint, controller: csi.controller } } : {}) });
        c.fleet = c.#local;
      }
      c.fleet.start();
      const progress = opts.progress;
      const ticker = progress ? setInterval(() => progress(c.fleet.registeredCount(), c.fleet.connectedCount()), 10_000) : undefined;
      try {
        await c.fleet.waitRegistered(signal).catch((err: unknown) => {
          throw signal?.aborted ? new Error(`registering: ${c.fleet.registeredCount()} of ${opts.nodes} nodes registered when the deadline passed`) : err;
        });
        await c.allOnLeader(signal);
      } finally {
        clearInterval(ticker);
      }
      return c;
    } catch (err) {
      await c.close();
      throw err;
    }
  }

  /**
   * Resolves with the leader once every node's connection is open to it. A
   * leader that changes meanwhile (a loaded machine) is asked for again.
   */
  async allOnLeader(signal?: AbortSignal): Promise<ServerProc> {
    for (;;) {
      if (signal?.aborted) throw new Error(`connecting to the leader: ${this.fleet.connectedCount()} of the nodes connected when the deadline passed`);
      const leader = await this.leader();
      try {
        await this.fleet.waitConnected(leader.url, AbortSignal.timeout(15_000));
        return leader;
      } catch {
        // Not all there yet, or the leader moved: ask who leads now.
      }
    }
  }

  /** The simulated nodes themselves, for a test that reaches into one; only a fleet in this thread (`threads` 0) has them. */
  get simNodes(): SimFleet['nodes'] {
    if (!this.#local) throw new Error('the simulated nodes run in worker threads: only their mirrored state is here');
    return this.#local.nodes;
  }

  leader(ms?: number): Promise<ServerProc> {
    return this.processes.leader(ms);
  }

  /** One API call with the management token through `via` (default the first running server); throws on an error status. */
  async call<T>(method: string, p: string, body?: unknown, via?: ServerProc): Promise<Indexed<T>> {
    const s = via ?? (this.processes.live()[0] as ServerProc);
    const res = await fetch(s.url + p, {
      method,
      // Errors as JSON: whether one may be retried is in its details.
      headers: { authorization: `Bearer ${this.processes.mgmt}`, accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${p} on ${s.name}: ${res.status} ${text.slice(0, 500)}`);
    return { index: Number(res.headers.get('x-nomad-index') ?? res.headers.get('x-berth-index') ?? 0), body: (text === '' ? undefined : JSON.parse(text)) as T };
  }

  /**
   * `call`, retried while the cluster answers 503 with a retryable error (an
   * election under way, the controller's node connection moving to the new
   * leader), as the CLI's `--retry-for` does; gives up after `forMs` (default 60 s).
   */
  async callRetrying<T>(method: string, p: string, body?: unknown, forMs = 60_000): Promise<Indexed<T>> {
    const deadline = Date.now() + forMs;
    for (;;) {
      try {
        return await this.call<T>(method, p, body);
      } catch (err) {
        if (Date.now() > deadline || !/: 503 .*"retryable":true/.test(String((err as Error).message))) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  /**
   * Resolves with the job's allocations once `done(allocs)` holds, reading
   * them with blocking queries (each answer comes when they changed; with
   * `pollMs`, at most one read per that many ms).
   */
  async waitAllocs(jobId: string, done: (allocs: AllocationListStub[]) => boolean, opts: { signal?: AbortSignal; pollMs?: number } = {}): Promise<AllocationListStub[]> {
    let index = 0;
    for (let first = true; ; first = false) {
      if (opts.signal?.aborted) throw new Error(`job ${jobId}: the allocations did not get there in time`);
      // A bench reading thousands of allocations must not answer every write with the whole list: at most one read per `pollMs`.
      if (!first && opts.pollMs) await new Promise((r) => setTimeout(r, opts.pollMs));
      const q = index ? `?index=${index}&wait=5s` : '';
      const { index: next, body } = await this.call<AllocationListStub[]>('GET', `/v1/job/${encodeURIComponent(jobId)}/allocations${q}`);
      if (done(body)) return body;
      index = next;
    }
  }

  /** The nodes as `GET /v1/nodes` lists them (Nomad's NodeListStub). */
  nodes(via?: ServerProc): Promise<NodeListStub[]> {
    return this.call<NodeListStub[]>('GET', '/v1/nodes', undefined, via).then((r) => r.body);
  }

  /** CPU seconds (user + system) the server's process used so far. */
  cpuSeconds(s: ServerProc): number {
    const pid = s.run.child?.pid;
    if (!pid) return 0;
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // After "pid (comm) ": state is field 0, utime 11, stime 12 (in clock ticks, 100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  }

  async close(): Promise<void> {
    await this.fleet?.stop().catch(() => undefined);
    this.#csiClient?.close();
    await this.fake?.stop().catch(() => undefined);
    await this.processes.close();
  }
}

/** A batch job of `count` allocations in groups of at most 1,000 (the per-group limit), each one task of 100 MHz and 64 MB. */
export function simBatchJob(id: string, count: number): Record<string, unknown> {
  const groups = [];
  for (let g = 0; g * 1000 < count; g++) groups.push({ name: `g${g}`, count: Math.min(1000, count - g * 1000), tasks: [simTask()] });
  return { id, type: 'batch', groups };
}

/** A service job of `count` (at most 1,000) allocations that run until stopped. */
export function simServiceJob(id: string, count: number): Record<string, unknown> {
  return { id, type: 'service', groups: [{ name: 'web', count, tasks: [simTask()] }] };
}

/** A batch job of `count` (at most 1,000) allocations, allocation i claiming CSI volume `<source>[i]` of the fake plugin. */
export function simVolumeJob(id: string, source: string, count: number): Record<string, unknown> {
  return {
    id,
    type: 'batch',
    groups: [
      {
        name: 'db',
        count,
        volumes: { data: { type: 'csi', source, perAlloc: true, accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
        tasks: [{ ...simTask(), volumeMounts: [{ volume: 'data', destination: '/data' }] }],
      },
    ],
  };
}

function simTask(): Record<string, unknown> {
  return { name: 't', driver: 'raw_exec', config: { command: '/bin/true' }, resources: { cpuMhz: 100, memoryMb: 64 } };
}
