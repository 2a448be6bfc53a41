// Berth installed the way a user installs it (issue 10): `npm pack`, then
// `npm install -g` of the tarball into a fresh prefix, and the installed
// `berth` run from a directory outside the repository: a dev agent starts,
// the hostpath plugin job (the package's own examples/) becomes healthy, and
// a job with a volume runs, completes and releases its claim. The tarball
// holds what a user runs and none of the tests, benchmarks or test kits.
//
// The install uses npm's cache (filled by `npm ci`) where it can. The two
// native addons (better-sqlite3, node-pty) have no prebuilt Linux binary
// here, so a user's install compiles them (some 3-7 minutes on the 2-core
// dev machine). To keep the suite short the test installs with
// --ignore-scripts and puts the addons this checkout compiled (same
// versions, same Node) in place; BERTH_PACK_REBUILD=1 runs their install
// scripts instead, exactly as a user's install does.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cleanEnv, mountsUnder, REPO, runProcess, until, type BerthResult } from '../support/agent-run.js';

const work = mkdtempSync(path.join(tmpdir(), 'berth-pack-'));
const prefix = path.join(work, 'prefix');
const outside = path.join(work, 'home');
const installed = path.join(prefix, 'lib', 'node_modules', '@berth-orchestrator', 'berth');
const BIN = path.join(prefix, 'bin', 'berth');

const NATIVE = ['better-sqlite3', 'node-pty'];

/** Puts this checkout's compiled build/Release of `addon` into the installed package (same version only). */
function useCompiledAddon(addon: string): void {
  const version = (dir: string): string => (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  const ours = path.join(REPO, 'node_modules', addon);
  const theirs = path.join(installed, 'node_modules', addon);
  assert.ok(existsSync(theirs), `npm installed no ${addon}`);
  assert.equal(version(theirs), version(ours), `the package installed ${addon} ${version(theirs)}, the checkout has ${version(ours)}: run with BERTH_PACK_REBUILD=1`);
  cpSync(path.join(ours, 'build', 'Release'), path.join(theirs, 'build', 'Release'), { recursive: true, filter: (src) => !/\/obj(\.target)?(\/|$)|\.a$/.test(src) });
}

type Run = BerthResult;

function run(cmd: string, args: readonly string[], opts: { cwd: string; env?: Record<string, string>; timeoutMs?: number }): Promise<Run> {
  return runProcess(cmd, args, { cwd: opts.cwd, env: opts.env ?? cleanEnv(), timeoutMs: opts.timeoutMs ?? 120_000 });
}

function ok(r: Run, what: string): string {
  assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout:\n${r.stdout}\nstderr:\n${r.stderr.slice(-4000)}`);
  return r.stdout;
}

describe('berth from its npm package', { timeout: 900_000 }, () => {
  let tarball = '';
  const env = (extra: Record<string, string> = {}): Record<string, string> => cleanEnv({ PATH: `${path.join(prefix, 'bin')}:${process.env['PATH'] ?? ''}`, ...extra });

  before(async () => {
    mkdirSync(outside, { recursive: true });
    // npm pack runs `prepare` (the build) first.
    const packed = ok(await run('npm', ['pack', '--json', '--pack-destination', work], { cwd: REPO, env: cleanEnv(), timeoutMs: 300_000 }), 'npm pack');
    tarball = path.join(work, (JSON.parse(packed.slice(packed.indexOf('['))) as Array<{ filename: string }>)[0]!.filename);
    const rebuild = process.env['BERTH_PACK_REBUILD'] === '1';
    const npmArgs = ['install', '-g', tarball, '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund'];
    npmArgs.push(rebuild ? '--allow-scripts=better-sqlite3,node-pty' : '--ignore-scripts');
    ok(await run('npm', npmArgs, { cwd: outside, env: cleanEnv(), timeoutMs: 840_000 }), 'npm install -g');
    if (!rebuild) for (const addon of NATIVE) useCompiledAddon(addon);
  });

  after(() => {
    for (const m of mountsUnder(work).sort().reverse()) void run('umount', ['-l', m], { cwd: '/' });
    rmSync(work, { recursive: true, force: true });
  });

  it('ships compiled code, the executor, examples and proto, and no tests, benchmarks, fakes or sources', async () => {
    const files = ok(await run('tar', ['tzf', tarball], { cwd: work }), 'tar').split('\n').filter(Boolean).map((f) => f.replace(/^package\//, ''));
    // `berth agent`'s warm start (src/warm-start/): its entry, and the one-file bundle warm-start.json names.
    const agentBundle = `dist/${(JSON.parse(readFileSync(path.join(installed, 'dist', 'warm-start.json'), 'utf8')) as { bundle: string }).bundle}`;
    // The packages the bundle leaves to its side file (scripts/bundle-trims.mjs, packagesAside), required at their first use.
    const aside = /require\("\.\/(agent-aside-\w+\.cjs)"\)/.exec(readFileSync(path.join(installed, agentBundle), 'latin1'))?.[1];
    assert.ok(aside, `${agentBundle} names no side file`);
    for (const needed of ['bin/berth.js', 'dist/main.js', 'dist/warm-start.js', 'dist/warm-start.json', agentBundle, `dist/${aside}`, 'dist/executor.cjs', 'dist/executor.mjs', 'dist/mount-helper.cjs', 'dist/api-worker.cjs', 'dist/executor-spawn.mjs', 'dist/executor-logs.mjs', 'dist/mount-helper.mjs', 'dist/mount-table.mjs', 'dist/_tmpfs-mounter.mjs', 'dist/ui/index.html', 'examples/hostpath-plugin.hcl', 'proto/csi/v1/csi.proto', 'README.md']) {
      assert.ok(files.includes(needed), `the tarball lacks ${needed}`);
    }
    const unwanted = files.filter((f) => /^(src|test|bench|scripts)\//.test(f) || /\.test\.|\.bench\.|\.ts$/.test(f));
    assert.deepEqual(unwanted, []);
    // Nothing of the test kits that still live in src/ was bundled.
    // The server side's chunks (the web UI's, built apart from ui/src, carry no source map).
    const bundled = files.filter((f) => f.startsWith('dist/') && !f.startsWith('dist/ui/') && (f.endsWith('.js') || f.endsWith('.cjs')));
    const sources = new Set<string>();
    // The build is minified (no `// src/...` comments left): each chunk's shipped source map names what went into it.
    for (const f of bundled) {
      assert.ok(files.includes(`${f}.map`), `the tarball lacks ${f}.map`);
      const map = JSON.parse(readFileSync(path.join(installed, `${f}.map`), 'utf8')) as { sources: string[] };
      for (const s of map.sources) if (s.startsWith('../src/')) sources.add(s.slice(3));
    }
    assert.ok(sources.has('src/main.ts'));
    const kits = [...sources].filter((s) => /\/(fake|testing)\/|\/_harness\.ts$|\/_fake-harness\.ts$|\/_testing\.ts$|\.test\.ts$/.test(s));
    assert.deepEqual(kits, []);
    const pkg = JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    assert.ok(!('tsx' in (pkg.dependencies ?? {})), 'tsx is a runtime dependency');
  });

  it('runs a dev agent, the hostpath plugin job and a job with a volume, from outside the repository', async () => {
    const hostpathDirs: string[] = [];
    assert.equal(ok(await run(BIN, ['--version'], { cwd: outside, env: env() }), 'berth --version').trim(), (JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string }).version);
    const dataDir = path.join(work, 'agent');
    const agent = spawn(BIN, ['agent', '--dev', '--port', '0', '--data-dir', dataDir], { cwd: outside, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let errOut = '';
    agent.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    agent.stderr.setEncoding('utf8').on('data', (d: string) => (errOut += d));
    const exited = new Promise<number | null>((resolve) => agent.on('exit', (code) => resolve(code)));
    try {
      const [addr, token] = await until('the agent to print BERTH_ADDR and BERTH_TOKEN', () => {
        if (agent.exitCode !== null) throw new Error(`the installed agent exited ${agent.exitCode}:\n${errOut}`);
        const a = /^BERTH_ADDR=(\S+)$/m.exec(out)?.[1];
        const t = /^BERTH_TOKEN=(\S+)$/m.exec(out)?.[1];
        return a && t ? ([a, t] as const) : undefined;
      });
      const cli = async (args: readonly string[]): Promise<string> => ok(await run(BIN, args, { cwd: outside, env: env({ BERTH_ADDR: addr, BERTH_TOKEN: token }) }), `berth ${args.join(' ')}`);
      const examples = path.join(installed, 'examples');

      // The agent's "Try:" lines name what exists in the installed package: job init's file, the package's plugin job.
      const tryJob = /^ {4}Try: .* && berth job init && berth job run (\S+)$/m.exec(out)?.[1];
      const tryPlugin = /^ {4}The CSI hostpath plugin: berth job run (\S+)$/m.exec(out)?.[1];
      assert.equal(tryPlugin, path.join(examples, 'hostpath-plugin.hcl'), out);
      assert.ok(existsSync(tryPlugin), out);
      await cli(['job', 'init']);
      await cli(['job', 'validate', tryJob as string]);

      await cli(['job', 'run', tryPlugin]);
      await until('the hostpath plugin to be healthy', async () => {
        const p = JSON.parse(await cli(['plugin', 'status', 'hostpath', '--json'])) as { ControllersHealthy: number; NodesHealthy: number };
        return p.ControllersHealthy >= 1 && p.NodesHealthy >= 1;
      });
      await cli(['volume', 'create', path.join(examples, 'volume.hcl')]);
      assert.match(await cli(['job', 'run', path.join(examples, 'writer.hcl')]), /complete|running/);
      await until('the writer to complete', async () => {
        // Nomad's `job status -json`: a list of one job's summary, allocations, deployment and evaluations.
        const [j] = JSON.parse(await cli(['job', 'status', 'writer', '--json'])) as Array<{ Allocations: Array<{ ClientStatus: string }> }>;
        if (j!.Allocations.some((a) => a.ClientStatus === 'failed')) throw new Error('the writer failed');
        return j!.Allocations.some((a) => a.ClientStatus === 'complete');
      });
      await cli(['job', 'stop', 'writer']);
      await until('the writer\'s claim to be released', async () => {
        const v = JSON.parse(await cli(['volume', 'status', 'shared-data', '--json'])) as { BerthClaims: unknown[] };
        return v.BerthClaims.length === 0;
      });
      await cli(['volume', 'delete', 'shared-data']);
      // examples/hostpath-plugin.hcl keeps volumes under /var/lib/berth/hostpath/<node ID>;
      // this run's node is new, and its directory now holds no volume.
      const nodes = JSON.parse(await cli(['node', 'status', '--json'])) as Array<{ ID: string }>;
      for (const n of nodes) hostpathDirs.push(path.join('/var/lib/berth/hostpath', n.ID));
    } finally {
      agent.kill('SIGINT');
      assert.equal(await exited, 0, `the installed agent's exit on SIGINT\n${errOut.slice(-4000)}`);
    }
    assert.deepEqual(mountsUnder(dataDir), []);
    for (const dir of hostpathDirs) {
      const volumes = path.join(dir, 'volumes');
      if (!existsSync(volumes) || readdirSync(volumes).length === 0) rmSync(dir, { recursive: true, force: true });
    }
  });
});
