// The short chaos run of `npm test`: a few cycles of the kit behind `npm run
// chaos` (test/chaos/_harness.ts), on a dev agent and on a server + client
// pair. Any violation fails the test with the run's report, which names the
// seed to replay (CHAOS_SEED=<seed> npm run chaos).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatReport, runChaos } from './_harness.js';

describe('chaos, short', { timeout: 240_000 }, () => {
  it('SIGKILLs at random instants leave no second writer, no leaked mount or process, no lost line, no wedged job', async () => {
    const seed = process.env['CHAOS_SEED'] ? Number(process.env['CHAOS_SEED']) : Math.floor(Math.random() * 2 ** 31);
    const lines: string[] = [];
    const report = await runChaos({ seed, cycles: Number(process.env['CHAOS_SHORT_CYCLES'] ?? 4), clusters: ['dev', 'pair'], settleMs: 60_000, log: (l) => lines.push(l) });
    const text = `${lines.join('\n')}\n${formatReport(report)}`;
    assert.deepEqual(report.violations, [], text);
    assert.equal(report.cyclesRun, report.cycles, text);
  });
});
