// What an operator asks of a node: start or cancel a drain, mark it eligible
// or ineligible. Each is one store write; the drainer (leader) does the rest.

import { BerthError, type ApiOutcomeCode } from '../../lib/index.js';
import { withNodeEvent, type DrainStrategy, type Node } from '../../structs/index.js';
import { rowKey, type StateStore } from '../state/index.js';

/** A drain or eligibility request refused. Codes: NOT_FOUND (unknown node), INVALID (bad request), CONFLICT (not allowed now). */
export class DrainError extends BerthError<Extract<ApiOutcomeCode, 'NOT_FOUND' | 'INVALID' | 'CONFLICT'>> {}

/** What `node drain -enable` asks for (Nomad's DrainSpec). */
export interface DrainSpec {
  /** 0: no deadline; negative: force (everything at once); otherwise the deadline in ms from now. */
  deadlineMs: number;
  ignoreSystemJobs: boolean;
}

/**
 * Starts a drain of `nodeId` (or changes the drain in progress: its
 * deadline counts from now): the node becomes ineligible and the drainer
 * starts moving its allocations. `meta` is what the operator sent with it
 * (Nomad's drain Meta). Safe to repeat. Throws DrainError NOT_FOUND for an
 * unknown node, INVALID for a malformed spec.
 */
export async function startDrain(store: StateStore, nodeId: string, spec: DrainSpec, now: number, meta?: Record<string, string>): Promise<{ node: Node; index: number }> {
  if (!Number.isFinite(spec.deadlineMs)) throw new DrainError('INVALID', 'the drain deadline must be a number of milliseconds');
  const { index, result } = await store.write((txn) => {
    const node = txn.get('nodes', rowKey(nodeId));
    if (!node) throw new DrainError('NOT_FOUND', `node "${nodeId}" not found`);
    const strategy: DrainStrategy = {
      deadlineMs: spec.deadlineMs < 0 ? -1 : spec.deadlineMs,
      forceDeadline: spec.deadlineMs < 0 ? now : spec.deadlineMs > 0 ? now + spec.deadlineMs : 0,
      ignoreSystemJobs: spec.ignoreSystemJobs,
      startedAt: node.drainStrategy?.startedAt ?? now,
    };
    const next: Node = {
      ...node,
      schedulingEligibility: 'ineligible',
      drainStrategy: strategy,
      lastDrain: { status: 'draining', startedAt: strategy.startedAt, updatedAt: now, message: 'drain started', ...(meta ? { meta } : {}) },
    };
    const message = node.drainStrategy ? 'Node drain strategy updated' : 'Node drain strategy set';
    return txn.put('nodes', withNodeEvent(next, { at: now, subsystem: 'Drain', message }, txn.writeIndex));
  });
  return { node: result, index };
}

/**
 * Cancels the drain of `nodeId`: allocations already moved stay moved; the
 * node becomes eligible again unless `markEligible` is false (Nomad's
 * -keep-ineligible). A node not draining only has its eligibility set.
 * `meta` replaces the last drain's (Nomad's CLI sends the old one with a
 * `cancel_message`). Safe to repeat. Throws DrainError NOT_FOUND for an
 * unknown node.
 */
export async function cancelDrain(store: StateStore, nodeId: string, markEligible: boolean, now: number, meta?: Record<string, string>): Promise<{ node: Node; index: number }> {
  const { index, result } = await store.write((txn) => {
    const node = txn.get('nodes', rowKey(nodeId));
    if (!node) throw new DrainError('NOT_FOUND', `node "${nodeId}" not found`);
    let next: Node = { ...node, drainStrategy: null, schedulingEligibility: markEligible ? 'eligible' : 'ineligible' };
    if (node.drainStrategy) {
      const canceled = { status: 'canceled' as const, startedAt: node.drainStrategy.startedAt, updatedAt: now, message: 'drain canceled by the operator' };
      const kept = meta ?? node.lastDrain?.meta;
      next.lastDrain = kept ? { ...canceled, meta: kept } : canceled;
      next = withNodeEvent(next, { at: now, subsystem: 'Drain', message: 'Node drain disabled' }, txn.writeIndex);
    } else if ((node.schedulingEligibility ?? 'eligible') !== next.schedulingEligibility) {
      next = withNodeEvent(next, eligibilityEvent(markEligible, now), txn.writeIndex);
    }
    return txn.put('nodes', next);
  });
  return { node: result, index };
}

/**
 * Marks `nodeId` eligible or ineligible for new allocations (what is there
 * keeps running). Refused with DrainError CONFLICT when making a draining
 * node eligible: cancel the drain first, as Nomad does. Safe to repeat.
 */
export async function setEligibility(store: StateStore, nodeId: string, eligible: boolean, now: number): Promise<{ node: Node; index: number }> {
  const { index, result } = await store.write((txn) => {
    const node = txn.get('nodes', rowKey(nodeId));
    if (!node) throw new DrainError('NOT_FOUND', `node "${nodeId}" not found`);
    if (eligible && node.drainStrategy) {
      throw new DrainError('CONFLICT', `node "${node.name}" is draining; cancel the drain (node drain -disable) to make it eligible`);
    }
    const want = eligible ? 'eligible' : 'ineligible';
    if ((node.schedulingEligibility ?? 'eligible') === want) return node;
    return txn.put('nodes', withNodeEvent({ ...node, schedulingEligibility: want }, eligibilityEvent(eligible, now), txn.writeIndex));
  });
  return { node: result, index };
}

function eligibilityEvent(eligible: boolean, now: number): { at: number; subsystem: string; message: string } {
  return { at: now, subsystem: 'Cluster', message: eligible ? 'Node marked as eligible for scheduling' : 'Node marked as ineligible for scheduling' };
}
