import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { adoptCheckedJobSpec, checkedJobSpec, JobValidationError, parseJobSpec } from './job-parse.js';
import { durationMs } from './job.js';

function spec(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'web',
    groups: [
      {
        name: 'app',
        volumes: { data: { type: 'csi', source: 'vol1', accessMode: 'single-node-writer', attachmentMode: 'file-system' } },
        tasks: [{ name: 'server', driver: 'exec', volumeMounts: [{ volume: 'data', destination: '/data' }] }],
      },
    ],
    ...overrides,
  };
}

function problemsOf(input: unknown): Array<{ path: string; message: string }> {
  try {
    parseJobSpec(input);
  } catch (err) {
    assert.ok(err instanceof JobValidationError);
    assert.equal(err.code, 'INVALID');
    return err.problems;
  }
  assert.fail('expected the spec to be rejected');
}

describe('job spec', () => {
  it('checks a spec once: what parseJobSpec returned is taken as it is, anything else (a copy among them) is checked again', () => {
    const parsed = parseJobSpec(spec());
    assert.equal(checkedJobSpec(parsed), parsed);
    const copy = { ...parsed, groups: [{ ...parsed.groups[0]!, count: -1 }] };
    assert.throws(() => checkedJobSpec(copy), (err) => err instanceof JobValidationError && err.problems.some((p) => p.path === 'groups[0].count'));
    const plain = checkedJobSpec(spec());
    assert.notEqual(plain, parsed);
    assert.deepEqual(plain, parsed);
  });

  it("takes a front worker's copy of a checked spec as checked, and holds the same job as the spec it copies", () => {
    const parsed = parseJobSpec(spec());
    // What a worker's message port hands main: a structured clone, a new object.
    const sent = structuredClone(parsed);
    assert.notEqual(checkedJobSpec(sent), sent, 'a copy nobody adopted is parsed again');
    const adopted = adoptCheckedJobSpec(structuredClone(parsed));
    assert.equal(checkedJobSpec(adopted), adopted);
    assert.deepEqual(adopted, parsed);
    assert.deepEqual(adopted, parseJobSpec(adopted), 'the clone reads back as the same checked spec');
  });

  it('fills sane defaults', () => {
    const job = parseJobSpec(spec());
    assert.equal(job.namespace, 'default');
    assert.equal(job.type, 'service');
    assert.equal(job.priority, 50);
    assert.deepEqual(job.datacenters, ['*']);
    const group = job.groups[0]!;
    assert.equal(group.count, 1);
    assert.equal(group.network.mode, 'host');
    assert.equal(group.restart.mode, 'fail');
    assert.equal(group.reschedule?.unlimited, true, "a service job's groups are rescheduled without limit (Nomad's default)");
    const task = group.tasks[0]!;
    assert.deepEqual(task.resources, { cpuMhz: 100, memoryMb: 300 });
    assert.equal(task.logs.disabled, false);
    assert.equal(task.volumeMounts[0]!.propagationMode, 'private');
    assert.equal(group.volumes['data']!.perAlloc, false);
  });

  it('names the exact field of a bad propagation mode', () => {
    const input = spec();
    const group = (input['groups'] as Array<Record<string, unknown>>)[0]!;
    group['tasks'] = [
      { name: 'a', driver: 'exec' },
      { name: 'b', driver: 'exec', volumeMounts: [{ volume: 'data', destination: '/d', propagationMode: 'sideways' }] },
    ];
    const problems = problemsOf(input);
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.path, 'groups[0].tasks[1].volumeMounts[0].propagationMode');
    assert.match(problems[0]!.message, /private.*host-to-task.*bidirectional/);
  });

  it('lists every problem at once, with its path', () => {
    const problems = problemsOf({
      id: 'bad id!',
      type: 'cron',
      groups: [{ name: 'g', count: -1, tasks: [{ name: 't', resources: { cpuMhz: 0 } }], colour: 'red' }],
    });
    const paths = problems.map((p) => p.path).sort();
    assert.deepEqual(paths, ['groups[0]', 'groups[0].count', 'groups[0].tasks[0].driver', 'groups[0].tasks[0].resources.cpuMhz', 'id', 'type']);
    assert.match(problems.find((p) => p.path === 'groups[0]')!.message, /unknown field "colour"/);
  });

  it('rejects a bidirectional mount on a read-only volume', () => {
    const input = spec();
    const group = (input['groups'] as Array<Record<string, unknown>>)[0]!;
    group['volumes'] = { data: { type: 'csi', source: 'v', accessMode: 'multi-node-reader-only', readOnly: true } };
    group['tasks'] = [{ name: 't', driver: 'exec', volumeMounts: [{ volume: 'data', destination: '/d', propagationMode: 'bidirectional' }] }];
    const problems = problemsOf(input);
    assert.deepEqual(problems.map((p) => p.path), ['groups[0].tasks[0].volumeMounts[0].propagationMode']);
    assert.match(problems[0]!.message, /read-only/);
  });

  it('rejects a read-only access mode on a writable volume', () => {
    const input = spec();
    const group = (input['groups'] as Array<Record<string, unknown>>)[0]!;
    group['volumes'] = { data: { type: 'csi', source: 'v', accessMode: 'multi-node-reader-only' } };
    const problems = problemsOf(input);
    assert.deepEqual(problems.map((p) => p.path), ['groups[0].volumes.data.readOnly']);
  });

  it('rejects mounts of undeclared volumes and duplicate names', () => {
    const problems = problemsOf({
      id: 'j',
      groups: [
        { name: 'g', tasks: [{ name: 't', driver: 'exec', volumeMounts: [{ volume: 'nope', destination: '/x' }] }, { name: 't', driver: 'exec' }] },
        { name: 'g', tasks: [{ name: 'u', driver: 'exec' }] },
      ],
    });
    assert.deepEqual(problems.map((p) => p.path).sort(), ['groups[0].tasks[0].volumeMounts[0].volume', 'groups[0].tasks[1].name', 'groups[1].name']);
    assert.match(problems.find((p) => p.path.endsWith('.volume'))!.message, /"nope" is not declared in group "g"/);
  });

  it('never echoes submitted values, which may be secrets', () => {
    const err = (() => {
      try {
        parseJobSpec(spec({ priority: 'hunter2-secret' }));
      } catch (e) {
        return e as JobValidationError;
      }
      return undefined;
    })();
    assert.ok(err);
    assert.doesNotMatch(JSON.stringify(err.problems) + err.message, /hunter2/);
  });

  it('accepts a plugin job and ignores server-managed fields sent back', () => {
    const job = parseJobSpec({
      id: 'plugin-hostpath',
      type: 'system',
      version: 7,
      createIndex: 3,
      groups: [{ name: 'p', tasks: [{ name: 'plugin', driver: 'exec', csiPlugin: { id: 'hostpath', type: 'monolith', mountDir: '/csi' } }] }],
    });
    assert.equal(job.groups[0]!.tasks[0]!.csiPlugin!.healthTimeout, '30s');
    assert.equal('version' in job, false);
  });

  it('parses durations', () => {
    assert.equal(durationMs('1h30m'), 5_400_000);
    assert.equal(durationMs('500ms'), 500);
    assert.equal(durationMs('2s'), 2000);
    assert.throws(() => durationMs('soon'));
  });
});
