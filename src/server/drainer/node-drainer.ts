// The drainer: a leader loop that advances every node drain (Nomad's
// nomad/drainer). On each change to nodes, allocations, claims or jobs, and
// when a replacement becomes healthy or a deadline falls, it asks
// `decideDrain` what to do for each draining node, marks those allocations
// for migration (desiredTransition.migrate), evaluates their jobs (the
// scheduler stops them and places replacements; a single-writer volume's
// replacement waits, blocked, until the old claim is released), and ends the
// drain when the node is empty and its claims are released.

import { AbortedError, describeError, Lifecycle, silentLogger, systemClock, type Clock, type LifecycleState, type Logger } from '../../lib/index.js';
import { withNodeEvent, type Job, type Node } from '../../structs/index.js';
import { rowKey, StateStoreError, untilChangeOr, type DataTable, type StateReader, type StateStore } from '../state/index.js';
import { decideDrain, jobKey, type DrainDecision } from './drain-decisions.js';

/** What the drainer needs of the job service: evaluating a job at once. */
export interface DrainEvaluator {
  evaluate(namespace: string, jobId: string, opts: { trigger: 'node-drain'; always?: boolean; nodeId?: string }): Promise<unknown>;
}

export interface NodeDrainerOptions {
  store: StateStore;
  jobs: DrainEvaluator;
  clock?: Clock;
  logger?: Logger;
}

const TOPICS: readonly DataTable[] = ['nodes', 'allocations', 'claims', 'jobs'];

/**
 * Lifecycle (lib Lifecycle): start() returns once the loop runs; a second
 * start is a no-op; stop() is safe twice and waits for the pass in flight.
 * A pass never throws: a failure is logged and retried after a second.
 */
export class NodeDrainer {
  readonly #store: StateStore;
  readonly #jobs: DrainEvaluator;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #life: Lifecycle;
  /** Whether the last pass found a node draining (else the loop waits on node changes only). */
  #draining = false;
  /**
   * The keys of the nodes with a drain strategy as of the view at
   * `#drainingAt` (0: not known yet), kept up to date from the nodes' change
   * events: a pass reads the nodes written since, not every node (with 5,000
   * nodes registering, each registration woke a pass that went over them all).
   */
  readonly #drainingKeys = new Set<string>();
  #drainingAt = 0;

  constructor(opts: NodeDrainerOptions) {
    this.#store = opts.store;
    this.#jobs = opts.jobs;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger()).child({ component: 'drainer' });
    this.#life = new Lifecycle({ logger: this.#log });
  }

  get state(): LifecycleState {
    return this.#life.state;
  }

  start(): Promise<void> {
    if (this.#life.state !== 'new') return Promise.resolve();
    return this.#life.start((signal) => void this.#life.track(this.#run(signal)));
  }

  stop(): Promise<void> {
    return this.#life.stop();
  }

  async #run(signal: AbortSignal): Promise<void> {
    let seen = 0;
    let recheckAt: number | undefined;
    while (!signal.aborted) {
      try {
        seen = this.#store.snapshot().index;
        recheckAt = await this.pass();
        // With no node draining, only a node's change can start a drain: the
        // writes of a burst of jobs and allocations do not wake the drainer.
        await untilChangeOr(this.#store, this.#draining ? TOPICS : ['nodes'], seen, recheckAt, this.#clock, signal);
      } catch (err) {
        if (signal.aborted || err instanceof AbortedError) return;
        if (err instanceof StateStoreError && err.code === 'STORE_CLOSED') return;
        this.#log.error({ err: describeError(err) }, 'drain pass failed; retrying');
        await this.#clock.sleep(1000, signal).catch(() => undefined);
      }
    }
  }

  /**
   * One pass over every draining node: marks what may move now, evaluates
   * the jobs concerned, ends finished drains. Returns the earliest clock time
   * a decision may change without a store change. Safe to repeat.
   */
  async pass(): Promise<number | undefined> {
    const snap = this.#store.snapshot();
    const draining = this.#drainingNodes(snap);
    this.#draining = draining.length > 0;
    if (draining.length === 0) return undefined;
    const now = this.#clock.now();
    const nodes = new Map(snap.list('nodes').map((n) => [n.id, n]));
    const allAllocs = snap.list('allocations');
    const jobs = new Map<string, Job>(snap.list('jobs').map((j) => [jobKey(j.namespace, j.id), j]));
    const claims = snap.list('claims');
    let recheckAt: number | undefined;
    for (const node of draining) {
      const keys = new Set(allAllocs.filter((a) => a.nodeId === node.id).map((a) => jobKey(a.namespace, a.jobId)));
      const allocs = allAllocs.filter((a) => keys.has(jobKey(a.namespace, a.jobId)));
      const decision = decideDrain({ node, allocs, jobs, claims: claims.filter((c) => c.nodeId === node.id), nodes, now });
      if (decision.recheckAt !== undefined) recheckAt = Math.min(recheckAt ?? decision.recheckAt, decision.recheckAt);
      await this.#apply(node.id, decision, now);
    }
    return recheckAt;
  }

  /**
   * The nodes of `snap` with a drain strategy, by key. Follows the node
   * events written since the last call; reads every node only the first time
   * and when the store's event history no longer reaches back that far.
   */
  #drainingNodes(snap: StateReader): Node[] {
    const oldest = snap.oldestEventIndex;
    if (this.#drainingAt === 0 || oldest <= 0 || oldest > this.#drainingAt + 1) {
      this.#drainingKeys.clear();
      for (const n of snap.list('nodes', { filter: (n) => !!n.drainStrategy })) this.#drainingKeys.add(rowKey(n.id));
    } else {
      for (const e of snap.events(this.#drainingAt, { topics: ['nodes'] })) {
        if (snap.get('nodes', e.key)?.drainStrategy) this.#drainingKeys.add(e.key);
        else this.#drainingKeys.delete(e.key);
      }
    }
    this.#drainingAt = snap.index;
    const out: Node[] = [];
    for (const key of [...this.#drainingKeys].sort()) {
      const node = snap.get('nodes', key);
      if (node) out.push(node);
    }
    return out;
  }

  async #apply(nodeId: string, decision: DrainDecision, now: number): Promise<void> {
    const marked = new Set(decision.migrate);
    const toEvaluate = new Map<string, { namespace: string; jobId: string }>();
    await this.#store.write((txn) => {
      const node = txn.get('nodes', rowKey(nodeId));
      if (!node?.drainStrategy) return;
      for (const id of marked) {
        const a = txn.get('allocations', rowKey(id));
        if (!a || a.desiredStatus !== 'run' || a.desiredTransition?.migrate) continue;
        txn.put('allocations', { ...a, desiredTransition: { ...a.desiredTransition, migrate: true }, modifyTime: now });
        toEvaluate.set(jobKey(a.namespace, a.jobId), { namespace: a.namespace, jobId: a.jobId });
      }
      const lastDrain = node.lastDrain ?? { status: 'draining' as const, startedAt: node.drainStrategy.startedAt, updatedAt: now, message: '' };
      if (decision.done) {
        // Nomad leaves a drained node ineligible: the operator makes it eligible again when its maintenance is over.
        const drained = { ...node, drainStrategy: null, schedulingEligibility: 'ineligible' as const, lastDrain: { ...lastDrain, status: 'complete' as const, updatedAt: now, message: decision.message } };
        txn.put('nodes', withNodeEvent(drained, { at: now, subsystem: 'Drain', message: 'Node drain complete' }, txn.writeIndex));
      } else if (lastDrain.message !== decision.message) {
        txn.put('nodes', { ...node, lastDrain: { ...lastDrain, updatedAt: now, message: decision.message } });
      }
    });
    if (marked.size > 0) this.#log.info({ nodeId, allocations: [...marked] }, 'allocations marked for migration');
    if (decision.done) this.#log.info({ nodeId }, 'node drain complete');
    for (const { namespace, jobId } of toEvaluate.values()) {
      await this.#jobs.evaluate(namespace, jobId, { trigger: 'node-drain', always: true, nodeId });
    }
  }
}
