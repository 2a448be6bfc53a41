// A reserve file beside a SQLite database: room set aside on the disk so
// that the writes that free space (a job stop, a collection, a
// deregistration) still fit when the disk is full. Spent by deleting it and
// retrying the write; made again once the disk has room. The client's and the
// server's state stores each keep one.

import { closeSync, existsSync, openSync, renameSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export class DiskReserve {
  readonly path: string;
  readonly bytes: number;

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
}
