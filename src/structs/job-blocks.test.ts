import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_UPDATE, parseJobSpec, rescheduleDelayMs } from './index.js';

describe('reschedule delay functions', () => {
  it('grows the wait per reschedule as Nomad does, capped at max_delay', () => {
    const waits = (fn: 'constant' | 'exponential' | 'fibonacci') => [1, 2, 3, 4, 5, 6, 7].map((n) => rescheduleDelayMs(fn, 5_000, 60_000, n));
    assert.deepEqual(waits('constant'), [5_000, 5_000, 5_000, 5_000, 5_000, 5_000, 5_000]);
    assert.deepEqual(waits('exponential'), [5_000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000]);
    assert.deepEqual(waits('fibonacci'), [5_000, 5_000, 10_000, 15_000, 25_000, 40_000, 60_000]);
  });
});

describe('Nomad job blocks in the job schema', () => {
  it('takes meta with bare numbers and booleans as strings, a kill signal without its SIG prefix, csi_plugin without mount_dir', () => {
    const job = parseJobSpec({
      id: 'j',
      meta: { n: 3, on: true },
      groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', killSignal: 'int', csiPlugin: { id: 'p', type: 'node' } }] }],
    });
    assert.deepEqual(job.meta, { n: '3', on: 'true' });
    assert.equal(job.groups[0]!.tasks[0]!.killSignal, 'SIGINT');
    assert.equal(job.groups[0]!.tasks[0]!.csiPlugin?.mountDir, '/csi');
    assert.equal(job.groups[0]!.reschedule?.delayFunction, 'exponential');
  });

  it('makes a group of each task written under the job, and reports its problems at the path the user wrote', () => {
    const job = parseJobSpec({ id: 'j', tasks: [{ name: 'solo', driver: 'raw_exec' }] });
    assert.deepEqual(job.groups.map((g) => [g.name, g.tasks.map((t) => t.name)]), [['solo', ['solo']]]);
    assert.throws(() => parseJobSpec({ id: 'j', tasks: [{ name: 'solo', driver: 'raw_exec', maxRunDuration: 'soon' }] }), /tasks\[0\]\.maxRunDuration: must be a duration/);
  });

  it('refuses Nomad features Berth does not have by name, never as unknown fields', () => {
    assert.throws(
      () => parseJobSpec({ id: 'j', multiregion: {}, groups: [{ name: 'g', ephemeralDisk: { migrate: true }, tasks: [{ name: 't', driver: 'x', resources: { device: [{}] } }] }] }),
      (err: Error) => {
        assert.match(err.message, /multiregion: Berth does not support `multiregion`: Berth runs one region/);
        assert.match(err.message, /ephemeralDisk\.migrate: Berth does not support ephemeral_disk\.migrate yet/);
        assert.match(err.message, /resources\.device: Berth does not support `device`: Berth schedules no devices/);
        assert.doesNotMatch(err.message, /unknown field/);
        return true;
      },
    );
  });

  it("merges the job's update block into each group's (the group's fields win, Nomad's defaults fill the rest) and checks it", () => {
    const job = parseJobSpec({
      id: 'j',
      update: { maxParallel: 2, minHealthyTimeMs: '5s', autoRevert: true },
      groups: [
        { name: 'a', update: { canary: 1, minHealthyTimeMs: 2000 }, tasks: [{ name: 't', driver: 'x' }] },
        { name: 'b', tasks: [{ name: 't', driver: 'x' }] },
      ],
    });
    assert.deepEqual(job.groups[0]?.update, { ...DEFAULT_UPDATE, maxParallel: 2, minHealthyTimeMs: 2000, autoRevert: true, canary: 1 });
    assert.deepEqual(job.groups[1]?.update, { ...DEFAULT_UPDATE, maxParallel: 2, minHealthyTimeMs: 5000, autoRevert: true });
    assert.deepEqual(parseJobSpec(job), job, 'a stored job parses to itself');
    assert.equal(parseJobSpec({ id: 'j', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'x' }] }] }).groups[0]?.update, undefined);
    assert.throws(
      () => parseJobSpec({ id: 'j', groups: [{ name: 'g', update: { minHealthyTimeMs: '10m', healthyDeadlineMs: '5m' }, tasks: [{ name: 't', driver: 'x' }] }] }),
      /groups\[0\]\.update\.minHealthyTimeMs: min_healthy_time \(600000 ms\) must be less than healthy_deadline \(300000 ms\)/,
    );
    assert.throws(() => parseJobSpec({ id: 'j', type: 'batch', update: {}, groups: [{ name: 'g', tasks: [{ name: 't', driver: 'x' }] }] }), /update: batch jobs take no update block/);
    assert.throws(() => parseJobSpec({ id: 'j', update: { autoPromote: true }, groups: [{ name: 'g', tasks: [{ name: 't', driver: 'x' }] }] }), /auto_promote needs canary/);
  });
});
