// The framing of Nomad's streamed files and logs (its client's
// streamframer): file bytes become StreamFrame JSON objects
// (src/api/alloc-client.ts), batched for up to 200 ms or 64 KiB, one after
// another with a newline; an idle stream sends a `{}` heartbeat each second
// so that a client (and the agent) learn when the other side went away. In
// plain mode only the bytes are written.

import { PassThrough, type Readable } from 'node:stream';
import type * as api from '../api/index.js';

export interface StreamFramerOptions {
  /** Write the bytes alone, no frames, no heartbeats (`plain=true`, cat, readat). */
  plain: boolean;
  /** Idle time before a heartbeat frame. Default 1 s. */
  heartbeatMs?: number;
  /** How long data waits for more before it is sent. Default 200 ms. */
  batchMs?: number;
  /** Most bytes of data in one frame. Default 64 KiB. */
  frameSize?: number;
}

/**
 * Turns file data into the response body. `send` buffers data for one
 * file (a change of file or an event sends what is buffered first) and
 * resolves once the body has room again; `end` sends the rest and ends the
 * body; `destroy` ends it at once. Not safe to call `send` concurrently.
 */
export class StreamFramer {
  /** The response body. */
  readonly output: Readable;
  readonly #out = new PassThrough();
  readonly #plain: boolean;
  readonly #batchMs: number;
  readonly #frameSize: number;
  #file = '';
  #event = '';
  #chunks: Buffer[] = [];
  #buffered = 0;
  /** The file offset after the buffered data. */
  #offset = 0;
  #batch: NodeJS.Timeout | undefined;
  readonly #heartbeat: NodeJS.Timeout | undefined;
  #lastWrite = Date.now();

  constructor(opts: StreamFramerOptions) {
    this.output = this.#out;
    this.#plain = opts.plain;
    this.#batchMs = opts.batchMs ?? 200;
    this.#frameSize = opts.frameSize ?? 64 * 1024;
    const heartbeatMs = opts.heartbeatMs ?? 1000;
    if (!this.#plain) {
      this.#heartbeat = setInterval(() => {
        if (Date.now() - this.#lastWrite >= heartbeatMs && !this.#chunks.length) this.#write('{}\n');
      }, heartbeatMs);
      this.#heartbeat.unref();
    }
    this.#out.once('close', () => this.#stopTimers());
  }

  /** Whether the body was closed (the client went away, or end/destroy). */
  get closed(): boolean {
    return this.#out.destroyed || this.#out.writableEnded;
  }

  /**
   * Adds `data` of `file` (its path in the allocation directory), whose end
   * is at `offset` in the file, or a `fileEvent` (with no data). Resolves
   * once the body has room for more.
   */
  async send(file: string, data: Buffer, offset: number, fileEvent = ''): Promise<void> {
    if (this.closed) return;
    if (this.#chunks.length && (file !== this.#file || fileEvent !== this.#event)) this.#flush();
    this.#file = file;
    this.#event = fileEvent;
    if (data.length) {
      this.#chunks.push(data);
      this.#buffered += data.length;
    }
    this.#offset = offset;
    if (fileEvent && !data.length) this.#frame(Buffer.alloc(0));
    else if (this.#buffered >= this.#frameSize) this.#flush();
    else if (this.#buffered && !this.#batch) this.#batch = setTimeout(() => this.#flush(), this.#batchMs);
    if (this.#out.writableNeedDrain) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          this.#out.off('drain', done);
          this.#out.off('close', done);
          resolve();
        };
        this.#out.once('drain', done);
        this.#out.once('close', done);
      });
    }
  }

  /** Sends what is buffered and ends the body. Safe twice. */
  end(): void {
    if (this.closed) return;
    this.#flush();
    this.#stopTimers();
    this.#out.end();
  }

  /** Ends the body at once, without what is buffered (the client went away). Safe twice. */
  destroy(): void {
    this.#stopTimers();
    this.#out.destroy();
  }

  #flush(): void {
    if (this.#batch) clearTimeout(this.#batch);
    this.#batch = undefined;
    if (!this.#chunks.length) return;
    const all = Buffer.concat(this.#chunks);
    this.#chunks = [];
    this.#buffered = 0;
    const start = this.#offset - all.length;
    for (let at = 0; at < all.length; at += this.#frameSize) {
      const part = all.subarray(at, Math.min(all.length, at + this.#frameSize));
      this.#frame(part, start + at + part.length);
    }
  }

  #frame(data: Buffer, offset = this.#offset): void {
    if (this.#plain) {
      if (data.length) this.#write(data);
      return;
    }
    const frame: api.StreamFrame = {};
    if (offset) frame.Offset = offset;
    if (data.length) frame.Data = data.toString('base64');
    if (this.#file) frame.File = this.#file;
    if (this.#event) frame.FileEvent = this.#event;
    this.#write(`${JSON.stringify(frame)}\n`);
  }

  #write(chunk: Buffer | string): void {
    if (this.closed) return;
    this.#lastWrite = Date.now();
    this.#out.write(chunk);
  }

  #stopTimers(): void {
    if (this.#batch) clearTimeout(this.#batch);
    this.#batch = undefined;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
  }
}
