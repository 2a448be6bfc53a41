// A node without the CNI plugins (cni_path names an empty directory): it
// fingerprints no bridge network, a bridge job is not placed on it (the
// placement failure says "missing network", as Nomad's does) instead of
// being placed and failing there, and no network namespace is made.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Api from '../../src/api/index.js';
import { until } from '../support/runtime-cluster.js';
import { startAgent, tempDir, type AgentUnderTest } from './_agent.js';

const JOB = `job "bridged" {
  group "g" {
    network {
      mode = "bridge"
    }
    task "t" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "sleep 600"]
      }
    }
  }
}
`;

const namespaces = (): string[] => execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').filter(Boolean).map((l) => l.split(' ')[0] as string);

describe('a node without the CNI plugins', () => {
  let dir = '';
  let agent: AgentUnderTest | undefined;

  before(async () => {
    dir = await tempDir('bxcni-');
    mkdirSync(path.join(dir, 'no-plugins'));
    writeFileSync(path.join(dir, 'agent.hcl'), `client {\n  cni_path = "${path.join(dir, 'no-plugins')}"\n  cni_config_dir = "${path.join(dir, 'no-networks')}"\n}\n`);
    agent = await startAgent(['--dev', '--data-dir', path.join(dir, 'data'), '--port', '0', '--config', path.join(dir, 'agent.hcl')]).ready(true);
  });
  after(async () => {
    await agent?.stop('SIGINT').catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('takes no bridge allocation: the placement failure says "missing network", and no namespace is made', { timeout: 120_000 }, async () => {
    const a = agent!;
    const [stub] = await until('the node ready', async () => {
      const nodes = await a.get<Api.NodeListStub[]>('/v1/nodes');
      return nodes[0]?.Status === 'ready' ? nodes : undefined;
    });
    const node = await a.get<Api.Node>(`/v1/node/${stub!.ID}`);
    assert.deepEqual(node.NodeResources?.Networks?.map((n) => n.Mode), ['host'], 'no bridge network fingerprinted');
    const before = new Set(namespaces());
    writeFileSync(path.join(dir, 'bridged.hcl'), JOB);
    const run = await a.cli(['job', 'run', '--detach', path.join(dir, 'bridged.hcl')]);
    assert.equal(run.code, 0, run.stderr);
    const failed = await until('the evaluation to report its failed placement', async () => {
      const evals = await a.get<Api.Evaluation[]>('/v1/job/bridged/evaluations');
      return evals.find((e) => e.FailedTGAllocs && Object.keys(e.FailedTGAllocs).length > 0);
    });
    const metric = failed.FailedTGAllocs?.['g'];
    assert.ok(metric, JSON.stringify(failed.FailedTGAllocs));
    assert.match(JSON.stringify(metric.DimensionExhausted ?? {}) + JSON.stringify(metric.ConstraintFiltered ?? {}) + JSON.stringify(metric), /missing network/);
    assert.deepEqual(await a.get<Api.AllocationListStub[]>('/v1/job/bridged/allocations'), [], 'nothing placed to fail');
    const status = await a.cli(['job', 'status', 'bridged']);
    assert.match(status.stdout, /missing network "bridge"/, status.stdout);
    assert.deepEqual(namespaces().filter((n) => !before.has(n)), [], 'no network namespace made');
  });
});
