// Fills a disk for the full-disk tests: zeros appended to one file until the
// filesystem refuses (ENOSPC), in ever smaller pieces down to 512 bytes, so
// that what is left is less than a page.

import { closeSync, openSync, writeSync } from 'node:fs';

/** Writes zeros into `file` until the disk refuses (ENOSPC). */
export function fillDisk(file: string): void {
  const fd = openSync(file, 'a');
  try {
    for (const size of [64 * 1024, 4096, 512]) {
      const chunk = Buffer.alloc(size);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (err) {
          if ((err as { code?: string }).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}
