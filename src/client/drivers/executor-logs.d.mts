// Types of executor-logs.mjs (plain ESM shared with the executor process), for the TS code that writes logs too (the docker driver).

/** Appends to `<dir>/<base>.<n>`, moving to n+1 past maxBytes and deleting files older than maxFiles. Synchronous writes. */
export class RotatingFile {
  constructor(dir: string, base: string, maxFiles: number, maxBytes: number);
  write(chunk: Buffer): void;
  close(): void;
}
