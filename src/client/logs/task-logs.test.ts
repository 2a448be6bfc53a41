// Reading rotated log files as the executor lays them out.

import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ManualClock } from '../../lib/index.js';
import { eventually } from '../../../test/support/eventually.js';
import { followTaskLogs, listLogFiles, readTaskLogs, type LogsError } from './task-logs.js';

describe('task logs', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'r1logs-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads the kept files in order and tails across file boundaries', async () => {
    writeFileSync(path.join(dir, 'web.stdout.10'), 'ten\n');
    writeFileSync(path.join(dir, 'web.stdout.9'), 'nine\n');
    writeFileSync(path.join(dir, 'web.stderr.9'), 'other stream\n');
    const loc = { dir, taskName: 'web', stream: 'stdout' as const };
    assert.deepEqual((await listLogFiles(loc)).map((f) => f.index), [9, 10]);
    assert.equal((await readTaskLogs(loc)).toString(), 'nine\nten\n');
    assert.equal((await readTaskLogs(loc, { tail: 6 })).toString(), 'e\nten\n');
    assert.equal((await readTaskLogs({ ...loc, taskName: 'none' })).toString(), '');
  });

  it('follows new output into the next file when the current one rotates', async () => {
    const loc = { dir, taskName: 'web', stream: 'stdout' as const };
    writeFileSync(path.join(dir, 'web.stdout.0'), 'old\n');
    const ac = new AbortController();
    const got: string[] = [];
    const clock = new ManualClock(0);
    const follow = (async () => {
      for await (const chunk of followTaskLogs(loc, { signal: ac.signal, tail: 0, pollMs: 5, clock })) {
        got.push(chunk.toString());
        if (got.join('').includes('b2\n')) ac.abort();
      }
    })();
    // The follower has taken its starting point (the end of web.stdout.0) once it waits on its clock.
    await eventually('the follower to wait at the end of the file', () => clock.pending === 1);
    appendFileSync(path.join(dir, 'web.stdout.0'), 'a1\n');
    await eventually('the follower to read the appended line', () => got.join('').includes('a1\n'), { between: () => clock.advance(5) });
    writeFileSync(path.join(dir, 'web.stdout.1'), 'b1\nb2\n');
    await eventually('the follower to read the next file', () => ac.signal.aborted, { between: () => clock.advance(5) });
    await follow;
    assert.equal(got.join(''), 'a1\nb1\nb2\n');
  });

  it('says log collection is disabled when the marker is there', async () => {
    writeFileSync(path.join(dir, '.web.logs-disabled'), '');
    const loc = { dir, taskName: 'web', stream: 'stdout' as const };
    const disabled = (e: LogsError): boolean => e.code === 'LOGS_DISABLED' && e.message === 'log collection is disabled for this task';
    await assert.rejects(readTaskLogs(loc), disabled);
    await assert.rejects(followTaskLogs(loc, { signal: AbortSignal.timeout(1000) }).next(), disabled);
    await assert.rejects(readTaskLogs({ dir: path.join(dir, 'missing'), taskName: 'x', stream: 'stdout' }), (e: LogsError) => e.code === 'LOGS_NOT_FOUND');
  });
});
