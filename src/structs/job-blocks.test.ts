import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseJobSpec, rescheduleDelayMs } from './index.js';

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
    assert.equal(job.groups[0]!.reschedule.delayFunction, 'constant');
  });

  it('makes a group of each task written under the job, and reports its problems at the path the user wrote', () => {
    const job = parseJobSpec({ id: 'j', tasks: [{ name: 'solo', driver: 'raw_exec' }] });
    assert.deepEqual(job.groups.map((g) => [g.name, g.tasks.map((t) => t.name)]), [['solo', ['solo']]]);
    assert.throws(() => parseJobSpec({ id: 'j', tasks: [{ name: 'solo', driver: 'raw_exec', maxRunDuration: 'soon' }] }), /tasks\[0\]\.maxRunDuration: must be a duration/);
  });

  it('refuses Nomad features Berth does not have by name, never as unknown fields', () => {
    assert.throws(
      () => parseJobSpec({ id: 'j', update: {}, groups: [{ name: 'g', ephemeralDisk: { migrate: true }, tasks: [{ name: 't', driver: 'x', resources: { device: [{}] } }] }] }),
      (err: Error) => {
        assert.match(err.message, /update: Berth does not support `update` yet/);
        assert.match(err.message, /ephemeralDisk\.migrate: Berth does not support ephemeral_disk\.migrate yet/);
        assert.match(err.message, /resources\.device: Berth does not support `device`: Berth schedules no devices/);
        assert.doesNotMatch(err.message, /unknown field/);
        return true;
      },
    );
  });
});
