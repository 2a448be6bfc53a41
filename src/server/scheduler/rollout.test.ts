// How many outdated allocations a rolling group may replace now.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mergeUpdate, type Allocation, type Deployment, type TaskGroup } from '../../structs/index.js';
import { rolloutBudget } from './rollout.js';

const group = (update: Parameters<typeof mergeUpdate>[0] | undefined): TaskGroup =>
  ({ name: 'g', count: 4, ...(update ? { update: mergeUpdate(update) } : {}) }) as unknown as TaskGroup;

function deployment(status: Deployment['status'], promoted = true, placedCanaries: string[] = []): Deployment {
  return {
    id: 'd1', namespace: 'default', jobId: 'web', jobVersion: 1, jobCreateIndex: 1, status, statusDescription: '', createTime: 0, modifyTime: 0, createIndex: 1, modifyIndex: 1,
    taskGroups: { g: { autoRevert: false, autoPromote: false, promoted, placedCanaries, desiredCanaries: placedCanaries.length ? 1 : 0, desiredTotal: 4, placedAllocs: 0, healthyAllocs: 0, unhealthyAllocs: 0, progressDeadlineMs: 0, requireProgressBy: 0 } },
  };
}

const alloc = (id: string, healthy?: boolean): Allocation =>
  ({ id, deploymentId: 'd1', clientStatus: 'running', desiredStatus: 'run', deploymentStatus: { canary: false, timestamp: 0, ...(healthy === undefined ? {} : { healthy }) } }) as unknown as Allocation;

describe('rollout budget', () => {
  it('without an update block (or max_parallel = 0) everything is replaced at once', () => {
    assert.equal(rolloutBudget(group(undefined), [], 0, 4, undefined).limit, Infinity);
    assert.equal(rolloutBudget(group({ maxParallel: 0 }), [], 0, 4, undefined).limit, Infinity);
  });
  it('max_parallel less the new allocations not yet healthy and the replacements still waiting to be placed', () => {
    const g = group({ maxParallel: 2 });
    assert.deepEqual(rolloutBudget(g, [], 0, 4, undefined), { limit: 2, canary: false });
    assert.equal(rolloutBudget(g, [alloc('a')], 0, 3, deployment('running')).limit, 1);
    assert.equal(rolloutBudget(g, [alloc('a', true)], 1, 3, deployment('running')).limit, 1, 'a replacement waiting for its volume counts');
    assert.equal(rolloutBudget(g, [alloc('a', true), alloc('b', true)], 0, 2, deployment('running')).limit, 2);
  });
  it('an unhealthy allocation, a paused or a failed deployment replace nothing', () => {
    const g = group({ maxParallel: 2 });
    assert.equal(rolloutBudget(g, [alloc('a', false)], 0, 3, deployment('running')).limit, 0);
    assert.equal(rolloutBudget(g, [], 0, 4, deployment('paused')).limit, 0);
    assert.equal(rolloutBudget(g, [], 0, 4, deployment('failed')).limit, 0);
  });
  it('canaries first, then nothing until promoted; none for a new job', () => {
    const g = group({ maxParallel: 2, canary: 1 });
    assert.deepEqual(rolloutBudget(g, [], 0, 4, undefined), { limit: 1, canary: true });
    assert.deepEqual(rolloutBudget(g, [alloc('c', true)], 0, 3, deployment('running', false, ['c'])), { limit: 0, canary: true });
    assert.deepEqual(rolloutBudget(g, [alloc('c', true)], 0, 3, deployment('running', true, ['c'])), { limit: 2, canary: false });
    assert.equal(rolloutBudget(g, [], 4, 0, undefined).canary, false);
  });
});
