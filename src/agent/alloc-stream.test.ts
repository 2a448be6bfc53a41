// Streaming an allocation's files and logs in Nomad's frames: where a log
// read starts (Nomad's findClosest), a followed log moving on to its next
// rotated file, and a followed file truncated or deleted under it.

import assert from 'node:assert/strict';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { StreamFrame } from '../api/index.js';
import { listLogFiles } from '../client/index.js';
import { jsonObjects } from '../lib/index.js';
import { eventually } from '../../test/support/eventually.js';
import { findStart, streamFile, streamLogs } from './alloc-stream.js';
import { StreamFramer } from './stream-framer.js';

const files = (...sizes: number[]) => sizes.map((size, i) => ({ index: i, path: `f${i}`, size }));

/** Reads the framer's output into `seen` until it ends. */
function collect(framer: StreamFramer, seen: StreamFrame[]): Promise<void> {
  return (async () => {
    for await (const f of jsonObjects(framer.output)) seen.push(f as StreamFrame);
  })();
}
const text = (seen: StreamFrame[]): string => seen.map((f) => (f.Data ? Buffer.from(f.Data, 'base64').toString() : '')).join('');

describe('findStart (where a log read begins)', () => {
  it('counts an offset forward from the start and back from the end across files, clamped at both ends', () => {
    assert.deepEqual(findStart(files(10, 20, 5), 0, 0), { at: 0, offset: 0 });
    assert.deepEqual(findStart(files(10, 20, 5), 0, 15), { at: 1, offset: 5 });
    assert.deepEqual(findStart(files(10, 20, 5), 0, 100), { at: 2, offset: 5 });
    assert.deepEqual(findStart(files(10, 20, 5), Number.MAX_SAFE_INTEGER, -3), { at: 2, offset: 2 });
    assert.deepEqual(findStart(files(10, 20, 5), Number.MAX_SAFE_INTEGER, -10), { at: 1, offset: 15 });
    assert.deepEqual(findStart(files(10, 20, 5), Number.MAX_SAFE_INTEGER, -100), { at: 0, offset: 0 });
    assert.deepEqual(findStart(files(10, 20, 5), 1, 0), { at: 1, offset: 0 });
  });
});

describe('streaming files and logs', () => {
  let root = '';
  let logs = '';
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'bstream-'));
    logs = path.join(root, 'alloc', 'logs');
    mkdirSync(logs, { recursive: true });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('follows a log into its next file once it appears, each frame naming its file', async () => {
    writeFileSync(path.join(logs, 'web.stdout.0'), 'zero\n');
    const framer = new StreamFramer({ plain: false, batchMs: 5 });
    const seen: StreamFrame[] = [];
    const reading = collect(framer, seen);
    const ac = new AbortController();
    const loc = { dir: logs, taskName: 'web', stream: 'stdout' as const };
    const done = streamLogs({ root, dir: logs, list: () => listLogFiles(loc) }, framer, { follow: true, offset: 0, origin: 'start', signal: ac.signal, pollMs: 20 });
    await eventually('the first file read', () => text(seen) === 'zero\n');
    appendFileSync(path.join(logs, 'web.stdout.0'), 'more\n');
    writeFileSync(path.join(logs, 'web.stdout.1'), 'one\n');
    await eventually('the next file read', () => text(seen) === 'zero\nmore\none\n');
    ac.abort();
    await done;
    framer.end();
    await reading;
    assert.deepEqual([...new Set(seen.filter((f) => f.Data).map((f) => f.File))], ['alloc/logs/web.stdout.0', 'alloc/logs/web.stdout.1']);
    assert.equal(seen.at(-1)?.Offset, 4, "a frame's offset is where its data ends in its file");
  });

  it('reads a log without follow from an offset back from the end, across files, and ends', async () => {
    writeFileSync(path.join(logs, 'web.stderr.3'), 'abc\n');
    writeFileSync(path.join(logs, 'web.stderr.4'), 'def\n');
    const framer = new StreamFramer({ plain: true });
    const chunks: Buffer[] = [];
    framer.output.on('data', (d: Buffer) => chunks.push(d));
    const loc = { dir: logs, taskName: 'web', stream: 'stderr' as const };
    await streamLogs({ root, dir: logs, list: () => listLogFiles(loc) }, framer, { follow: false, offset: 6, origin: 'end', signal: new AbortController().signal });
    framer.end();
    assert.equal(Buffer.concat(chunks).toString(), 'c\ndef\n');
  });

  it('reads a log without follow as it was when listed: what the task writes meanwhile is not sent', async () => {
    writeFileSync(path.join(logs, 'web.stdout.0'), 'tick 1\ntick 2\n');
    const framer = new StreamFramer({ plain: true });
    const chunks: Buffer[] = [];
    framer.output.on('data', (d: Buffer) => chunks.push(d));
    const loc = { dir: logs, taskName: 'web', stream: 'stdout' as const };
    // The task writes a line after each listing (the file's size), before the read.
    let tick = 3;
    const list = async (): Promise<Awaited<ReturnType<typeof listLogFiles>>> => {
      const listed = await listLogFiles(loc);
      appendFileSync(path.join(logs, 'web.stdout.0'), `tick ${tick++}\n`);
      return listed;
    };
    await streamLogs({ root, dir: logs, list }, framer, { follow: false, offset: 3, origin: 'end', signal: new AbortController().signal });
    framer.end();
    assert.match(Buffer.concat(chunks).toString(), /^ \d\n$/, 'the last 3 bytes of the log as listed, and nothing after');
  });

  it('says when a followed file is truncated (and reads it again from the start) or deleted (and ends)', async () => {
    const file = path.join(root, 'alloc', 'out');
    writeFileSync(file, 'first\n');
    const framer = new StreamFramer({ plain: false, batchMs: 5 });
    const seen: StreamFrame[] = [];
    const reading = collect(framer, seen);
    const ac = new AbortController();
    const done = streamFile(root, 'alloc/out', 'alloc/out', framer, { offset: 0, signal: ac.signal, atEof: async () => 'wait', pollMs: 20 });
    await eventually('the file read', () => text(seen) === 'first\n');
    truncateSync(file, 0);
    await eventually('the truncation told', () => seen.some((f) => f.FileEvent === 'file truncated'));
    appendFileSync(file, 'again\n');
    await eventually('the file read again', () => text(seen).endsWith('again\n'));
    unlinkSync(file);
    assert.equal(await done, 'deleted');
    framer.end();
    await reading;
    assert.deepEqual(seen.at(-1), { Offset: 6, File: 'alloc/out', FileEvent: 'file deleted' });
  });

  it('sends a heartbeat while a followed file is idle', async () => {
    writeFileSync(path.join(root, 'alloc', 'idle'), '');
    const framer = new StreamFramer({ plain: false, heartbeatMs: 20 });
    const seen: StreamFrame[] = [];
    const reading = collect(framer, seen);
    const ac = new AbortController();
    const done = streamFile(root, 'alloc/idle', 'alloc/idle', framer, { offset: 0, signal: ac.signal, atEof: async () => 'wait', pollMs: 20 });
    await eventually('two heartbeats', () => seen.length >= 2);
    ac.abort();
    await done;
    framer.end();
    await reading;
    assert.ok(seen.every((f) => Object.keys(f).length === 0), JSON.stringify(seen));
  });
});
