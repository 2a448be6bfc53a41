// The concurrent-submit bench's clients: N submissions released at once,
// each from its own thread over its own connection, as N separate CLI
// processes or simple HTTP clients would send them. Three kinds:
// - `pthreads` (the default when `cc` is on the PATH, which node-gyp needs
//   anyway): N POSIX threads of one small C program (bench/_submitters.c,
//   compiled into the bench's directory), blocking sockets. A request costs
//   its thread a few microseconds of CPU, so what it reports is the server's.
// - `threads` (the default without `cc`, when python3 is there): N threads of
//   one Python process, http.client each. Their own CPU and the interpreter's
//   lock put a floor under what they report: against a bare node:http server
//   answering at once p50 ~90 ms on this 2-core machine, the figure issue 25
//   gives for Nomad with one client thread per job.
// - `workers`: N Node worker threads of the bench's own process. Each is a
//   V8 isolate whose wake-up and first request cost milliseconds of CPU, so
//   their floor against the same bare server is ~0.9 s (p50): figures taken
//   with them (docs/benchmarks.md's first and second passes) sit on that floor.
// BENCH_SUBMIT_HARNESS=pthreads|threads|workers picks one.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

export type SubmitterKind = 'pthreads' | 'threads' | 'workers';

const KINDS: readonly SubmitterKind[] = ['pthreads', 'threads', 'workers'];

/** One submission as its thread saw it: wall-clock ms (epoch) when it began and ended, the HTTP status, the body of a failure. */
export interface Submitted {
  start: number;
  end: number;
  status: number;
  text: string;
}

export interface Burst {
  /** Resolves once every thread is started and waits at the gate. */
  ready: Promise<void>;
  /** Opens the gate; returns when (wall-clock ms). */
  release(): number;
  /** Every submission's outcome, once all have one. */
  results: Promise<Submitted[]>;
  /** Ends the threads (safe at any time, twice). */
  close(): Promise<void>;
}

/** The harness BENCH_SUBMIT_HARNESS names, else `pthreads` when cc builds it here, else `threads` when python3 runs, else `workers`. */
export function submitterKind(): SubmitterKind {
  const asked = process.env['BENCH_SUBMIT_HARNESS'];
  if (KINDS.includes(asked as SubmitterKind)) return asked as SubmitterKind;
  if (asked) throw new Error(`BENCH_SUBMIT_HARNESS must be one of ${KINDS.join(', ')}, not "${asked}"`);
  if (pthreadsProgram()) return 'pthreads';
  return spawnSync('python3', ['-c', 'import http.client, threading'], { stdio: 'ignore' }).status === 0 ? 'threads' : 'workers';
}

/** What each harness is, for the bench's output. */
export function describeSubmitters(kind: SubmitterKind): string {
  return { pthreads: 'POSIX threads (bench/_submitters.c)', threads: 'Python threads (python3, http.client)', workers: 'Node worker threads' }[kind];
}

let built: string | null | undefined;

/** The C submitters built once a process with `cc -O2 -pthread` (null when that fails), in a temp dir removed when the process exits. */
function pthreadsProgram(): string | null {
  if (built !== undefined) return built;
  const source = join(dirname(fileURLToPath(import.meta.url)), '_submitters.c');
  const dir = mkdtempSync(join(tmpdir(), 'berth-submitters-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const out = join(dir, 'submitters');
  const cc = existsSync(source) ? spawnSync('cc', ['-O2', '-pthread', '-o', out, source], { stdio: ['ignore', 'ignore', 'pipe'] }) : undefined;
  built = cc?.status === 0 ? out : null;
  return built;
}

const now = (): number => performance.timeOrigin + performance.now();

/** PUTs each of `bodies` to `url` (bearer `token`) from a thread of its own, all released at once. */
export function startSubmitters(kind: SubmitterKind, url: string, token: string, bodies: readonly string[]): Burst {
  if (kind === 'workers') return nodeWorkers(url, token, bodies);
  if (kind === 'threads') return lineChild('python3', ['-c', PYTHON], JSON.stringify({ url, token, bodies }) + '\n');
  const program = pthreadsProgram();
  if (!program) throw new Error('the pthreads submitters need a C compiler (cc) and bench/_submitters.c');
  const u = new URL(url);
  if (bodies.some((b) => b.includes('\n'))) throw new Error('the pthreads submitters take one body a line');
  return lineChild(program, [], `${u.hostname} ${u.port} ${u.pathname} ${token}\n${bodies.join('\n')}\n\n`);
}

// One Python thread a submission: it waits on the shared event, then sends
// its PUT over a connection of its own and records what it saw.
const PYTHON = `
import sys, json, threading, time, http.client, urllib.parse
cfg = json.loads(sys.stdin.readline())
u = urllib.parse.urlsplit(cfg['url'])
gate = threading.Event()
out = [None] * len(cfg['bodies'])
def submit(i, body):
    gate.wait()
    start = time.time() * 1000
    try:
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
        c.request('PUT', u.path, body, {'content-type': 'application/json', 'authorization': 'Bearer ' + cfg['token']})
        r = c.getresponse()
        text = r.read().decode('utf-8', 'replace')
        c.close()
        out[i] = {'start': start, 'end': time.time() * 1000, 'status': r.status, 'text': '' if r.status == 200 else text[:300]}
    except Exception as e:
        out[i] = {'start': start, 'end': 0, 'status': 0, 'text': repr(e)}
threads = [threading.Thread(target=submit, args=(i, b)) for i, b in enumerate(cfg['bodies'])]
for t in threads: t.start()
print('ready', flush=True)
sys.stdin.readline()
gate.set()
for t in threads: t.join()
print(json.dumps(out), flush=True)
`;

/** A child that reads its burst on stdin, says `ready`, sends on `go` and prints its results as one JSON line. */
function lineChild(command: string, args: string[], input: string): Burst {
  const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });
  let stdout = '';
  const lines: Array<(line: string) => void> = [];
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    for (let nl = stdout.indexOf('\n'); nl >= 0 && lines.length; nl = stdout.indexOf('\n')) {
      const line = stdout.slice(0, nl);
      stdout = stdout.slice(nl + 1);
      lines.shift()!(line);
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const nextLine = (what: string): Promise<string> =>
    Promise.race([
      new Promise<string>((resolve) => lines.push(resolve)),
      exited.then((code): never => {
        throw new Error(`the ${command} submitters exited (${code}) before ${what}`);
      }),
    ]);
  const ready = nextLine('they were ready').then(() => undefined);
  child.stdin.write(input);
  const results = ready.then(() => nextLine('they reported').then((line) => JSON.parse(line) as Submitted[]));
  return {
    ready,
    release: () => {
      const t0 = now();
      child.stdin.write('go\n');
      return t0;
    },
    results,
    close: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill();
      await exited;
    },
  };
}

// One Node worker a submission: plain JS (no transpiler to load in 200
// threads). It says `ready`, blocks on the shared gate until the main thread
// opens it, then sends its one PUT over a fresh connection and reports the
// latency it saw (the clock is the shared wall clock of performance.timeOrigin + now()).
const SUBMITTER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { url, token, body, gate } = workerData;
parentPort.postMessage({ ready: true });
Atomics.wait(gate, 0, 0);
const start = performance.timeOrigin + performance.now();
const req = http.request(url, {
  method: 'PUT',
  agent: new http.Agent({ keepAlive: false, maxSockets: 1 }),
  headers: { authorization: 'Bearer ' + token, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
}, (res) => {
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (d) => (text += d));
  res.on('end', () => parentPort.postMessage({ start, end: performance.timeOrigin + performance.now(), status: res.statusCode, text: res.statusCode === 200 ? '' : text.slice(0, 300) }));
});
req.on('error', (err) => parentPort.postMessage({ start, end: 0, status: 0, text: String(err) }));
req.end(body);
`;

function nodeWorkers(url: string, token: string, bodies: readonly string[]): Burst {
  const gate = new Int32Array(new SharedArrayBuffer(4));
  const workers: Worker[] = [];
  const results: Array<Promise<Submitted>> = [];
  const ready: Array<Promise<void>> = [];
  for (const body of bodies) {
    const w = new Worker(SUBMITTER, { eval: true, execArgv: [], workerData: { url, token, body, gate } });
    workers.push(w);
    ready.push(new Promise((resolve, reject) => w.once('message', () => resolve()).once('error', reject)));
    results.push(
      new Promise((resolve, reject) => {
        let first = true;
        w.on('message', (m: Submitted & { ready?: boolean }) => {
          if (first && m.ready) {
            first = false;
            return;
          }
          resolve(m);
        });
        w.once('error', reject);
      }),
    );
  }
  return {
    ready: Promise.all(ready).then(() => undefined),
    release: () => {
      const t0 = now();
      Atomics.store(gate, 0, 1);
      Atomics.notify(gate, 0);
      return t0;
    },
    results: Promise.all(results),
    close: async () => {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
