// Nomad's API figures of issue 36 for the jobs routes (section `nomad-api`
// of `npm run bench`), against a real server over real HTTP:
//
// 1. `GET /v1/jobs` with 1,000 jobs (each with one running allocation, so
//    every JobListStub carries a summary that counts something): p50 and
//    p99 of BENCH_NOMAD_LIST_ROUNDS (50) reads over a kept-alive connection.
// 2. A blocking `GET /v1/jobs?index=N` woken by a change: the read waits,
//    a job is registered (`PUT /v1/jobs`, a Nomad JSON job), and the read
//    answers with the list that holds it (recounted: the cache is stale).
//    Measured from the registration's write committed (seen in the server's
//    process) to the blocked read's answer received, and from the
//    registration sent (BENCH_NOMAD_WAKE_ROUNDS, 30).
//
// Each figure is printed with the load average, as the machine is shared.

import { loadavg } from 'node:os';
import { ManualClock, silentLogger } from '../src/lib/index.js';
import { Server } from '../src/server/index.js';
import { parseJobSpec, specToNomadJob } from '../src/structs/index.js';
import { round } from './_stats.js';

const JOBS = Number(process.env['BENCH_NOMAD_JOBS'] ?? 1000);
const LIST_ROUNDS = Number(process.env['BENCH_NOMAD_LIST_ROUNDS'] ?? 50);
const WAKE_ROUNDS = Number(process.env['BENCH_NOMAD_WAKE_ROUNDS'] ?? 30);
const TOKEN = 'bench-nomad-api-token-0123456789';
const NODE_TOKEN = 'bench-nomad-node-token-0123456789';

const load = (): string => loadavg()[0]!.toFixed(2);
const pct = (ms: readonly number[], q: number): number => round([...ms].sort((a, b) => a - b)[Math.min(ms.length - 1, Math.floor(q * ms.length))] ?? 0, 2);

/** A Nomad JSON registration body of a small service job. */
const registration = (id: string, count: number): string =>
  JSON.stringify({ Job: specToNomadJob(parseJobSpec({ id, groups: [{ name: 'g', count, tasks: [{ name: 't', driver: 'exec', resources: { cpuMhz: 1, memoryMb: 1 } }] }] })) });

export default async function nomadApi(dir: string): Promise<Record<string, unknown>> {
  const server = new Server({
    dataDir: dir,
    clock: new ManualClock(1_700_000_000_000),
    logger: silentLogger(),
    tokens: [
      { name: 'ops', secret: TOKEN, role: 'management' },
      { name: 'agents', secret: NODE_TOKEN, role: 'node' },
    ],
    heartbeatTtlMs: 3_600_000,
  });
  const { url } = await server.start();
  const headers = { 'x-nomad-token': TOKEN, 'content-type': 'application/json' };
  const call = async (method: string, path: string, body?: string, token = TOKEN): Promise<Response> => {
    const res = await fetch(url + path, { method, headers: { ...headers, 'x-nomad-token': token }, ...(body !== undefined ? { body } : {}) });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res;
  };
  try {
    // One node big enough for every job's allocation.
    const fingerprint = {
      name: 'bench-node',
      datacenter: 'dc1',
      httpAddr: '',
      drivers: { exec: { detected: true, healthy: true, healthReason: '', networkModes: ['host'] } },
      resources: { cpuMhz: 1_000_000, memoryMb: 1_000_000 },
      attributes: {},
      csiControllerPlugins: {},
      csiNodePlugins: {},
    };
    const node = ((await (await call('POST', '/v1/node/register', JSON.stringify({ fingerprint }), NODE_TOKEN)).json()) as { node: { id: string } }).node.id;
    const started = Date.now();
    for (let i = 0; i < JOBS; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, JOBS - i) }, (_, k) => call('PUT', '/v1/jobs', registration(`job-${String(i + k).padStart(4, '0')}`, 1))));
    }
    // Every job placed, and reported running by the node.
    let allocs: Array<{ id: string; desiredStatus: string }> = [];
    while (allocs.length < JOBS) {
      allocs = ((await (await call('GET', `/v1/internal/node/${node}/allocations`, undefined, NODE_TOKEN)).json()) as typeof allocs).filter((a) => a.desiredStatus === 'run');
      if (allocs.length < JOBS) await new Promise((r) => setTimeout(r, 100));
    }
    const report = JSON.stringify({ allocations: allocs.map((a) => ({ id: a.id, clientStatus: 'running' })) });
    await call('POST', `/v1/internal/node/${node}/allocations`, report, NODE_TOKEN);
    console.log(`  ${JOBS} jobs registered and running in ${Date.now() - started} ms`);

    // 1. The list.
    const first = (await (await call('GET', '/v1/jobs')).json()) as unknown[];
    if (first.length !== JOBS) throw new Error(`GET /v1/jobs listed ${first.length} jobs, not ${JOBS}`);
    const bytes = JSON.stringify(first).length;
    const listMs: number[] = [];
    const loadList = load();
    for (let r = 0; r < LIST_ROUNDS; r++) {
      const t0 = performance.now();
      await (await call('GET', '/v1/jobs')).arrayBuffer();
      listMs.push(performance.now() - t0);
    }
    const list = { p50Ms: pct(listMs, 0.5), p99Ms: pct(listMs, 0.99), answerKiB: round(bytes / 1024), rounds: LIST_ROUNDS, load: loadList };
    console.log(`  GET /v1/jobs with ${JOBS} jobs (${list.answerKiB} KiB): p50 ${list.p50Ms} ms, p99 ${list.p99Ms} ms (${LIST_ROUNDS} reads; load ${list.load})`);

    // 2. A blocking read woken by a registration: of the whole list, then of a prefix that lists only the new jobs.
    const woken = async (query: string, name: string): Promise<{ p50Ms: number; p99Ms: number; fromSendP50Ms: number; rounds: number; load: string }> => {
    const fromSend: number[] = [];
    const fromCommit: number[] = [];
    const loadWake = load();
    for (let r = 0; r < WAKE_ROUNDS; r++) {
      const index = Number((await call('GET', '/v1/jobs?per_page=1')).headers.get('x-nomad-index'));
      let answeredAt = 0;
      const blocked = call('GET', `/v1/jobs?${query}index=${index}&wait=60s`).then(async (res) => {
        await res.arrayBuffer();
        answeredAt = performance.now();
        return Number(res.headers.get('x-nomad-index'));
      });
      // Let the read reach the server and start waiting.
      await new Promise((res) => setTimeout(res, 50));
      // The moment the registration's write commits, seen in this process (the server's own store).
      const committed = server.store.blockUntil(['jobs'], index, { timeoutMs: 60_000 }).then(() => performance.now());
      const t0 = performance.now();
      await call('PUT', '/v1/jobs', registration(`${name}-${r}`, 0));
      if ((await blocked) <= index) throw new Error('the blocking read answered without the change');
      fromSend.push(answeredAt - t0);
      fromCommit.push(answeredAt - (await committed));
    }
    return { p50Ms: pct(fromCommit, 0.5), p99Ms: pct(fromCommit, 0.99), fromSendP50Ms: pct(fromSend, 0.5), rounds: WAKE_ROUNDS, load: loadWake };
    };
    const wake = await woken('', 'wake');
    console.log(
      `  blocking GET /v1/jobs?index=N (${JOBS}+ jobs listed) woken by PUT /v1/jobs: write committed -> list answered p50 ${wake.p50Ms} ms, p99 ${wake.p99Ms} ms; registration sent -> list answered p50 ${wake.fromSendP50Ms} ms (${WAKE_ROUNDS} rounds; load ${wake.load})`,
    );
    const wakePrefix = await woken('prefix=small-&', 'small');
    console.log(
      `  blocking GET /v1/jobs?prefix=small-&index=N (the new jobs listed) woken by PUT /v1/jobs: write committed -> list answered p50 ${wakePrefix.p50Ms} ms, p99 ${wakePrefix.p99Ms} ms (${WAKE_ROUNDS} rounds; load ${wakePrefix.load})`,
    );
    return { jobs: JOBS, list, wake, wakePrefix };
  } finally {
    await server.stop();
  }
}
