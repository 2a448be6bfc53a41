// Reading rotated log files as the executor lays them out.

import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
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
    const follow = (async () => {
      for await (const chunk of followTaskLogs(loc, { signal: ac.signal, tail: 0, pollMs: 5 })) {
        got.push(chunk.toString());
        if (got.join('').includes('b2\n')) ac.abort();
      }
    })();
    await new Promise((r) => setTimeout(r, 30));
    appendFileSync(path.join(dir, 'web.stdout.0'), 'a1\n');
    await new Promise((r) => setTimeout(r, 30));
    writeFileSync(path.join(dir, 'web.stdout.1'), 'b1\nb2\n');
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
