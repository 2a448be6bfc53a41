// Each berth command loads only what it uses (issue 10): the real compiled
// `bin/berth.js`, run with a hook that records every module the process
// loads. Modules bundled into dist/ are known by the `sources` of each
// chunk's source map; packages left in node_modules by their own path.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AgentRun, cleanEnv, REPO } from '../support/agent-run.js';

const BERTH = path.join(REPO, 'bin', 'berth.js');
const RECORDER = path.join(REPO, 'test', 'packaging', '_record-modules.mjs');
const work = mkdtempSync(path.join(tmpdir(), 'berth-modules-'));
let runs = 0;

/** Sources (`src/...`) and packages (`node_modules/<name>`) one run of berth loaded. */
interface Loaded {
  sources: Set<string>;
  packages: Set<string>;
  code: number | null;
  stderr: string;
}

function packageOf(file: string): string | undefined {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file);
  return m?.[1];
}

function modulesIn(files: readonly string[]): Pick<Loaded, 'sources' | 'packages'> {
  const sources = new Set<string>();
  const packages = new Set<string>();
  for (const file of files) {
    const pkg = packageOf(file);
    if (pkg) packages.add(pkg);
    if (!file.startsWith(path.join(REPO, 'dist') + '/') || !file.endsWith('.js')) continue;
    // The build is minified (no `// <path>` lines left): the chunk's source map names what went into it.
    const map = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as { sources: string[] };
    for (const bundled of map.sources.map((s) => s.replace(/^(\.\.\/)+/, ''))) {
      const inner = packageOf(bundled as string);
      if (inner) packages.add(inner);
      else sources.add(bundled as string);
    }
  }
  return { sources, packages };
}

/** Runs berth with `args` until it exits, or, with `until`, until `until` says so (then SIGINT). */
async function record(args: readonly string[], opts: { env?: Record<string, string>; until?: (stderr: string) => boolean } = {}): Promise<Loaded> {
  const file = path.join(work, `run-${++runs}.txt`);
  const child = spawn(process.execPath, ['--import', RECORDER, BERTH, ...args], {
    env: cleanEnv({ BERTH_RECORD_MODULES: file, ...opts.env }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  let interrupted = false;
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
    // One SIGINT: a second one, once berth has let go of its handlers, kills it.
    if (!interrupted && opts.until?.(stderr)) {
      interrupted = true;
      child.kill('SIGINT');
    }
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  const files = existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
  return { ...modulesIn([...new Set(files)]), code, stderr };
}

const HEAVY = ['@grpc/grpc-js', '@bufbuild/protobuf', 'fastify', 'yaml', 'better-sqlite3', 'zod', 'ws'];
// Berth's own HCL engine (src/hcl/) is the HCL parser; yaml comes with its yamlencode/yamldecode.
const loadedHcl = (loaded: Loaded): boolean => [...loaded.sources].some((s) => s.startsWith('src/hcl/'));

function assertNone(loaded: Loaded, packages: readonly string[], what: string, opts: { gen?: boolean } = {}): void {
  assert.ok(loaded.sources.has('src/main.ts'), `${what}: the recorder saw the compiled build (stderr: ${loaded.stderr})`);
  const found = packages.filter((p) => loaded.packages.has(p));
  assert.deepEqual(found, [], `${what} loaded ${found.join(', ')}`);
  if (opts.gen) return;
  const gen = [...loaded.sources].filter((s) => s.startsWith('src/gen/'));
  assert.deepEqual(gen, [], `${what} loaded generated protobuf code`);
}

describe('each berth command loads only what it uses', () => {
  const agent = new AgentRun(['--dev', '--port', '0', '--data-dir', path.join(work, 'agent')]);

  before(async () => {
    await agent.start();
  });

  after(async () => {
    await agent.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('--version and --help load no gRPC, protobuf code, HTTP server, HCL parser or database', async () => {
    for (const args of [['--version'], ['--help'], ['job', '--help'], ['volume', 'status', '--help']]) {
      const loaded = await record(args);
      assert.equal(loaded.code, 0, `berth ${args.join(' ')}: ${loaded.stderr}`);
      assertNone(loaded, HEAVY, `berth ${args.join(' ')}`);
      assert.ok(![...loaded.sources].some((s) => s.startsWith('src/agent/') || s.startsWith('src/structs/') || s.startsWith('src/hcl/')), `berth ${args.join(' ')} loaded the agent or the spec parser`);
    }
  });

  it('the commands that talk to the API load none of them either, answered or not', async () => {
    const env = { BERTH_ADDR: agent.addr, BERTH_TOKEN: agent.token };
    for (const args of [['node', 'status'], ['plugin', 'status'], ['job', 'status'], ['volume', 'status'], ['alloc', 'status', 'nope']]) {
      const loaded = await record(args, { env });
      assert.ok(loaded.code === 0 || args[2] === 'nope', `berth ${args.join(' ')}: ${loaded.stderr}`);
      assertNone(loaded, HEAVY, `berth ${args.join(' ')}`);
      assert.ok(!loadedHcl(loaded), `berth ${args.join(' ')} loaded the HCL engine`);
    }
    const unreachable = await record(['node', 'status'], { env: { BERTH_ADDR: 'http://127.0.0.1:1' } });
    assert.equal(unreachable.code, 3, unreachable.stderr);
    assertNone(unreachable, HEAVY, 'berth node status (agent unreachable)');
  });

  it('the HCL parser loads once a file is read', async () => {
    const loaded = await record(['job', 'validate', path.join(REPO, 'examples', 'hostpath-plugin.hcl')], { env: { BERTH_ADDR: agent.addr, BERTH_TOKEN: agent.token } });
    assert.equal(loaded.code, 0, loaded.stderr);
    assert.ok(loadedHcl(loaded));
    // The spec schemas know CSI capabilities (the csi layer): what reads a file
    // may load the CSI code, never the agent's HTTP server or database.
    assertNone(loaded, ['fastify', 'better-sqlite3', 'node-pty', 'ws'], 'berth job validate', { gen: true });
  });

  it('berth plugin hostpath loads the plugin and no agent, HTTP server, database or HCL parser', async () => {
    const dir = path.join(work, 'plugin');
    const loaded = await record(['plugin', 'hostpath', '--endpoint', `unix://${dir}/csi.sock`, '--node-id', 'n1', '--data-dir', `${dir}/data`], {
      until: (stderr) => stderr.includes('hostpath plugin started'),
    });
    assert.equal(loaded.code, 0, loaded.stderr);
    assert.ok(loaded.packages.has('@grpc/grpc-js'));
    assert.ok([...loaded.sources].some((s) => s.startsWith('src/csi-plugins/hostpath/')));
    assertNone(loaded, ['fastify', 'yaml', 'better-sqlite3', 'zod', 'ws', 'node-pty'], 'berth plugin hostpath', { gen: true });
    assert.ok(!loadedHcl(loaded), 'berth plugin hostpath loaded the HCL engine');
    const others = [...loaded.sources].filter((s) => /^src\/(agent|server|client|structs)\//.test(s));
    assert.deepEqual(others, [], 'berth plugin hostpath loaded agent code');
  });
});
