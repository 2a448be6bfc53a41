// Watches the node's allocations incrementally, as Nomad's client does: a
// blocking read (GET /v1/node/:id/allocation-indexes?index=N&wait=..)
// answers each allocation's ID and alloc modify index, which the node's own
// status reports leave alone; the watcher then pulls only the allocations
// whose index differs from the one it holds (POST .../allocations/pull, one
// request per thousand), naming every job it holds, so that each job comes
// once and only when it does not hold that version. The read itself names
// what the node holds (`since`, `heldJobs`), so a server of this build
// sends the changed allocations in its answer and the pull is left for what
// did not fit (or a server that sends none). Every change goes to
// the agent, in order, one at a time, as what changed and what the server
// lists now. A list older than one already
// seen (a server that came back with stale state) is never handed on. A
// server older than this agent (no such route) is read the old way: the
// whole list, each allocation with its job.

import {
  BACKOFF,
  backoffDelay,
  describeError,
  Lifecycle,
  silentLogger,
  systemClock,
  type BackoffPolicy,
  type Clock,
  type LifecycleState,
  type Logger,
} from '../../lib/index.js';
import { ALLOC_INLINE_HELD_JOBS_MAX_CHARS, ALLOC_PULL_MAX, encodeHeldJobs, type AllocIndexesAnswer, type HeldJob, type Job } from '../../structs/index.js';
import { isNoRoute, type NodeAllocation, type ServerApi } from './server-api.js';

/** What changed since the previous call of onAllocations. */
export interface AllocUpdate {
  /** The allocations that are new or that the server changed (every allocation on the first call). */
  changed: NodeAllocation[];
  /** The IDs the server no longer lists for this node. */
  removed: string[];
  /** Every allocation the server lists now, by ID. */
  current: ReadonlyMap<string, NodeAllocation>;
}

export interface AllocWatcherOptions {
  api: ServerApi;
  nodeId: string;
  /**
   * Told of each change: the server's whole list now, its index, and what
   * changed. Called one at a time; the next read starts after it resolves.
   * A throw is logged, and the same change is offered again after a backoff.
   * A change may be empty (only the node's own status reports were written):
   * its index is still worth keeping, as the floor below which a server
   * that restarted from older state is not obeyed.
   */
  onAllocations: (allocs: NodeAllocation[], index: number, update: AllocUpdate) => Promise<void> | void;
  /** The highest index handed on before (the agent keeps it across restarts); lists below it are ignored. */
  minIndex?: number;
  /** How long one blocking read may wait on the server. Default 5 min. */
  waitMs?: number;
  clock?: Clock;
  logger?: Logger;
  backoff?: BackoffPolicy;
  random?: () => number;
}

/** What the watcher did, for benchmarks and tests. */
export interface AllocWatcherCounts {
  /** Index (or, from an old server, whole-list) reads answered. */
  reads: number;
  /** Index reads that brought changed allocations with them (counted in reads too). */
  inlined: number;
  /** Pull requests answered. */
  pulls: number;
  /** Allocations received (pulled, sent with the indexes, or in whole lists). */
  allocations: number;
  /** Jobs received (each allocation's job counts in a whole list). */
  jobs: number;
}

interface Held {
  alloc: NodeAllocation;
  /** The alloc modify index the server gave with it (its modify index when read from an old server). */
  allocModifyIndex: number;
}

type Pulled = NonNullable<AllocIndexesAnswer['pulled']>;
type Read = { index: number; indexes: Record<string, number>; pulled?: Pulled } | { index: number; list: NodeAllocation[] };

/**
 * Lifecycle (lib Lifecycle): `start()` begins watching in the background (a
 * second start, or one after stop, does nothing); `stop()` aborts the read
 * in flight and waits for the loop (and a callback in progress); safe
 * twice. `waitFirstList()` resolves once the first list was handed on.
 * Never throws for a server that is down: it retries with backoff.
 */
export class AllocWatcher {
  readonly #opts: AllocWatcherOptions;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #life: Lifecycle;
  readonly #waiters = new Set<() => void>();
  #index: number;
  #lists = 0;
  #held = new Map<string, Held>();
  #oldServerTold = false;
  readonly #counts: AllocWatcherCounts = { reads: 0, inlined: 0, pulls: 0, allocations: 0, jobs: 0 };

  constructor(opts: AllocWatcherOptions) {
    this.#opts = opts;
    this.#logger = (opts.logger ?? silentLogger()).child({ component: 'alloc-watcher' });
    this.#clock = opts.clock ?? systemClock;
    this.#index = opts.minIndex ?? 0;
    this.#life = new Lifecycle({ logger: this.#logger });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  /** The index of the last list handed on (0 before the first). */
  get index(): number {
    return this.#index;
  }

  /** How many lists were handed on. */
  get lists(): number {
    return this.#lists;
  }

  /** Reads, pulls, allocations and jobs received so far (a copy). */
  get counts(): AllocWatcherCounts {
    return { ...this.#counts };
  }

  start(): void {
    this.#life.startLoop((signal) => this.#run(signal));
  }

  /** Resolves after the first list was handed on, or on stop. */
  waitFirstList(): Promise<void> {
    if (this.#lists > 0 || this.#life.stopRequested) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.add(resolve));
  }

  stop(): Promise<void> {
    const stopped = this.#life.stop();
    for (const w of this.#waiters) w();
    this.#waiters.clear();
    return stopped;
  }

  async #run(signal: AbortSignal): Promise<void> {
    let failures = 0;
    // The first read answers at once; later ones block until something changed.
    let blocking = false;
    const backOff = async (): Promise<void> => {
      failures++;
      await this.#clock.sleep(backoffDelay(this.#opts.backoff ?? BACKOFF.reconnect, failures, this.#opts.random), signal);
    };
    while (!signal.aborted) {
      try {
        const read = await this.#read(blocking ? { index: this.#index, waitMs: this.#opts.waitMs ?? 300_000, signal } : { signal });
        if (read.index < this.#index) {
          // The server's state is older than what we acted on: wait for it to catch up.
          this.#logger.warn({ index: read.index, seen: this.#index }, 'the server sent an allocation list older than one already seen; ignoring it');
          // Before the first list is handed on, poll: a blocking read would wait for the server to pass an index it may already be at.
          blocking = this.#lists > 0;
          await backOff();
          continue;
        }
        if (this.#lists > 0 && read.index === this.#index) {
          blocking = true;
          continue;
        }
        const next = 'list' in read ? this.#fromList(read.list) : await this.#pull(read, signal);
        if (!next) {
          // A pull answered from state older than the indexes: that server is behind; ask again.
          this.#logger.warn({ index: read.index }, 'the server answered the allocation pull from state older than its indexes; retrying');
          blocking = false;
          await backOff();
          continue;
        }
        const current = new Map<string, NodeAllocation>();
        for (const [id, h] of next.held) current.set(id, h.alloc);
        await this.#opts.onAllocations([...current.values()], read.index, { changed: next.changed, removed: next.removed, current });
        this.#held = next.held;
        this.#index = read.index;
        this.#lists++;
        blocking = true;
        failures = 0;
        for (const w of this.#waiters) w();
        this.#waiters.clear();
      } catch (err) {
        if (signal.aborted) break;
        failures++;
        const delayMs = backoffDelay(this.#opts.backoff ?? BACKOFF.reconnect, failures, this.#opts.random);
        this.#logger.warn({ err: describeError(err), failures, delayMs }, 'reading the allocations failed');
        try {
          await this.#clock.sleep(delayMs, signal);
        } catch {
          break;
        }
      }
    }
  }

  /** The indexes; from a server without them, the whole list. */
  async #read(opts: { index?: number; waitMs?: number; signal: AbortSignal }): Promise<Read> {
    const { api, nodeId } = this.#opts;
    try {
      // What the node holds, so that the answer can carry what changed; a node holding too many jobs to name in a URL pulls instead.
      const heldJobs = [...this.#heldJobs().values()].map(heldJobOf);
      const inline = encodeHeldJobs(heldJobs).length <= ALLOC_INLINE_HELD_JOBS_MAX_CHARS ? { since: this.#held.size > 0 ? this.#index : 0, heldJobs } : undefined;
      const { index, allocations, pulled } = await api.allocationIndexes(nodeId, { ...opts, ...(inline ? { inline } : {}) });
      this.#counts.reads++;
      if (!pulled) return { index, indexes: allocations };
      this.#counts.inlined++;
      return { index, indexes: allocations, pulled };
    } catch (err) {
      if (!isNoRoute(err)) throw err;
      if (!this.#oldServerTold) {
        this.#oldServerTold = true;
        this.#logger.warn({ server: api.address }, 'the server is older than this agent (no incremental allocation reads): reading whole allocation lists from it; upgrade the servers');
      }
      const { index, allocations } = await api.allocations(nodeId, opts);
      this.#counts.reads++;
      this.#counts.allocations += allocations.length;
      this.#counts.jobs += allocations.filter((a) => a.job).length;
      return { index, list: allocations };
    }
  }

  /** A whole list (an old server's) as a change: what is new or has another modify index. */
  #fromList(list: NodeAllocation[]): { held: Map<string, Held>; changed: NodeAllocation[]; removed: string[] } {
    const held = new Map<string, Held>();
    const changed: NodeAllocation[] = [];
    for (const alloc of list) {
      held.set(alloc.id, { alloc, allocModifyIndex: alloc.modifyIndex });
      if (this.#held.get(alloc.id)?.alloc.modifyIndex !== alloc.modifyIndex) changed.push(alloc);
    }
    return { held, changed, removed: [...this.#held.keys()].filter((id) => !held.has(id)) };
  }

  /**
   * Takes the allocations whose alloc modify index differs from the one
   * held: those the indexes answer brought, the rest pulled; undefined when
   * a pull came from state older than the answer's index.
   */
  async #pull(read: { index: number; indexes: Record<string, number>; pulled?: Pulled }, signal: AbortSignal): Promise<{ held: Map<string, Held>; changed: NodeAllocation[]; removed: string[] } | undefined> {
    const { index, indexes } = read;
    const held = new Map<string, Held>();
    let wanted: string[] = [];
    for (const [id, allocModifyIndex] of Object.entries(indexes)) {
      const h = this.#held.get(id);
      if (h && h.allocModifyIndex === allocModifyIndex) held.set(id, h);
      else {
        wanted.push(id);
        // Until the pull answers (a deleted one is not in the answer): the copy held.
        if (h) held.set(id, h);
      }
    }
    const removed = [...this.#held.keys()].filter((id) => !(id in indexes));
    const changed: NodeAllocation[] = [];
    const heldJobs = this.#heldJobs();
    /** Takes an answer's allocations (each with the number `numberOf` gives) and jobs; a job it brings replaces the one held, for the parts that follow too. */
    const take = (answer: Pulled, numberOf: (alloc: NodeAllocation) => number | undefined): void => {
      this.#counts.allocations += answer.allocations.length;
      this.#counts.jobs += answer.jobs.length;
      for (const job of answer.jobs) heldJobs.set(`${job.namespace}\u0000${job.id}`, job);
      for (const alloc of answer.allocations) {
        const job = heldJobs.get(`${alloc.namespace}\u0000${alloc.jobId}`);
        const item: NodeAllocation = job ? { ...alloc, job } : alloc;
        held.set(alloc.id, { alloc: item, allocModifyIndex: numberOf(alloc) ?? alloc.modifyIndex });
        changed.push(item);
      }
    };
    if (read.pulled) {
      // Read from the same state as the indexes: each one's number is the answer's. Only those it lacks are taken (a pull of newer state may have sent it some already).
      const wantedOnes = new Set(wanted);
      const brought = read.pulled.allocations.filter((a) => wantedOnes.has(a.id));
      take({ allocations: brought, jobs: read.pulled.jobs }, (alloc) => indexes[alloc.id]);
      for (const a of brought) wantedOnes.delete(a.id);
      wanted = wanted.filter((id) => wantedOnes.has(id));
    }
    for (let at = 0; at < wanted.length; at += ALLOC_PULL_MAX) {
      const ids = wanted.slice(at, at + ALLOC_PULL_MAX);
      const answer = await this.#opts.api.pullAllocations(this.#opts.nodeId, { ids, minIndex: index, heldJobs: [...heldJobs.values()].map(heldJobOf) }, { signal });
      this.#counts.pulls++;
      if (answer.index < index) return undefined;
      take(answer, (alloc) => answer.allocModifyIndex[alloc.id]);
    }
    // In the server's order (by ID), as a whole list would be.
    const ordered = new Map<string, Held>();
    for (const id of Object.keys(indexes)) {
      const h = held.get(id);
      if (h) ordered.set(id, h);
    }
    return { held: ordered, changed, removed };
  }

  /**
   * Every job the node holds (with any of its allocations), newest version
   * of each, by namespace and ID: the server sends a job again only when it
   * is not one of these, so a new allocation of a job the node runs already
   * comes without it (a thousand nodes each pulling a 10,000-allocation job
   * in a few parts were sent the job with every part: nearly half of what
   * they downloaded).
   */
  #heldJobs(): Map<string, Job> {
    const heldJobs = new Map<string, Job>();
    for (const h of this.#held.values()) {
      const job = h.alloc.job;
      if (!job) continue;
      const key = `${job.namespace}\u0000${job.id}`;
      const other = heldJobs.get(key);
      if (!other || other.createIndex < job.createIndex || (other.createIndex === job.createIndex && other.version < job.version)) heldJobs.set(key, job);
    }
    return heldJobs;
  }
}

function heldJobOf(job: Job): HeldJob {
  return { namespace: job.namespace, id: job.id, createIndex: job.createIndex, version: job.version };
}
