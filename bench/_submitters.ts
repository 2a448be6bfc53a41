// The concurrent-submit bench's clients: N submissions released at once,
// each from its own thread over its own connection, as N separate CLI
// processes or simple HTTP clients would send them. Two kinds:
// - `threads` (the default when python3 is on the PATH, which node-gyp needs
//   anyway): N threads of one Python process, http.client each. A thread is
//   cheap to wake, so the latency it reports is the server's: against a bare
//   node:http server answering at once its p50 is ~90 ms on this 2-core
//   machine, the figure issue 25 gives for Nomad with one client thread per job.
// - `workers`: N Node worker threads of the bench's own process. Each is a
//   V8 isolate whose wake-up and first request cost milliseconds of CPU, so
//   their floor against the same bare server is ~0.9 s (p50): figures taken
//   with them (the README's first and second passes) sit on that floor.
// BENCH_SUBMIT_HARNESS=threads|workers picks one.

import { spawn, spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';

export type SubmitterKind = 'threads' | 'workers';

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

/** The harness BENCH_SUBMIT_HARNESS names, else `threads` when python3 runs here, else `workers`. */
export function submitterKind(): SubmitterKind {
  const asked = process.env['BENCH_SUBMIT_HARNESS'];
  if (asked === 'threads' || asked === 'workers') return asked;
  if (asked) throw new Error(`BENCH_SUBMIT_HARNESS must be threads or workers, not "${asked}"`);
  return spawnSync('python3', ['-c', 'import http.client, threading'], { stdio: 'ignore' }).status === 0 ? 'threads' : 'workers';
}

const now = (): number => performance.timeOrigin + performance.now();

/** POSTs each of `bodies` to `url` (bearer `token`) from a thread of its own, all released at once. */
export function startSubmitters(kind: SubmitterKind, url: string, token: string, bodies: readonly string[]): Burst {
  return kind === 'threads' ? pythonThreads(url, token, bodies) : nodeWorkers(url, token, bodies);
}

// One Python thread a submission: it waits on the shared event, then sends
// its POST over a connection of its own and records what it saw.
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
        c.request('POST', u.path, body, {'content-type': 'application/json', 'authorization': 'Bearer ' + cfg['token']})
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

function pythonThreads(url: string, token: string, bodies: readonly string[]): Burst {
  const child = spawn('python3', ['-c', PYTHON], { stdio: ['pipe', 'pipe', 'inherit'] });
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
        throw new Error(`the python3 submitters exited (${code}) before ${what}`);
      }),
    ]);
  const ready = nextLine('they were ready').then(() => undefined);
  child.stdin.write(JSON.stringify({ url, token, bodies }) + '\n');
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
// opens it, then sends its one POST over a fresh connection and reports the
// latency it saw (the clock is the shared wall clock of performance.timeOrigin + now()).
const SUBMITTER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { url, token, body, gate } = workerData;
parentPort.postMessage({ ready: true });
Atomics.wait(gate, 0, 0);
const start = performance.timeOrigin + performance.now();
const req = http.request(url, {
  method: 'POST',
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
