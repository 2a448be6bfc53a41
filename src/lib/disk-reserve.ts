// A reserve file beside a SQLite database: room set aside on the disk so
// that the writes that free space (a job stop, a collection, a
// deregistration) still fit when the disk is full. Spent by deleting it and
// retrying the write; made again once the disk has room. The client's and the
// server's state stores each keep one, begun in the background when they open
// (restoreInBackground): writing 4 MiB on the main thread cost an agent's start
// 2-45 ms of CPU and 6-190 ms of wall time on a busy machine (issue 40); one
// still being made when its store closes is abandoned (abandon()).

import { closeSync, existsSync, openSync, renameSync, rmSync, statfsSync, write, writeSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';

/** fs.write by libuv's thread pool, as a promise of { bytesWritten }. */
const writeAsync = promisify(write);

export class DiskReserve {
  readonly path: string;
  readonly bytes: number;
  /** The reserve being made by restoreInBackground, until it settles. */
  #making: Promise<boolean> | undefined;
  /** Set by abandon(): nothing more is made. */
  #abandoned = false;

  /** `bytes` 0 keeps no reserve (then it is always "in place"). */
  constructor(path: string, bytes: number) {
    this.path = path;
    this.bytes = Math.max(0, bytes);
  }

  /** True while the reserve file is in place, or none is kept. */
  get inPlace(): boolean {
    return this.bytes === 0 || existsSync(this.path);
  }

  /** Deletes the reserve file, giving its room to the next write. Returns whether there was one to spend. */
  spend(): boolean {
    if (this.bytes === 0 || !existsSync(this.path)) return false;
    rmSync(this.path, { force: true });
    return true;
  }

  /**
   * Makes the reserve file again when it is missing; with `spareFactor`, only
   * when the disk has room for that many reserves (so that making it does
   * not take back the room a freeing write just got). Written under another
   * name and renamed once whole: a half-written reserve would promise room
   * it does not hold. Returns whether it is in place. Never throws.
   */
  restore(opts: { spareFactor?: number } = {}): boolean {
    if (this.inPlace) return true;
    // Being made off the main thread: not in place yet, and never two writers of one file.
    if (this.#making || this.#abandoned) return false;
    const tmp = `${this.path}.tmp`;
    try {
      if (opts.spareFactor !== undefined) {
        const fs = statfsSync(dirname(this.path));
        if (fs.bavail * fs.bsize < opts.spareFactor * this.bytes) return false;
      }
      const fd = openSync(tmp, 'w', 0o600);
      try {
        const chunk = Buffer.alloc(Math.min(this.bytes, 1024 * 1024));
        for (let done = 0; done < this.bytes; ) done += writeSync(fd, chunk, 0, Math.min(chunk.length, this.bytes - done));
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.path);
      return true;
    } catch {
      rmSync(tmp, { force: true });
      return false;
    }
  }

  /**
   * restore(), with the file written by libuv's thread pool instead of this
   * thread: resolves with whether the reserve is in place once it is made (or
   * could not be). Until then `inPlace` is false, restore() makes nothing and
   * returns false, and a second call returns the same promise. Never rejects.
   */
  restoreInBackground(opts: { spareFactor?: number } = {}): Promise<boolean> {
    if (this.inPlace) return Promise.resolve(true);
    this.#making ??= this.#make(opts).finally(() => {
      this.#making = undefined;
    });
    return this.#making;
  }

  /**
   * Stops a reserve being made by restoreInBackground (its owner closes):
   * its file under the other name is removed now and the reserve is never
   * renamed into place. Every name is made, renamed or removed on this
   * thread, so that once this returns no file appears beside the reserve's
   * path (a caller may remove the directory at once); only the zeroes of an
   * already removed file may still be written. Safe to repeat.
   */
  abandon(): void {
    this.#abandoned = true;
    if (this.#making) rmSync(`${this.path}.tmp`, { force: true });
  }

  async #make(opts: { spareFactor?: number }): Promise<boolean> {
    const tmp = `${this.path}.tmp`;
    let fd: number | undefined;
    try {
      if (opts.spareFactor !== undefined) {
        const fs = await statfs(dirname(this.path));
        if (fs.bavail * fs.bsize < opts.spareFactor * this.bytes) return false;
      }
      if (this.#abandoned) return false;
      fd = openSync(tmp, 'w', 0o600);
      // Zeroes never touched here: the pool thread that writes them maps them in, not this one.
      const chunk = Buffer.alloc(Math.min(this.bytes, 1024 * 1024));
      for (let done = 0; done < this.bytes && !this.#abandoned; ) done += (await writeAsync(fd, chunk, 0, Math.min(chunk.length, this.bytes - done), null)).bytesWritten;
      closeSync(fd);
      fd = undefined;
      if (this.#abandoned) return false;
      renameSync(tmp, this.path);
      return true;
    } catch {
      if (fd !== undefined) closeSync(fd);
      if (!this.#abandoned) rmSync(tmp, { force: true });
      return false;
    }
  }
}
