import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JobValidationError, parseJobSpec } from './job-parse.js';
import { goDuration } from './restart-policy.js';

const job = (type: string, group: Record<string, unknown> = {}, top: Record<string, unknown> = {}) =>
  parseJobSpec({ id: 'j', type, ...top, groups: [{ name: 'g', ...group, tasks: [{ name: 't', driver: 'raw_exec' }] }] });

function problems(input: () => unknown): string[] {
  try {
    input();
  } catch (err) {
    assert.ok(err instanceof JobValidationError, String(err));
    return err.problems.map((p) => `${p.path}: ${p.message}`);
  }
  return assert.fail('expected the job to be refused');
}

describe("Nomad's restart and reschedule defaults per job type", () => {
  it('gives a group without blocks the job type defaults: services 2 restarts in 30 m and unlimited exponential reschedules, batch 3 in 24 h and one reschedule a day, system no reschedule', () => {
    const service = job('service').groups[0]!;
    assert.deepEqual(service.restart, { attempts: 2, interval: '30m', delay: '15s', mode: 'fail' });
    assert.deepEqual(service.reschedule, { attempts: 0, interval: '0s', delay: '30s', unlimited: true, delayFunction: 'exponential', maxDelay: '1h' });
    const batch = job('batch').groups[0]!;
    assert.deepEqual(batch.restart, { attempts: 3, interval: '24h', delay: '15s', mode: 'fail' });
    assert.deepEqual(batch.reschedule, { attempts: 1, interval: '24h', delay: '5s', unlimited: false, delayFunction: 'constant', maxDelay: '0s' });
    const system = job('system').groups[0]!;
    assert.deepEqual(system.restart, { attempts: 2, interval: '30m', delay: '15s', mode: 'fail' });
    assert.equal(system.reschedule, undefined);
  });

  it('fills what a partial block leaves out from the job type, and keeps a full block as written', () => {
    const batch = job('batch', { restart: { attempts: 5 }, reschedule: { delay: '1m' } }).groups[0]!;
    assert.deepEqual(batch.restart, { attempts: 5, interval: '24h', delay: '15s', mode: 'fail' });
    assert.deepEqual(batch.reschedule, { attempts: 1, interval: '24h', delay: '1m', unlimited: false, delayFunction: 'constant', maxDelay: '0s' });
    const service = job('service', { restart: { mode: 'delay' }, reschedule: { attempts: 3, interval: '1h', unlimited: false } }).groups[0]!;
    assert.deepEqual(service.restart, { attempts: 2, interval: '30m', delay: '15s', mode: 'delay' });
    assert.deepEqual(service.reschedule, { attempts: 3, interval: '1h', delay: '30s', unlimited: false, delayFunction: 'exponential', maxDelay: '1h' });
    const full = { attempts: 4, interval: '2h', delay: '10s', unlimited: false, delayFunction: 'fibonacci' as const, maxDelay: '5m' };
    const spelled = job('service', { restart: { attempts: 1, interval: '5m', delay: '1s', mode: 'fail' }, reschedule: full });
    assert.deepEqual(spelled.groups[0]!.reschedule, full);
    assert.deepEqual(parseJobSpec(spelled), spelled, 'a stored job parses to itself');
  });

  it("merges the job's reschedule block under each group's, over the type's default", () => {
    const parsed = parseJobSpec({
      id: 'j',
      type: 'batch',
      reschedule: { attempts: 2, delay: '20s' },
      groups: [
        { name: 'a', reschedule: { delay: '40s' }, tasks: [{ name: 't', driver: 'raw_exec' }] },
        { name: 'b', tasks: [{ name: 't', driver: 'raw_exec' }] },
      ],
    });
    assert.deepEqual(parsed.groups.map((g) => [g.reschedule?.attempts, g.reschedule?.delay, g.reschedule?.interval]), [
      [2, '40s', '24h'],
      [2, '20s', '24h'],
    ]);
    assert.deepEqual(parseJobSpec(parsed), parsed, 'a stored job parses to itself');
  });

  it('refuses a service reschedule block with attempts that leaves unlimited (true by default) and interval (0 by default) unset, as Nomad does', () => {
    assert.deepEqual(
      problems(() => job('service', { reschedule: { attempts: 3 } })),
      [
        'groups[0].reschedule.attempts: Interval must be a non zero value if Attempts > 0',
        'groups[0].reschedule.attempts: Reschedule Policy with Attempts = 3, Interval = 0s, and Unlimited = true is ambiguous; If Attempts >0, Unlimited cannot also be set to true (set unlimited = false with attempts and an interval, or leave attempts out)',
      ],
    );
    assert.deepEqual(problems(() => job('batch', { reschedule: { attempts: 2, unlimited: true } })), [
      'groups[0].reschedule.unlimited: Reschedule Policy with Attempts = 2, Interval = 24h0m0s, and Unlimited = true is ambiguous; If Attempts >0, Unlimited cannot also be set to true (set unlimited = false with attempts and an interval, or leave attempts out)',
    ]);
    assert.deepEqual(problems(() => job('batch', {}, { reschedule: { attempts: 2, interval: '0s' } })), ['reschedule.interval: Interval must be a non zero value if Attempts > 0']);
    // Attempts 0 (or unset) never reschedules by count: nothing to be ambiguous about.
    assert.equal(job('service', { reschedule: { attempts: 0, unlimited: false } }).groups[0]!.reschedule?.attempts, 0);
  });

  it('refuses a reschedule block on a system job', () => {
    assert.deepEqual(problems(() => job('system', { reschedule: { attempts: 1, interval: '1h' } })), ['groups[0].reschedule: system jobs take no reschedule block (they are never rescheduled)']);
  });

  it('prints durations in messages as Go does', () => {
    assert.deepEqual([0, 1500, 30_000, 300_000, 3_600_000, 5_430_000].map(goDuration), ['0s', '1.5s', '30s', '5m0s', '1h0m0s', '1h30m30s']);
  });
});
