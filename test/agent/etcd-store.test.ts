// `berth agent --server` keeping its state in a real etcd, as a user runs it:
// jobs submitted through the CLI land in etcd; when etcd goes away the CLI
// says the change was not saved (exit 7) and reads warn that they may be
// stale; when it is back everything resumes. Backup and restore with
// `berth operator snapshot`: etcd -> a fresh etcd, and a single server's
// SQLite state -> etcd.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { JobSummary } from '../../src/api/index.js';
import { AgentRun, berth, cleanEnv, ok, type BerthResult } from '../support/agent-run.js';
import { eventually } from '../support/eventually.js';
import { startEtcd, type EtcdCluster } from '../support/etcd.js';

const MGMT = 'etcd-store-mgmt-token-0123456789';

function jobFile(dir: string, id: string): string {
  const file = path.join(dir, `${id}.json`);
  writeFileSync(file, JSON.stringify({ id, type: 'service', groups: [{ name: 'g', tasks: [{ name: 't', driver: 'raw_exec', config: { command: '/bin/sleep', args: ['600'] } }] }] }));
  return file;
}

describe('a server on etcd', () => {
  let dir = '';
  let etcd: EtcdCluster;
  const agents: AgentRun[] = [];
  const clusters: EtcdCluster[] = [];

  const serverConfig = (name: string, extra = ''): string => {
    const file = path.join(dir, `${name}.hcl`);
    writeFileSync(file, `data_dir = "${name}-data"\nports {\n  http = 0\n}\ntokens {\n  management = ["${MGMT}"]\n}\n${extra}`);
    return file;
  };
  const startServer = async (args: string[]): Promise<AgentRun> => {
    const agent = new AgentRun(['--server', ...args]);
    agents.push(agent);
    await agent.start({ needToken: false });
    agent.token = MGMT;
    return agent;
  };
  const jobIds = async (agent: AgentRun): Promise<string[]> => {
    // Nomad's `job status -json`: one JobJson per job, its Summary naming it.
    const out = ok(await agent.cli(['job', 'status', '--json']), 'job status');
    return (JSON.parse(out) as Array<{ Summary: JobSummary }>).map((j) => j.Summary.JobID).sort();
  };
  const cli = (args: string[]): Promise<BerthResult> => berth(args, { env: cleanEnv() });

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'berth-etcd-store-'));
    etcd = await startEtcd();
    clusters.push(etcd);
  });

  after(async () => {
    for (const a of agents) await a.stop('SIGINT').catch(() => undefined);
    for (const c of clusters) await c.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps jobs in etcd, refuses changes clearly while etcd is down, warns that reads may be stale, and resumes', async () => {
    // write_timeout: a change waits 1 s for etcd, not 5, before the server answers STORE_UNAVAILABLE.
    const etcdBlock = `server {\n  store {\n    etcd {\n      endpoints = ["${etcd.endpoints[0]}"]\n      write_timeout = "1s"\n    }\n  }\n}\n`;
    const server = await startServer(['--config', serverConfig('s1', etcdBlock), '--etcd-endpoints', etcd.endpoints.join(',')]);
    ok(await server.cli(['job', 'run', '--detach', jobFile(dir, 'before')]), 'job run before');
    assert.deepEqual(await jobIds(server), ['before']);

    await etcd.members[0]!.kill();
    const refused = await server.cli(['job', 'run', '--detach', '--retry-for', '1s', jobFile(dir, 'during')]);
    assert.equal(refused.code, 7, `exit 7 while etcd is down: ${refused.stderr}`);
    assert.match(refused.stderr, /^error: the server could not save the change: the state store \(etcd\) is unavailable/m);

    const read = await server.cli(['job', 'status']);
    assert.equal(read.code, 0, read.stderr);
    assert.match(read.stdout, /before/);
    assert.match(read.stderr, /^warning: the server cannot reach its state store's quorum \(etcd\); what is shown may be stale$/m);

    await etcd.members[0]!.start();
    await eventually('a job submitted once etcd is back', async () => (await server.cli(['job', 'run', '--detach', jobFile(dir, 'after')])).code === 0);
    const fresh = await eventually('reads without the stale warning', async () => {
      const r = await server.cli(['job', 'status']);
      return r.code === 0 && !/warning/.test(r.stderr) ? r : undefined;
    });
    assert.match(fresh.stdout, /after/);
    assert.deepEqual(await jobIds(server), ['after', 'before'], 'the refused job was not half-written');
    await server.stop('SIGINT');
  });

  it('saves a snapshot of etcd state and restores it into a fresh etcd; a second restore is refused', async () => {
    const file = path.join(dir, 'etcd.snap');
    const saved = ok(await cli(['operator', 'snapshot', 'save', file, '--etcd-endpoints', etcd.endpoints.join(',')]), 'snapshot save');
    assert.match(saved, /^Saved \d+ rows at index \d+ from etcd /);
    assert.equal(statSync(file).mode & 0o777, 0o600, 'the file holds secrets: owner only');

    const fresh = await startEtcd();
    clusters.push(fresh);
    const restored = ok(await cli(['operator', 'snapshot', 'restore', file, '--etcd-endpoints', fresh.endpoints.join(',')]), 'snapshot restore');
    assert.match(restored, /^Restored \d+ rows from .* into etcd /);
    const again = await cli(['operator', 'snapshot', 'restore', file, '--etcd-endpoints', fresh.endpoints.join(',')]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /not empty/);

    const server = await startServer(['--config', serverConfig('s2'), '--etcd-endpoints', fresh.endpoints.join(',')]);
    assert.deepEqual(await jobIds(server), ['after', 'before']);
    await server.stop('SIGINT');
  });

  it("moves a single server's SQLite state into etcd: save with --data-dir, restore with --etcd-endpoints", async () => {
    const sqlite = await startServer(['--config', serverConfig('single')]);
    ok(await sqlite.cli(['job', 'run', '--detach', jobFile(dir, 'moved')]), 'job run on SQLite');
    await sqlite.stop('SIGINT');

    const file = path.join(dir, 'sqlite.snap');
    ok(await cli(['operator', 'snapshot', 'save', file, '--data-dir', path.join(dir, 'single-data')]), 'snapshot save from SQLite');
    const target = await startEtcd();
    clusters.push(target);
    ok(await cli(['operator', 'snapshot', 'restore', file, '--etcd-endpoints', target.endpoints.join(','), '--etcd-prefix', '/moved']), 'restore into etcd');

    const onEtcd = await startServer([
      '--config',
      serverConfig('moved', `server {\n  store {\n    etcd {\n      endpoints = ["${target.endpoints[0]}"]\n      prefix = "/moved"\n    }\n  }\n}\n`),
    ]);
    assert.deepEqual(await jobIds(onEtcd), ['moved']);
    ok(await onEtcd.cli(['job', 'run', '--detach', jobFile(dir, 'next')]), 'the moved server takes new jobs');
    assert.deepEqual(await jobIds(onEtcd), ['moved', 'next']);
  });

  it('refuses a damaged snapshot and names the problem', async () => {
    const file = path.join(dir, 'bad.snap');
    writeFileSync(file, '{"berthSnapshot":1,"index":1,"rows":1}\n{"table":"nodes","key":"a","row":{"id":"a"}}\n{"end":true,"rows":1,"sha256":"00"}\n');
    const r = await cli(['operator', 'snapshot', 'restore', file, '--data-dir', path.join(dir, 'never')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /is not a valid Berth snapshot: its checksum does not match/);
    const usage = await cli(['operator', 'snapshot', 'save', file]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--data-dir <dir> \(SQLite\) or --etcd-endpoints/);
  });
});
