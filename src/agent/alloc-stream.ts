// Streaming a file of an allocation directory, and a task's logs across
// their rotated files, into a StreamFramer, as Nomad's client does
// (client/fs_endpoint.go): from an offset (from the end with origin=end),
// up to a limit, and with follow, every byte appended after, noticing a
// truncated file ("file truncated": read again from 0) and a deleted one
// ("file deleted": the stream ends). Logs are `<task>.<stdout|stderr>.<n>`:
// an offset from the end may reach back into earlier files, and a followed
// log moves on to file n+1 once it appears.

import { watch, type FSWatcher } from 'node:fs';
import { relative } from 'node:path';
import type { FileHandle } from 'node:fs/promises';
import * as api from '../api/index.js';
import type { LogFile } from '../client/index.js';
import { openInside } from './alloc-fs.js';
import type { StreamFramer } from './stream-framer.js';

/** What a stream does at the end of the file for now: stop there, or wait for more. */
export type AtEof = () => Promise<'stop' | 'wait'>;

export interface FileStreamOptions {
  /** Where to start (bytes from the file's start). */
  offset: number;
  /** Most bytes to send; 0 or undefined: no limit. */
  limit?: number;
  atEof: AtEof;
  /** Ends the stream (the client went away, the agent stops). */
  signal: AbortSignal;
  /** How often an idle followed file is looked at when no change is reported. Default 250 ms. */
  pollMs?: number;
}

/** How a file's stream ended. */
export type FileStreamEnd = 'stopped' | 'deleted' | 'limit' | 'aborted';

const CHUNK = 64 * 1024;

/**
 * Streams the allocation file `userPath` (under `root`, never outside it:
 * openInside) into `framer`, naming it `file`. Resolves how it ended; rejects
 * with AllocFsError when the file cannot be opened.
 */
export async function streamFile(root: string, userPath: string, file: string, framer: StreamFramer, opts: FileStreamOptions): Promise<FileStreamEnd> {
  let { handle } = await openInside(root, userPath);
  let pos = opts.offset;
  let left = opts.limit && opts.limit > 0 ? opts.limit : Infinity;
  let event = '';
  const buf = Buffer.alloc(CHUNK);
  try {
    for (;;) {
      if (opts.signal.aborted || framer.closed) return 'aborted';
      const { bytesRead } = await handle.read(buf, 0, Math.min(CHUNK, left), pos);
      if (bytesRead > 0 || event) {
        pos += bytesRead;
        left -= bytesRead;
        await framer.send(file, Buffer.from(buf.subarray(0, bytesRead)), pos, event);
        event = '';
        if (left <= 0) return 'limit';
        if (bytesRead > 0) continue;
      }
      if ((await opts.atEof()) === 'stop') {
        // What was written before the decision (a log rotates only after its file is done).
        for (;;) {
          const { bytesRead: more } = await handle.read(buf, 0, Math.min(CHUNK, left), pos);
          if (more === 0) return 'stopped';
          pos += more;
          left -= more;
          await framer.send(file, Buffer.from(buf.subarray(0, more)), pos);
          if (left <= 0) return 'limit';
        }
      }
      await changed(handle, opts.signal, opts.pollMs ?? 250);
      const st = await handle.stat();
      if (st.nlink === 0) {
        await framer.send(file, Buffer.alloc(0), pos, api.FILE_EVENT.deleted);
        return 'deleted';
      }
      if (st.size < pos) {
        // Truncated in place: read it again from the start, the first frame naming the event.
        await handle.close();
        ({ handle } = await openInside(root, userPath));
        pos = 0;
        event = api.FILE_EVENT.truncated;
      }
    }
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Resolves when the open file changes (inotify on its descriptor), after `pollMs` at most, or when `signal` fires. */
function changed(handle: FileHandle, signal: AbortSignal, pollMs: number): Promise<void> {
  return new Promise((resolve) => {
    let w: FSWatcher | undefined;
    const done = (): void => {
      w?.close();
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    };
    try {
      w = watch(`/proc/self/fd/${handle.fd}`, done);
      w.on('error', done);
    } catch {
      // no inotify for it: the timer alone
    }
    const t = setTimeout(done, pollMs);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A task's log stream: where its files are, and the files there now. */
export interface LogSource {
  /** The allocation directory (frames name files relative to it). */
  root: string;
  /** The directory holding the log files. */
  dir: string;
  /** The stream's files now, oldest first. */
  list(): Promise<LogFile[]>;
}

export interface LogStreamOptions {
  follow: boolean;
  /** Bytes from the start (origin start) or from the end (origin end). */
  offset: number;
  origin: 'start' | 'end';
  signal: AbortSignal;
  pollMs?: number;
}

/**
 * Where to start in `files` (sorted by index, not empty): the first file
 * whose index is at least `index` (else the last), then `offset` bytes on
 * (negative: back), across file boundaries, clamped to the first file's
 * start and the last file's end. Nomad's findClosest. Pure.
 */
export function findStart(files: readonly LogFile[], index: number, offset: number): { at: number; offset: number } {
  let at = files.findIndex((f) => f.index >= index);
  if (at < 0) at = files.length - 1;
  let off = offset;
  for (;;) {
    const size = (files[at] as LogFile).size;
    if (off === 0) break;
    if (off < 0) {
      if (size + off >= 0) {
        off = size + off;
        break;
      }
      if (at === 0) {
        off = 0;
        break;
      }
      off += size;
      at--;
    } else {
      if (off <= size) break;
      if (at === files.length - 1) {
        off = size;
        break;
      }
      off -= size;
      at++;
    }
  }
  return { at, offset: off };
}

/**
 * Streams a task's log (all its kept files in order, from the start or
 * `offset` back from the end) into `framer`; with `follow`, on into each
 * new file until `signal` fires. Resolves when done. Callers check first
 * that there is a file (Nomad answers 404 otherwise); a stream whose files
 * all vanished ends.
 */
export async function streamLogs(source: LogSource, framer: StreamFramer, opts: LogStreamOptions): Promise<void> {
  let nextIndex = opts.origin === 'start' ? 0 : Number.MAX_SAFE_INTEGER;
  let offset = opts.origin === 'start' ? opts.offset : -opts.offset;
  const firstList = await source.list();
  const lastIndex = firstList.at(-1)?.index ?? 0;
  const nextExists = async (index: number): Promise<boolean> => (await source.list()).some((f) => f.index > index);
  while (!opts.signal.aborted && !framer.closed) {
    const files = await source.list();
    if (!files.length) return;
    const { at, offset: from } = findStart(files, nextIndex, offset);
    const f = files[at] as LogFile;
    if (!opts.follow && f.index > lastIndex) return;
    const last = !opts.follow && f.index === lastIndex;
    const atEof: AtEof = async () => (last || (await nextExists(f.index)) ? 'stop' : opts.follow ? 'wait' : 'stop');
    // Without follow the answer is the log as it was when asked: what the task writes meanwhile is not sent
    // (`-tail -c 3` prints three bytes, not three and the line that came after).
    const asListed = last ? f.size - from : 0;
    if (last && asListed <= 0) return;
    let end: FileStreamEnd;
    try {
      end = await streamFile(source.root, relative(source.root, f.path), relative(source.root, f.path), framer, {
        offset: from,
        ...(asListed > 0 ? { limit: asListed } : {}),
        atEof,
        signal: opts.signal,
        ...(opts.pollMs ? { pollMs: opts.pollMs } : {}),
      });
    } catch (err) {
      // Rotated away between the listing and the open: list again.
      if ((err as { code?: string }).code === 'ALLOC_FS_NOT_FOUND') continue;
      throw err;
    }
    if (end === 'aborted' || last) return;
    offset = 0;
    nextIndex = f.index + 1;
  }
}
