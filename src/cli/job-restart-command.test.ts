// `job restart`'s flags: -batch-size as a count or a percentage of the
// allocations to restart, batch ordinals as Nomad prints them, and the
// refusals (exit 2, before anything is sent: the address answers nothing).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EXIT } from './exit-codes.js';
import { batchCount, ordinal, parseBatchSize } from './job-restart-command.js';
import { runCli } from './program.js';

describe('job restart -batch-size', () => {
  it('reads a count or a percentage', () => {
    assert.deepEqual(parseBatchSize('1'), { value: 1, percent: false });
    assert.deepEqual(parseBatchSize('12'), { value: 12, percent: false });
    assert.deepEqual(parseBatchSize('25%'), { value: 25, percent: true });
    assert.deepEqual(parseBatchSize(' 100% '), { value: 100, percent: true });
  });

  it('refuses zero, fractions, signs, units and percentages over 100', () => {
    for (const bad of ['0', '0%', '-1', '1.5', '2x', '10%20%', '%', '', 'two', '101%']) {
      assert.throws(() => parseBatchSize(bad), /invalid -batch-size/, bad);
    }
  });

  it('turns a percentage into a number of allocations, rounded up, at least one', () => {
    assert.equal(batchCount(parseBatchSize('2'), 5), 2);
    assert.equal(batchCount(parseBatchSize('50%'), 5), 3);
    assert.equal(batchCount(parseBatchSize('10%'), 5), 1);
    assert.equal(batchCount(parseBatchSize('100%'), 7), 7);
    assert.equal(batchCount(parseBatchSize('1%'), 1), 1);
  });

  it('names batches 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, 22nd, 111th', () => {
    assert.deepEqual([1, 2, 3, 4, 11, 12, 13, 21, 22, 111].map(ordinal), ['1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '22nd', '111th']);
  });
});

describe('job restart refusals', () => {
  async function cli(...argv: string[]): Promise<{ code: number; err: string }> {
    let err = '';
    const code = await runCli(['job', 'restart', ...argv, '--address', 'http://127.0.0.1:1', '--retry-for', '0'], {
      io: { stdout: () => undefined, stderr: (t) => void (err += t) },
    });
    return { code, err };
  }

  it('refuses bad flags with a usage error naming the flag', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['-batch-size', '0', 'web'], /invalid -batch-size "0": it must be greater than zero/],
      [['-batch-size', 'x', 'web'], /invalid -batch-size "x"/],
      [['-batch-wait', 'soon', 'web'], /invalid -batch-wait "soon"/],
      // The test runs without a terminal: nobody could answer.
      [['-batch-wait', 'ask', 'web'], /-batch-wait ask needs a terminal/],
      [['-on-error', 'retry', 'web'], /invalid -on-error "retry"/],
      [['-all-tasks', '-task', 't', 'web'], /-all-tasks cannot be used with -task/],
      [['-reschedule', '-task', 't', 'web'], /-reschedule cannot be used with -task/],
    ];
    for (const [argv, message] of cases) {
      const r = await cli(...argv);
      assert.equal(r.code, EXIT.USAGE, `${argv.join(' ')}: ${r.err}`);
      assert.match(r.err, message, argv.join(' '));
    }
  });
});
