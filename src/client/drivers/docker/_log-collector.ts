// A docker task's stdout/stderr copied from dockerd into Berth's rotated log
// files (`<task>.stdout.N` in alloc/logs, what `alloc logs` reads), or into
// the host's FIFOs when the driver is served as a plugin.
//
// Collected inside the agent over the Engine API, not by a process per task
// (Nomad's docklog): dockerd already keeps the container's log while nobody
// reads it, so an agent that was down loses nothing, and a follower costs
// one HTTP stream where a collector process costs tens of MiB per task. The
// position is the timestamp docker puts on each message, written to the
// driver's state every second and when collection ends; after an agent
// restart collection resumes there (what was written in the last second
// before a kill -9 is written twice rather than lost). Needs a log driver
// docker can read back (json-file, local, journald; the default).

import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type Dockerode from 'dockerode';
import type { Logger } from '../../../lib/index.js';
import { RotatingFile } from '../executor-logs.mjs';
import type { TaskLogConfig } from '../task-driver.js';

const SAVE_EVERY_MS = 1_000;

/** Nanoseconds since the epoch of docker's RFC 3339 timestamp ("2026-11-29T06:30:00.123456789Z"). */
export function timestampNanos(ts: string): bigint {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(ts);
  if (!m) return 0n;
  const seconds = BigInt(Math.floor(Date.parse(`${m[1]}${m[3]}`) / 1000));
  return seconds * 1_000_000_000n + BigInt((m[2] ?? '').padEnd(9, '0').slice(0, 9) || '0');
}

/** Docker's `since` for a position: seconds.nanoseconds. */
function sinceParam(nanos: bigint): string {
  return `${nanos / 1_000_000_000n}.${String(nanos % 1_000_000_000n).padStart(9, '0')}`;
}

interface Sink {
  write(chunk: Buffer): void;
  close(): void;
}

function fifoSink(fifo: string): Sink {
  const s = createWriteStream(fifo, { flags: 'a' });
  s.on('error', () => undefined);
  return { write: (c) => void s.write(c), close: () => void s.end() };
}

export interface LogCollectorOptions {
  docker: Dockerode;
  containerId: string;
  taskName: string;
  logs: TaskLogConfig;
  /** Where the position is kept across agent restarts. */
  positionFile: string;
  logger: Logger;
}

/**
 * Follows one container's log until it ends (the container stopped and its
 * log is drained) or stop() is called. start() resolves once the stream is
 * open; done resolves when collection ended. Never throws after start.
 */
export class LogCollector {
  readonly #o: LogCollectorOptions;
  #position = 0n;
  #saved = 0n;
  #resumeFrom = 0n;
  #saveTimer: NodeJS.Timeout | undefined;
  #stream: NodeJS.ReadableStream | undefined;
  #sinks: { stdout: Sink; stderr: Sink } | undefined;
  #ended!: () => void;
  /** Resolves when the container's log was read to its end, or stop() was called. */
  readonly done = new Promise<void>((resolve) => {
    this.#ended = resolve;
  });

  constructor(o: LogCollectorOptions) {
    this.#o = o;
  }

  /** Opens the follow stream from the saved position (all of the log on a first start). Throws docker's error. */
  async start(): Promise<void> {
    const { logs } = this.#o;
    mkdirSync(logs.dir, { recursive: true });
    const marker = path.join(logs.dir, `.${this.#o.taskName}.logs-disabled`);
    if (logs.disabled) {
      writeFileSync(marker, '');
      this.#ended();
      return;
    }
    rmSync(marker, { force: true });
    if (existsSync(this.#o.positionFile)) this.#position = this.#saved = this.#resumeFrom = BigInt(readFileSync(this.#o.positionFile, 'utf8').trim() || '0');
    const maxBytes = Math.round(logs.maxFileSizeMb * 1024 * 1024);
    this.#sinks = logs.fifos
      ? { stdout: fifoSink(logs.fifos.stdout), stderr: fifoSink(logs.fifos.stderr) }
      : {
          stdout: new RotatingFile(logs.dir, `${this.#o.taskName}.stdout`, logs.maxFiles, maxBytes),
          stderr: new RotatingFile(logs.dir, `${this.#o.taskName}.stderr`, logs.maxFiles, maxBytes),
        };
    const stream = (await this.#o.docker.getContainer(this.#o.containerId).logs({
      follow: true,
      stdout: true,
      stderr: true,
      timestamps: true,
      ...(this.#position > 0n ? { since: sinceParam(this.#position) as unknown as number } : {}),
    })) as unknown as NodeJS.ReadableStream;
    this.#stream = stream;
    let pending: Buffer = Buffer.alloc(0);
    stream.on('data', (chunk: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
      pending = this.#frames(pending);
    });
    const end = (): void => this.#finish();
    stream.on('end', end);
    stream.on('close', end);
    stream.on('error', (err: Error) => {
      this.#o.logger.warn({ container: this.#o.containerId, err: err.message }, 'container log stream failed');
      end();
    });
    this.#saveTimer = setInterval(() => this.#save(), SAVE_EVERY_MS);
    this.#saveTimer.unref();
  }

  // Docker's multiplexed stream: frames of [stream, 0, 0, 0, size (4 bytes BE)] + payload; each payload one timestamped message.
  #frames(buf: Buffer): Buffer {
    let off = 0;
    while (buf.length - off >= 8) {
      const size = buf.readUInt32BE(off + 4);
      if (buf.length - off - 8 < size) break;
      const kind = buf[off];
      const payload = buf.subarray(off + 8, off + 8 + size);
      off += 8 + size;
      const space = payload.indexOf(0x20);
      const ts = space > 0 ? timestampNanos(payload.subarray(0, space).toString('latin1')) : 0n;
      // `since` is inclusive: what was already written on an earlier run is skipped.
      if (this.#resumeFrom !== 0n && ts !== 0n && ts <= this.#resumeFrom) continue;
      if (ts > this.#position) this.#position = ts;
      const text = space > 0 ? payload.subarray(space + 1) : payload;
      (kind === 2 ? this.#sinks?.stderr : this.#sinks?.stdout)?.write(text);
    }
    return off === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(off));
  }

  #save(): void {
    if (this.#position === 0n || this.#position === this.#saved) return;
    try {
      writeFileSync(this.#o.positionFile, String(this.#position));
      this.#saved = this.#position;
    } catch {
      // The state dir is gone (the task was destroyed): nothing left to resume.
    }
  }

  #finish(): void {
    if (!this.#saveTimer && !this.#stream) return;
    clearInterval(this.#saveTimer);
    this.#saveTimer = undefined;
    this.#stream = undefined;
    this.#save();
    this.#sinks?.stdout.close();
    this.#sinks?.stderr.close();
    this.#sinks = undefined;
    this.#ended();
  }

  /** Stops following (the agent shuts down: the position is kept for the next one). Safe twice. */
  stop(): void {
    const s = this.#stream as unknown as { destroy?: () => void } | undefined;
    this.#finish();
    s?.destroy?.();
  }
}
