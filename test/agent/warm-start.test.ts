// `berth agent` loads its code through a V8 code cache (src/warm-start/,
// issue 40): the first start in a fresh cache dir compiles the agent's
// bundle and writes the cache once idle; the next start takes it. Either
// way, and when the cache is torn, made by another Node (V8 refuses it) or
// the warm start is turned off or source maps are on (the ES modules), the agent answers its API
// and runs a job as it always did, and its debug log says which way it
// loaded and why (`warm start`).

import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { cacheFileFor, seal } from '../../src/warm-start/index.js';
import { AgentRun, freePort, REPO, until } from '../support/agent-run.js';
import { registration } from '../support/nomad-jobs.js';

const dir = mkdtempSync(path.join(tmpdir(), 'bws-'));
const cacheHome = path.join(dir, 'xdg-cache');
const cacheFiles = (): string[] => {
  try {
    // The agent's own (its executors keep theirs beside it: test/agent/helper-warm-start.test.ts).
    return readdirSync(path.join(cacheHome, 'berth')).filter((f) => f.startsWith('agent-bundle-') && f.endsWith('.v8cache'));
  } catch {
    return [];
  }
};
let runs = 0;
let agent: AgentRun | undefined;

/** The agent's log lines with message `msg`, parsed. */
function logLines(dataDir: string, msg: string): Record<string, unknown>[] {
  return readFileSync(path.join(dataDir, 'agent.log'), 'utf8')
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}"`))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Starts a dev agent (cache dir `cacheHome`, `env` added), runs a raw_exec job to running, stops it; returns its `warm start` line and data dir. */
async function startAndRunJob(env: Record<string, string> = {}, opts: { waitForCache?: boolean; nodeArgs?: string[] } = {}): Promise<{ warm: Record<string, unknown>; dataDir: string }> {
  const dataDir = path.join(dir, `agent-${++runs}`);
  agent = await new AgentRun(['--dev', '--data-dir', dataDir, '--port', String(await freePort()), '--log-level', 'debug'], { env: { XDG_CACHE_HOME: cacheHome, ...env }, nodeArgs: opts.nodeArgs ?? [] }).start();
  const headers = { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' };
  const spec = { id: 'warm', type: 'service', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['3600'] }, resources: { cpuMhz: 5, memoryMb: 10 } }] }] };
  const put = await fetch(`${agent.addr}/v1/jobs`, { method: 'PUT', headers, body: JSON.stringify(registration(spec)) });
  assert.equal(put.status, 200, await put.text());
  const a = agent;
  await until('the job to run', async () => {
    const allocs = (await (await fetch(`${a.addr}/v1/job/warm/allocations`, { headers })).json()) as { ClientStatus: string }[];
    return allocs.some((x) => x.ClientStatus === 'running') || undefined;
  });
  // The cache is written once the agent is idle after its start: the agent's log says so.
  if (opts.waitForCache) await until('the agent to tell what it did with its code cache', () => logLines(dataDir, 'warm start cache').length > 0 || undefined);
  const stopped = await agent.stop('SIGINT');
  assert.equal(stopped.code, 0, agent.stderr);
  const warm = logLines(dataDir, 'warm start');
  assert.equal(warm.length, 1, 'one `warm start` line');
  return { warm: warm[0]!, dataDir };
}

describe('berth agent through its code cache', () => {
  after(async () => {
    await agent?.stop('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('compiles its bundle on a first start, runs a job, and leaves a code cache (in place of an older build\'s)', async () => {
    const name = path.basename(cacheFileFor(JSON.parse(readFileSync(path.join(REPO, 'dist', 'warm-start.json'), 'utf8')).bundle as string));
    const older = path.join(cacheHome, 'berth', name.replace(/^agent-bundle-\w+-/, 'agent-bundle-OLDERBUILD-'));
    mkdirSync(path.dirname(older), { recursive: true });
    writeFileSync(older, 'a cache of an older build');
    const { warm, dataDir } = await startAndRunJob({}, { waitForCache: true });
    assert.equal(warm['path'], 'compiled');
    assert.match(String(warm['reason']), /no cache yet/);
    assert.match(String(logLines(dataDir, 'warm start cache')[0]!['result']), /^wrote /);
    assert.deepEqual(cacheFiles(), [name], 'the cache of this build alone');
  });

  it('takes that cache on the next start, and runs a job as well', async () => {
    const { warm } = await startAndRunJob();
    assert.equal(warm['path'], 'code-cache', String(warm['reason']));
  });

  it('a torn cache is not given to V8: the agent compiles, runs a job, and writes a sound cache again', async () => {
    const file = path.join(cacheHome, 'berth', cacheFiles()[0]!);
    const bytes = readFileSync(file);
    writeFileSync(file, bytes.subarray(0, bytes.length >> 1));
    const { warm } = await startAndRunJob({}, { waitForCache: true });
    assert.equal(warm['path'], 'compiled');
    assert.match(String(warm['reason']), /mismatch \(torn or corrupt\)/);
    assert.equal((await startAndRunJob()).warm['path'], 'code-cache');
  });

  it('a sealed cache V8 refuses (another Node, other flags) is said so, and the agent still runs a job', async () => {
    const file = path.join(cacheHome, 'berth', cacheFiles()[0]!);
    writeFileSync(file, seal(Buffer.from('not V8 code cache bytes, as another Node would have made them')));
    const { warm } = await startAndRunJob({}, { waitForCache: true });
    assert.equal(warm['path'], 'compiled');
    assert.match(String(warm['reason']), /rejected by V8/);
  });

  it('BERTH_WARM_START=0 starts from the ES modules, and the agent runs a job as well', async () => {
    const { warm } = await startAndRunJob({ BERTH_WARM_START: '0' });
    assert.equal(warm['path'], 'modules');
    assert.match(String(warm['reason']), /BERTH_WARM_START=0/);
  });

  it('under node --enable-source-maps it starts from the ES modules (stack traces then name src/)', async () => {
    const { warm } = await startAndRunJob({}, { nodeArgs: ['--enable-source-maps'] });
    assert.equal(warm['path'], 'modules');
    assert.match(String(warm['reason']), /source maps/);
  });
});
