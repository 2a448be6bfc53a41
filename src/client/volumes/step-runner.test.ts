import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { GrpcCodeName } from '../../csi/index.js';
import { FakeHarness, QUICK_BACKOFF, RW } from '../../../test/support/client-volumes.js';
import { STEP_TABLE, stepOutcome, type StepOp, type StepResult } from './step-runner.js';
import { ClientVolumeError } from './client-volume-error.js';
import { PUBLISH_BUCKET, STAGE_BUCKET, type PublishRecord, type StageRecord } from './volume-records.js';

describe('the step table', () => {
  it('leaves every step in the state the CSI rules ask for, for every result', () => {
    const rows: Array<[undoes: boolean, result: StepResult, hadRecord: boolean, expected: string]> = [
      // stage, publish
      [false, 'ok', false, 'done'],
      [false, 'ok', true, 'done'],
      [false, 'final', false, 'removed'],
      [false, 'final', true, 'uncertain'], // an earlier attempt may have happened
      [false, 'uncertain', false, 'uncertain'],
      [false, 'uncertain', true, 'uncertain'],
      // unpublish, unstage
      [true, 'ok', true, 'removed'],
      [true, 'final', true, 'restored'],
      [true, 'uncertain', true, 'uncertain'],
    ];
    for (const [undoes, result, hadRecord, expected] of rows) {
      assert.equal(stepOutcome(undoes, result, hadRecord), expected, `${undoes ? 'undo' : 'do'} ${result} ${hadRecord ? 'after a record' : 'first'}`);
    }
  });

  it('names, per step, its records, whether it undoes, and the errors it reports', () => {
    const summary = Object.fromEntries(
      Object.entries(STEP_TABLE).map(([op, row]) => [op, [row.op, row.records, row.undoes, row.failedCode, row.uncertainCode, row.doneMessage]]),
    );
    assert.deepEqual(summary, {
      stage: ['stage', 'stages', false, 'CLIENT_VOLUME_MOUNT_FAILED', 'CLIENT_VOLUME_MOUNT_UNCERTAIN', 'volume staged'],
      publish: ['publish', 'publications', false, 'CLIENT_VOLUME_MOUNT_FAILED', 'CLIENT_VOLUME_MOUNT_UNCERTAIN', 'volume published'],
      unpublish: ['unpublish', 'publications', true, 'CLIENT_VOLUME_UNMOUNT_FAILED', 'CLIENT_VOLUME_UNMOUNT_FAILED', 'volume unpublished'],
      unstage: ['unstage', 'stages', true, 'CLIENT_VOLUME_UNMOUNT_FAILED', 'CLIENT_VOLUME_UNMOUNT_FAILED', 'volume unstaged'],
    });
  });
});

const RPC = { stage: 'NodeStageVolume', publish: 'NodePublishVolume', unpublish: 'NodeUnpublishVolume', unstage: 'NodeUnstageVolume' } as const;

/** A code the plugin answers: a final one, or an uncertain one on every attempt the backoff allows. */
const ANSWER: Record<'final' | 'uncertain', { code: GrpcCodeName; times: number }> = {
  final: { code: 'FAILED_PRECONDITION', times: 1 },
  uncertain: { code: 'ABORTED', times: QUICK_BACKOFF.maxAttempts ?? 3 },
};

describe('each step on the fake plugin', () => {
  let h: FakeHarness;
  const vol = { id: 'vol-1' };

  beforeEach(async () => {
    h = new FakeHarness();
    await h.fake.start();
  });

  afterEach(async () => {
    await h.close();
  });

  const stage = (): StageRecord | undefined => h.store.bucket<StageRecord>(STAGE_BUCKET).list()[0]?.value;
  const publication = (): PublishRecord | undefined => h.store.bucket<PublishRecord>(PUBLISH_BUCKET).list()[0]?.value;

  const cases: Array<{ step: StepOp; result: 'final' | 'uncertain'; code: string; left: () => [string | undefined, string | undefined] }> = [
    { step: 'stage', result: 'final', code: 'CLIENT_VOLUME_MOUNT_FAILED', left: () => [stage()?.op, stage()?.state] },
    { step: 'stage', result: 'uncertain', code: 'CLIENT_VOLUME_MOUNT_UNCERTAIN', left: () => [stage()?.op, stage()?.state] },
    { step: 'publish', result: 'final', code: 'CLIENT_VOLUME_MOUNT_FAILED', left: () => [publication()?.op, publication()?.state] },
    { step: 'publish', result: 'uncertain', code: 'CLIENT_VOLUME_MOUNT_UNCERTAIN', left: () => [publication()?.op, publication()?.state] },
    { step: 'unpublish', result: 'final', code: 'CLIENT_VOLUME_UNMOUNT_FAILED', left: () => [publication()?.op, publication()?.state] },
    { step: 'unpublish', result: 'uncertain', code: 'CLIENT_VOLUME_UNMOUNT_FAILED', left: () => [publication()?.op, publication()?.state] },
    { step: 'unstage', result: 'final', code: 'CLIENT_VOLUME_UNMOUNT_FAILED', left: () => [stage()?.op, stage()?.state] },
    { step: 'unstage', result: 'uncertain', code: 'CLIENT_VOLUME_UNMOUNT_FAILED', left: () => [stage()?.op, stage()?.state] },
  ];
  const expected: Record<string, [string | undefined, string | undefined]> = {
    'stage final': [undefined, undefined],
    'stage uncertain': ['stage', 'uncertain'],
    'publish final': [undefined, undefined],
    'publish uncertain': ['publish', 'uncertain'],
    'unpublish final': ['publish', 'done'],
    'unpublish uncertain': ['unpublish', 'uncertain'],
    'unstage final': ['stage', 'done'],
    'unstage uncertain': ['unstage', 'uncertain'],
  };

  for (const c of cases) {
    const left = expected[`${c.step} ${c.result}`]!;
    const what = left[0] ? `leaves its record "${left.join(' ')}"` : 'removes its record';
    it(`${c.step} answered with ${c.result === 'final' ? 'a final' : 'an uncertain'} code reports ${c.code} and ${what}`, async () => {
      const vm = await h.manager();
      const undoes = c.step === 'unpublish' || c.step === 'unstage';
      if (undoes) await vm.mountVolume(vol, 'a1', RW);
      h.fake.failNext(RPC[c.step], ANSWER[c.result].code, 'scripted', ANSWER[c.result].times);
      const act = undoes ? vm.unmountVolume(vol, 'a1', RW) : vm.mountVolume(vol, 'a1', RW);
      await assert.rejects(act, (err) => err instanceof ClientVolumeError && err.code === c.code);
      assert.deepEqual(c.left(), left);
      assert.equal(h.fake.callsTo(RPC[c.step]).length, ANSWER[c.result].times, 'a final code is not retried; an uncertain one is, up to the policy');
    });
  }

  it('keeps a publish uncertain when a retry of it is refused: the first attempt may have happened', async () => {
    const vm = await h.manager();
    h.fake.failNext('NodePublishVolume', 'ABORTED', 'scripted', ANSWER.uncertain.times);
    await assert.rejects(vm.mountVolume(vol, 'a1', RW), (err) => err instanceof ClientVolumeError && err.code === 'CLIENT_VOLUME_MOUNT_UNCERTAIN');
    h.fake.failNext('NodePublishVolume', 'FAILED_PRECONDITION', 'scripted');
    await assert.rejects(vm.mountVolume(vol, 'a1', RW), (err) => err instanceof ClientVolumeError && err.code === 'CLIENT_VOLUME_MOUNT_UNCERTAIN');
    assert.deepEqual([publication()?.op, publication()?.state], ['publish', 'uncertain']);
  });

  it('removes the directory the CO made when a first stage is refused', async () => {
    const vm = await h.manager();
    h.fake.failNext('NodeStageVolume', 'FAILED_PRECONDITION', 'scripted');
    await assert.rejects(vm.mountVolume(vol, 'a1', RW));
    const staging = h.fake.callsTo('NodeStageVolume')[0]!.request['stagingTargetPath'] as string;
    assert.ok(!existsSync(staging));
  });
});
