// A task's config is checked against its driver's schema when the job is
// validated: built-in drivers have theirs in code, others come from the caller.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { taskConfigProblems } from './task-config.js';

describe('taskConfigProblems', () => {
  it('raw_exec and exec need a command; args must be strings; other keys are the driver\'s', () => {
    assert.deepEqual(taskConfigProblems('raw_exec', { command: '/bin/sh', args: ['-c', 'true'], extra: 1 }), []);
    assert.deepEqual(taskConfigProblems('exec', {}), [
      { path: 'config.command', message: 'is required: the program to run (a path, or a name found on PATH) (driver exec)' },
    ]);
    assert.deepEqual(taskConfigProblems('raw_exec', { command: '' }).map((p) => p.path), ['config.command']);
    assert.deepEqual(taskConfigProblems('raw_exec', { command: 'x', args: [1] }).map((p) => p.path), ['config.args.0']);
  });

  it('a driver with no known schema is not checked; a schema passed in (an external driver) is', () => {
    assert.deepEqual(taskConfigProblems('podman', {}), []);
    const extra = { podman: z.looseObject({ image: z.string({ error: 'is required' }) }) };
    assert.deepEqual(taskConfigProblems('podman', {}, extra), [{ path: 'config.image', message: 'is required (driver podman)' }]);
  });
});
