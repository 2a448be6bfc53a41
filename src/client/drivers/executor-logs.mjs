// @ts-check
// The executor's log files (see executor.mjs): RotatingFile, which every
// executor writes a task's stdout/stderr through, and the log monitor mode
// (Nomad's logmon) that holds the FIFOs of external driver plugins' tasks.
// Plain ESM beside executor.mjs (scripts/build.mjs copies it into dist too).

import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/** Appends to `<base>.<n>`, moving to n+1 past maxBytes and deleting files older than maxFiles. */
export class RotatingFile {
  /** @param {string} dir @param {string} base @param {number} maxFiles @param {number} maxBytes */
  constructor(dir, base, maxFiles, maxBytes) {
    this.dir = dir;
    this.base = base;
    this.maxFiles = maxFiles;
    this.maxBytes = maxBytes;
    const prefix = `${base}.`;
    const indexes = fs
      .readdirSync(dir)
      .filter((f) => f.startsWith(prefix) && /^\d+$/.test(f.slice(prefix.length)))
      .map((f) => Number(f.slice(prefix.length)));
    this.index = indexes.length ? Math.max(...indexes) : 0;
    this.fd = -1;
    this.size = 0;
    this.#open();
  }

  #open() {
    const file = path.join(this.dir, `${this.base}.${this.index}`);
    this.fd = fs.openSync(file, 'a', 0o640);
    this.size = fs.fstatSync(this.fd).size;
    for (let old = this.index - this.maxFiles; old >= 0; old--) {
      const f = path.join(this.dir, `${this.base}.${old}`);
      if (!fs.existsSync(f)) break;
      fs.rmSync(f, { force: true });
    }
  }

  /** @param {Buffer} chunk */
  write(chunk) {
    let off = 0;
    while (off < chunk.length) {
      if (this.size >= this.maxBytes) {
        fs.closeSync(this.fd);
        this.index++;
        this.#open();
      }
      const n = Math.min(chunk.length - off, this.maxBytes - this.size);
      fs.writeSync(this.fd, chunk, off, n);
      off += n;
      this.size += n;
    }
  }

  close() {
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
  }
}

/**
 * @typedef {{ dir: string, maxFiles: number, maxFileBytes: number, fifos: Array<{ fifo: string, base: string }> }} LogTarget
 * @typedef {{ readers: net.Socket[], files: RotatingFile[], fifos: string[] }} Collected
 */

/**
 * Log monitor mode: see the header. One per node: a control socket takes
 * one JSON line per connection, `{ op: 'add', target }` (hold a task's FIFOs
 * and rotate what arrives; a repeat is a no-op) or `{ op: 'remove', fifo }`
 * (drain, then let go), and answers `{ ok }`. A task whose FIFOs were
 * removed (its allocation collected) is let go by itself; with no task for
 * IDLE_EXIT_MS, or its socket gone, the monitor exits. Reports
 * `{ ok: true, pid }` once it listens.
 * @param {{ socketPath: string }} cfg
 * @param {(msg: unknown) => void} report
 */
export function logmon(cfg, report) {
  const IDLE_EXIT_MS = 60_000;
  /** @type {Map<string, Collected>} */
  const tasks = new Map();
  let idleSince = Date.now();
  /** @param {LogTarget} t */
  const add = (t) => {
    const key = t.fifos[0]?.fifo ?? '';
    if (tasks.has(key)) return;
    fs.mkdirSync(t.dir, { recursive: true });
    /** @type {Collected} */
    const c = { readers: [], files: [], fifos: t.fifos.map((f) => f.fifo) };
    for (const { fifo, base } of t.fifos) {
      const file = new RotatingFile(t.dir, base, t.maxFiles, t.maxFileBytes);
      c.files.push(file);
      const sock = new net.Socket({ fd: fs.openSync(fifo, fs.constants.O_RDWR | fs.constants.O_NONBLOCK), readable: true, writable: false });
      sock.on('data', (/** @type {Buffer} */ chunk) => file.write(chunk));
      sock.on('error', () => undefined);
      c.readers.push(sock);
    }
    tasks.set(key, c);
  };
  /** @param {string} key @returns {Promise<void>} */
  const remove = (key) =>
    new Promise((resolve) => {
      const c = tasks.get(key);
      if (!c) return resolve();
      tasks.delete(key);
      if (tasks.size === 0) idleSince = Date.now();
      // What is already in the pipes arrives in the next turns of the loop.
      setTimeout(() => {
        for (const r of c.readers) r.destroy();
        for (const f of c.files) f.close();
        resolve();
      }, 100);
    });
  const server = net.createServer((conn) => {
    let buf = '';
    conn.setEncoding('utf8');
    conn.on('error', () => undefined);
    conn.on('data', async (/** @type {string} */ d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      try {
        const msg = JSON.parse(buf.slice(0, nl));
        if (msg.op === 'add') add(msg.target);
        else if (msg.op === 'remove') await remove(msg.fifo);
        conn.end(`${JSON.stringify({ ok: true })}\n`);
      } catch (err) {
        conn.end(`${JSON.stringify({ ok: false, error: /** @type {Error} */ (err).message })}\n`);
      }
    });
  });
  fs.rmSync(cfg.socketPath, { force: true });
  server.listen(cfg.socketPath, () => report({ ok: true, pid: process.pid }));
  setInterval(() => {
    for (const [key, c] of tasks) if (c.fifos.some((f) => !fs.existsSync(f))) void remove(key);
    if (!fs.existsSync(cfg.socketPath) || (tasks.size === 0 && Date.now() - idleSince > IDLE_EXIT_MS)) {
      server.close();
      process.exit(0);
    }
  }, 2000);
}

